// The deploy recipes, each checked as far as this machine allows: the systemd unit with
// `systemd-analyze verify` (and its offline security score) and started with the unit's own
// settings; the Caddy and nginx snippets with `caddy adapt` and `nginx -t`, and Caddy run in front
// of the executable; the Dockerfile and compose.yaml by what they say (no container runtime here).
// Under CI=true a missing tool fails (scripts/test.sh installs them); elsewhere its test is skipped.
// compose.postgres.yaml and deploy/Caddyfile.postgres: two instances on PostgreSQL behind Caddy
// (run for real when SVC_TEST_POSTGRES names a cluster).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Subprocess } from 'bun'
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Client, signUp } from '../support/client'
import { freshDatabase, TEST_POSTGRES } from '../support/postgres'
import { unassignedPort } from '../support/ports'
import { removeDir, ROOT, spawnServer, tempDir, TEST_MASTER_KEY } from '../support/server'

const CI = process.env.CI === 'true'
const which = (tool: string) => Bun.which(tool, { PATH: `${process.env.PATH}:/usr/sbin:/sbin` })
/** A test that needs `tool`: skipped without it, except under CI, where it fails. */
const withTool = (tool: string) => (which(tool) || CI ? test : test.skip)
const needTool = (tool: string) => {
  const path = which(tool)
  if (!path) throw new Error(`${tool} is not installed (scripts/test.sh installs it)`)
  return path
}

const UNIT = join(ROOT, 'deploy', 'svc-vault.service')
const dirs: string[] = []
let executable: string

beforeAll(() => {
  const build = Bun.spawnSync(['bun', 'run', 'build:server'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  if (build.exitCode !== 0) throw new Error(`bun run build:server failed: ${build.stderr.toString()}`)
  const folder = tempDir('svc-vault-deploy-')
  dirs.push(folder)
  executable = join(folder, 'svc-vault')
  copyFileSync(join(ROOT, 'dist', 'svc-vault'), executable)
  Bun.spawnSync(['chmod', '755', executable])
}, 60_000)
afterAll(() => dirs.forEach(removeDir))

function scratch(): string {
  const dir = tempDir('svc-vault-deploy-')
  dirs.push(dir)
  return dir
}

/** `caddy adapt` of one of deploy/'s Caddyfiles with `env` set: Caddy's JSON config. */
function adapt(caddy: string, file: string, env: Record<string, string>): any {
  const adapted = Bun.spawnSync([caddy, 'adapt', '--config', join(ROOT, 'deploy', file), '--adapter', 'caddyfile'], {
    env: { ...process.env, ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  expect({ code: adapted.exitCode, error: adapted.exitCode === 0 ? '' : adapted.stderr.toString() }).toEqual({ code: 0, error: '' })
  return JSON.parse(adapted.stdout.toString())
}

/** Caddy run from `dir` with `config` (its admin endpoint off), once `ready` answers 200 through it. */
async function runCaddy(caddy: string, dir: string, config: any, ready: string): Promise<Subprocess> {
  config.admin = { disabled: true }
  writeFileSync(join(dir, 'caddy.json'), JSON.stringify(config))
  const proxy = Bun.spawn([caddy, 'run', '--config', join(dir, 'caddy.json')], {
    env: { ...process.env, HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
    stdout: 'ignore',
    stderr: 'pipe',
  })
  let up = false
  for (let i = 0; i < 100 && !up; i++) {
    up = await fetch(ready).then(
      (r) => r.status === 200,
      () => false,
    )
    if (!up) await Bun.sleep(50)
  }
  if (!up) {
    await stopCaddy(proxy)
    throw new Error(`${ready} did not answer 200 through Caddy`)
  }
  return proxy
}

async function stopCaddy(proxy: Subprocess | undefined): Promise<void> {
  proxy?.kill('SIGTERM')
  await proxy?.exited
}

/** A new user signed up through `origin`, with a category of secrets. */
async function userWithCategory(origin: string): Promise<{ user: Client; categoryId: string }> {
  const user = await signUp(origin)
  const category = await user.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' }, { origin })
  expect(category.status).toBe(201)
  return { user, categoryId: category.body.id }
}

/** The unit file's [Service] settings, each key with every value it was given. */
function unitSettings(): Map<string, string[]> {
  const settings = new Map<string, string[]>()
  let section = ''
  for (const raw of readFileSync(UNIT, 'utf8').split('\n')) {
    const line = raw.trim()
    if (!line || line.startsWith('#')) continue
    const header = /^\[(\w+)\]$/.exec(line)
    if (header) section = header[1]
    else if (section === 'Service') {
      const at = line.indexOf('=')
      const key = line.slice(0, at)
      settings.set(key, [...(settings.get(key) ?? []), line.slice(at + 1)])
    }
  }
  return settings
}

describe('deploy/svc-vault.service', () => {
  test('is hardened as the README says', () => {
    const unit = unitSettings()
    const one = (key: string) => unit.get(key)?.at(-1)
    expect(one('DynamicUser')).toBe('yes')
    expect(one('StateDirectory')).toBe('svc-vault')
    expect(one('ProtectSystem')).toBe('strict')
    expect(one('NoNewPrivileges')).toBe('yes')
    expect(one('PrivateTmp')).toBe('yes')
    expect(one('Restart')).toBe('on-failure')
    expect(one('LoadCredential')).toBe('master-key:/etc/svc-vault/master-key')
    expect(unit.get('Environment')).toContain('SVC_MASTER_KEY_FILE=%d/master-key')
    expect(unit.get('Environment')).toContain('SVC_DATA_DIR=/var/lib/svc-vault')
    // Never the key itself in the unit.
    expect(readFileSync(UNIT, 'utf8')).not.toMatch(/SVC_MASTER_KEY=/)
  })

  withTool('systemd-analyze')('passes `systemd-analyze verify` without a warning, and scores OK in `systemd-analyze security`', () => {
    const analyze = needTool('systemd-analyze')
    const dir = scratch()
    // verify checks that ExecStart exists: the built executable stands in for /usr/local/bin/svc-vault.
    const unit = join(dir, 'svc-vault.service')
    writeFileSync(unit, readFileSync(UNIT, 'utf8').replace(/^ExecStart=\S+/m, `ExecStart=${executable}`))
    const verify = Bun.spawnSync([analyze, 'verify', unit], { stdout: 'pipe', stderr: 'pipe' })
    // verify exits 0 on a misspelt key or a bad value, warning only: any output is a failure.
    expect({ code: verify.exitCode, output: (verify.stdout.toString() + verify.stderr.toString()).trim() }).toEqual({ code: 0, output: '' })
    // Exposure 2.0 or less ("OK"): the threshold is in tenths.
    const security = Bun.spawnSync([analyze, 'security', '--offline=true', '--threshold=20', unit], { stdout: 'pipe', stderr: 'pipe' })
    expect({ code: security.exitCode, tail: security.stdout.toString().trim().split('\n').at(-1) }).toEqual({ code: 0, tail: expect.stringContaining('OK') })
  })

  test("the executable starts with the unit's settings and a credentials folder, and is ready", async () => {
    const dir = scratch()
    const credentials = join(dir, 'credentials')
    const state = join(dir, 'state')
    mkdirSync(credentials)
    writeFileSync(join(credentials, 'master-key'), `${TEST_MASTER_KEY}\n`, { mode: 0o400 })
    const env: Record<string, string> = {}
    for (const value of unitSettings().get('Environment') ?? []) {
      for (const pair of value.split(/\s+/)) {
        const at = pair.indexOf('=')
        env[pair.slice(0, at)] = pair
          .slice(at + 1)
          .replace('%d', credentials)
          .replace('/var/lib/svc-vault', state)
      }
    }
    expect(Object.keys(env).sort()).toEqual(['HOST', 'PORT', 'SVC_DATA_DIR', 'SVC_MASTER_KEY_FILE', 'SVC_TRUST_PROXY'])
    const server = await spawnServer({
      command: [executable],
      cwd: dir,
      dataDir: state,
      env: { ...env, PORT: '0', SVC_MASTER_KEY: undefined, SVC_SIGNUP: 'open' },
    })
    try {
      expect(await (await fetch(`${server.url}/readyz`)).json()).toMatchObject({ status: 'ready' })
      expect(server.output()).not.toContain('generated a master key')
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })
})

describe('reverse proxy snippets', () => {
  withTool('caddy')(
    'deploy/Caddyfile adapts; Caddy run from it in front of the executable serves the vault',
    async () => {
      const caddy = needTool('caddy')
      const dir = scratch()
      const port = unassignedPort()
      // The public origin is Caddy's, as SVC_BASE_URL says.
      const origin = `http://127.0.0.1:${port}`
      const behind = await spawnServer({
        command: [executable],
        cwd: dir,
        dataDir: join(dir, 'data'),
        env: { SVC_SIGNUP: 'open', SVC_TRUST_PROXY: 'loopback', SVC_BASE_URL: origin, SVC_LOG_FORMAT: 'json' },
      })
      let proxy: Subprocess | undefined
      try {
        const config = adapt(caddy, 'Caddyfile', { VAULT_DOMAIN: origin, VAULT_UPSTREAM: new URL(behind.url).host })
        proxy = await runCaddy(caddy, dir, config, `${origin}/healthz`)
        const { user, categoryId } = await userWithCategory(origin)
        const entry = await user.post('/api/entries', { categoryId, name: 'shop', value: 'sk_behind_caddy' }, { origin })
        expect((await user.post(`/api/entries/${entry.body.id}/reveal`, undefined, { origin })).body.value).toBe('sk_behind_caddy')
        // Caddy's request id reaches the vault, which answers with it (JSON logs on, as in production).
        const answer = await new Client(origin).get('/healthz')
        expect(answer.headers.get('x-request-id')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-/)
      } finally {
        await stopCaddy(proxy)
        await behind.stop()
      }
    },
    30_000,
  )

  withTool('nginx')('deploy/nginx.conf passes `nginx -t`', () => {
    const nginx = needTool('nginx')
    const dir = scratch()
    const key = join(dir, 'key.pem')
    const cert = join(dir, 'cert.pem')
    const made = Bun.spawnSync(
      ['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=vault.example.com'],
      { stderr: 'pipe' },
    )
    expect(made.exitCode).toBe(0)
    const site = readFileSync(join(ROOT, 'deploy', 'nginx.conf'), 'utf8')
      .replace('/etc/letsencrypt/live/vault.example.com/fullchain.pem', cert)
      .replace('/etc/letsencrypt/live/vault.example.com/privkey.pem', key)
    writeFileSync(join(dir, 'vault.conf'), site)
    writeFileSync(join(dir, 'nginx.conf'), `error_log stderr;\npid ${dir}/nginx.pid;\nevents {}\nhttp { access_log off; include ${dir}/vault.conf; }\n`)
    const check = Bun.spawnSync([nginx, '-t', '-c', join(dir, 'nginx.conf'), '-p', dir], { stdout: 'pipe', stderr: 'pipe' })
    expect({ code: check.exitCode, output: check.stderr.toString() }).toEqual({ code: 0, output: expect.stringContaining('test is successful') })
    expect(site).toContain('proxy_set_header Host $host;')
    expect(site).toContain('proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;')
    expect(site).toContain('proxy_set_header X-Forwarded-Proto $scheme;')
  })
})

describe('Dockerfile and compose.yaml (no container runtime here: checked by what they say)', () => {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8')
  const instructions = dockerfile
    .split('\n')
    .filter((line) => line.trim() && !line.trim().startsWith('#'))
    .map((line) => line.trim())

  test('builds on the official oven/bun image and runs as its non-root user with a /data volume and a health check', () => {
    const froms = instructions.filter((line) => line.startsWith('FROM '))
    expect(froms.length).toBeGreaterThan(0)
    for (const from of froms) expect(from).toMatch(/^FROM oven\/bun:[\w.-]+( AS \w+)?$/)
    expect(instructions).toContain('USER bun')
    expect(instructions).toContain('VOLUME /data')
    expect(dockerfile).toMatch(/ENV .*SVC_DATA_DIR=\/data/)
    expect(dockerfile).toMatch(/ENV .*HOST=0\.0\.0\.0/)
    expect(instructions.find((line) => line.startsWith('HEALTHCHECK'))).toContain('CMD ["svc-vault", "healthcheck"]')
    expect(instructions.at(-1)).toBe('ENTRYPOINT ["svc-vault"]')
    // The last stage's user is not root.
    expect(instructions.lastIndexOf('USER bun')).toBeGreaterThan(instructions.findLastIndex((line) => line.startsWith('FROM ')))
  })

  test('runs only commands the test suite runs', () => {
    // Each RUN, and the commands the image runs, against where the suite runs it.
    const RUN_BY_TESTS: Record<string, string> = {
      'bun install --frozen-lockfile': '.ci/run (CI installs the same way before the suite)',
      'bun run build:server': 'test/e2e/executable.test.ts and this file',
      'mkdir -p /data && chown bun:bun /data': 'not run: gives the volume to the bun user (said in the Dockerfile)',
    }
    const runs = instructions.filter((line) => line.startsWith('RUN ')).map((line) => line.slice(4))
    for (const run of runs) expect({ run, known: run in RUN_BY_TESTS }).toEqual({ run, known: true })
    expect(readFileSync(join(ROOT, '.ci', 'run'), 'utf8')).toContain('bun install --frozen-lockfile')
    expect(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts['build:server']).toBeDefined()
  })

  test('the HEALTHCHECK command answers 0 against a ready server, 1 when none answers', async () => {
    const dir = scratch()
    const server = await spawnServer({ command: [executable], cwd: dir, env: { HOST: '0.0.0.0' } })
    try {
      const port = new URL(server.url).port
      expect(Bun.spawnSync([executable, 'healthcheck'], { env: { PORT: port, HOST: '0.0.0.0' } }).exitCode).toBe(0)
    } finally {
      await server.stop()
    }
    const port = new URL(server.url).port
    expect(Bun.spawnSync([executable, 'healthcheck'], { env: { PORT: port }, stderr: 'pipe' }).exitCode).toBe(1)
  })

  test('compose.yaml puts Caddy in front, trusts only its address, and hands the master key over as a secret', () => {
    const compose = Bun.YAML.parse(readFileSync(join(ROOT, 'compose.yaml'), 'utf8')) as any
    const vault = compose.services.vault
    const caddy = compose.services.caddy
    expect(vault.build).toBe('.')
    expect(vault.ports).toBeUndefined() // reached through Caddy only
    expect(vault.volumes).toContain('vault-data:/data')
    expect(vault.environment.SVC_MASTER_KEY_FILE).toBe('/run/secrets/master-key')
    expect(vault.secrets).toContain('master-key')
    expect(vault.environment.SVC_TRUST_PROXY).toBe(caddy.networks.proxy.ipv4_address)
    expect(vault.environment.SVC_BASE_URL).toStartWith('https://')
    expect(caddy.image).toMatch(/^caddy:/)
    expect(caddy.volumes).toContain('./deploy/Caddyfile:/etc/caddy/Caddyfile:ro')
    expect(caddy.environment.VAULT_UPSTREAM).toBe('vault:3000')
    expect(caddy.depends_on.vault.condition).toBe('service_healthy')
  })
})

describe('PostgreSQL with two instances behind Caddy (compose.postgres.yaml, deploy/Caddyfile.postgres)', () => {
  /** The reverse_proxy handler in Caddy's JSON config. */
  const proxyOf = (config: any): any => {
    const found: any[] = []
    const walk = (node: any) => {
      if (Array.isArray(node)) node.forEach(walk)
      else if (node && typeof node === 'object') {
        if (node.handler === 'reverse_proxy') found.push(node)
        Object.values(node).forEach(walk)
      }
    }
    walk(config)
    expect(found.length).toBe(1)
    return found[0]
  }

  test('compose.postgres.yaml: PostgreSQL, two alike instances with the same master key and the database URL as secrets, Caddy in front', () => {
    const compose = Bun.YAML.parse(readFileSync(join(ROOT, 'compose.postgres.yaml'), 'utf8')) as any
    const { postgres, caddy } = compose.services
    const instances = ['vault-1', 'vault-2'].map((name) => compose.services[name])
    expect(Object.keys(compose.services).sort()).toEqual(['caddy', 'postgres', 'vault-1', 'vault-2'])
    expect(postgres.image).toMatch(/^postgres:(1[5-9]|[2-9]\d)/)
    expect(postgres.environment.POSTGRES_PASSWORD_FILE).toBe('/run/secrets/postgres-password')
    expect(postgres.healthcheck.test).toContain('pg_isready')
    expect(postgres.volumes).toContain('./deploy/postgres-init.sh:/docker-entrypoint-initdb.d/svc-vault.sh:ro')
    expect(postgres.volumes).toContain('./deploy/postgres-roles.sql:/etc/svc-vault/postgres-roles.sql:ro')
    expect(postgres.ports).toBeUndefined() // on the compose network only
    for (const vault of instances) {
      expect(vault.build).toBe('.')
      expect(vault.ports).toBeUndefined() // reached through Caddy only
      expect(vault.volumes).toBeUndefined() // nothing of a user on an instance's disk: no shared folder
      expect(vault.environment.SVC_MASTER_KEY_FILE).toBe('/run/secrets/master-key')
      expect(vault.environment.SVC_DATABASE_URL_FILE).toBe('/run/secrets/database-url')
      expect(vault.environment.SVC_DATABASE_URL).toBeUndefined() // a credential: from a secret, not the environment
      expect(vault.secrets).toEqual(['master-key', 'database-url'])
      expect(vault.environment.SVC_TRUST_PROXY).toBe(caddy.networks.proxy.ipv4_address)
      expect(vault.environment.SVC_BASE_URL).toStartWith('https://')
      expect(vault.depends_on.postgres.condition).toBe('service_healthy')
    }
    // Alike but for their address.
    expect({ ...instances[0], networks: null }).toEqual({ ...instances[1], networks: null })
    expect(instances[0].networks.proxy.ipv4_address).not.toBe(instances[1].networks.proxy.ipv4_address)
    expect(caddy.volumes).toContain('./deploy/Caddyfile.postgres:/etc/caddy/Caddyfile:ro')
    expect(caddy.environment.VAULT_UPSTREAMS.split(' ')).toEqual(['vault-1:3000', 'vault-2:3000'])
    expect(caddy.depends_on['vault-1'].condition).toBe('service_healthy')
    expect(caddy.depends_on['vault-2'].condition).toBe('service_healthy')
    for (const secret of ['master-key', 'postgres-password', 'vault-db-password', 'database-url'])
      expect(compose.secrets[secret].file).toBe(`./secrets/${secret}`)
    // The setup lines in its header make the database URL with the same password as the role's.
    const text = readFileSync(join(ROOT, 'compose.postgres.yaml'), 'utf8')
    expect(text).toContain('echo "$p" > secrets/vault-db-password')
    expect(text).toContain('echo "postgres://svc_vault:$p@postgres:5432/svc_vault')
    expect(readFileSync(join(ROOT, 'deploy', 'postgres-init.sh'), 'utf8')).toContain('-v role=svc_vault')
  })

  withTool('caddy')('deploy/Caddyfile.postgres adapts: round robin over VAULT_UPSTREAMS, health checks on /readyz', () => {
    const handler = proxyOf(adapt(needTool('caddy'), 'Caddyfile.postgres', { VAULT_DOMAIN: 'vault.example.com', VAULT_UPSTREAMS: 'vault-1:3000 vault-2:3000' }))
    expect(handler.upstreams).toEqual([{ dial: 'vault-1:3000' }, { dial: 'vault-2:3000' }])
    expect(handler.load_balancing.selection_policy.policy).toBe('round_robin')
    expect(handler.health_checks.active).toMatchObject({ uri: '/readyz', expect_status: 200 })
  })

  ;(TEST_POSTGRES || CI ? withTool('caddy') : test.skip)(
    `Caddy run from it in front of two instances on one database spreads requests over both, and keeps answering when one stops${TEST_POSTGRES ? '' : ' (skipped: SVC_TEST_POSTGRES is not set)'}`,
    async () => {
      if (!TEST_POSTGRES) throw new Error('SVC_TEST_POSTGRES is not set: under CI the PostgreSQL tests must run')
      const caddy = needTool('caddy')
      const dir = scratch()
      const port = unassignedPort()
      const origin = `http://127.0.0.1:${port}`
      const database = await freshDatabase()
      const env = { SVC_SIGNUP: 'open', SVC_TRUST_PROXY: 'loopback', SVC_BASE_URL: origin, SVC_DATABASE_URL: database, SVC_LOG_FORMAT: 'json' }
      const instances = [
        await spawnServer({ command: [executable], cwd: dir, dataDir: join(dir, 'one'), env }),
        await spawnServer({ command: [executable], cwd: dir, dataDir: join(dir, 'two'), env }),
      ]
      const config = adapt(caddy, 'Caddyfile.postgres', { VAULT_DOMAIN: origin, VAULT_UPSTREAMS: instances.map((i) => new URL(i.url).host).join(' ') })
      // Checked every 200 ms here, so that the test need not wait 5 s for a stopped instance to be seen.
      proxyOf(config).health_checks.active.interval = 200_000_000
      let proxy: Subprocess | undefined
      try {
        proxy = await runCaddy(caddy, dir, config, `${origin}/readyz`)
        const { user, categoryId } = await userWithCategory(origin)
        const names: string[] = []
        for (let i = 0; i < 8; i++) {
          const entry = await user.post('/api/entries', { categoryId, name: `shop-${i}`, value: `sk_${i}` }, { origin })
          expect(entry.status).toBe(201)
          names.push(entry.body.name)
          // Written through one instance, read through the next: the same answer.
          expect((await user.post(`/api/entries/${entry.body.id}/reveal`, undefined, { origin })).body.value).toBe(`sk_${i}`)
        }
        // Both instances answered some of them (their request lines, JSON logs): round robin.
        for (const instance of instances) expect(instance.output()).toContain('"route":"/api/entries')
        await instances[0].stop()
        for (let i = 0; i < 6; i++) {
          const list = await user.get('/api/entries', { origin })
          expect(list.status).toBe(200)
          expect(list.body.map((e: { name: string }) => e.name).sort()).toEqual(names.sort())
        }
      } finally {
        await stopCaddy(proxy)
        for (const instance of instances) await instance.stop()
      }
    },
    60_000,
  )
})
