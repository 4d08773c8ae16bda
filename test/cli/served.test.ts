// The svc command as the vault serves it (GET /cli/svc), downloaded over HTTP and run with Node,
// not Bun: sign-in by device approval in Chromium, then run, export, get, inject and check give
// what the compiled executable gives. Also the offline copy, masking, templates and checks.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { readFallback, saveFallback, selectionKey } from '../../src/cli/svc/fallback'
import { hasChromium, openBrowser } from '../support/browser'
import { signUp, type Client } from '../support/client'
import { startTestServer, tempDir, type TestServer } from '../support/server'
import { buildCli, SVC, svcHome } from './support'

const NODE = Bun.which('node')
if (!NODE && process.env.CI === 'true') throw new Error('CI=true: node (Node.js 20+) is required to run the served CLI')

let server: TestServer
let owner: Client & { email: string }
let servedFile: string
let keyEnv: Record<string, string>

const PROD_KEY = 'sk-prod-0123456789'
const DEV_KEY = 'sk-dev-abcdefghij'
const SENTRY = 'https://abc123@sentry.example/42'

interface Result {
  code: number | null
  signal: string | null
  stdout: string
  stderr: string
}

/** Runs a program to its end with this environment and optional standard input. */
async function runProgram(argv: string[], env: Record<string, string>, cwd?: string): Promise<Result> {
  const proc = Bun.spawn(argv, { env, cwd, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000)
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  await proc.exited
  clearTimeout(timer)
  return { code: proc.exitCode, signal: proc.signalCode === null ? null : String(proc.signalCode), stdout, stderr }
}

/** The served file run by Node. */
const served = (args: string[], env: Record<string, string>, cwd?: string) => runProgram([NODE!, servedFile, ...args], env, cwd)
/** The compiled executable. */
const compiled = (args: string[], env: Record<string, string>, cwd?: string) => runProgram([SVC, ...args], env, cwd)

beforeAll(async () => {
  await buildCli()
  server = await startTestServer({ baseHost: '127.0.0.1' })
  owner = await signUp(server.url)
  const openai = await owner.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' })
  const sentry = await owner.post('/api/categories', { name: 'Sentry', keyType: 'simple', envVarName: 'SENTRY_DSN' })
  await owner.post('/api/entries', { categoryId: openai.body.id, name: 'blog', value: PROD_KEY, environment: 'production' })
  await owner.post('/api/entries', { categoryId: openai.body.id, name: 'blog', value: DEV_KEY, environment: 'development' })
  await owner.post('/api/entries', { categoryId: sentry.body.id, name: 'blog', value: SENTRY, environment: 'production' })
  const key = await owner.keyClient(['export:read', 'entries:read', 'categories:read', 'envs:read', 'envs:reveal'])
  keyEnv = svcHome({ SVC_URL: server.url, SVC_TOKEN: key.credentials.key! }).env

  const response = await fetch(`${server.url}/cli/svc`)
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toStartWith('text/javascript')
  const text = await response.text()
  expect(text.startsWith('#!/usr/bin/env node\n')).toBe(true)
  servedFile = join(tempDir('svc-served-'), 'svc')
  writeFileSync(servedFile, text)
  chmodSync(servedFile, 0o755)
}, 90_000)

afterAll(async () => {
  await server?.stop()
})

describe.skipIf(!NODE)('the served CLI on Node', () => {
  test('it is plain JavaScript for Node: the version, help and usage errors (exit 2) as the compiled one', async () => {
    const version = await runProgram([NODE!, '--version'], {})
    expect(Number(/^v(\d+)/.exec(version.stdout)![1])).toBeGreaterThanOrEqual(20)
    const env = svcHome().env
    for (const args of [['--version'], ['help'], ['import', '--help'], ['frob'], ['export', '--bogus'], ['run'], ['check', '-e', 'prod']]) {
      const [a, b] = [await served(args, env), await compiled(args, env)]
      expect(a).toEqual(b)
    }
    expect((await served(['--version'], env)).stdout).toMatch(/^svc \d+\.\d+\.\d+\n$/)
    // Node 20.0-20.18 read a file without an extension as CommonJS only (no ES module detection).
    const oldNode = await runProgram([NODE!, '--no-experimental-detect-module', servedFile, '--version'], env)
    expect({ code: oldNode.code, stdout: oldNode.stdout }).toEqual({ code: 0, stdout: expect.stringMatching(/^svc \d+\.\d+\.\d+\n$/) })
    expect((await served(['frob'], env)).code).toBe(2)
    expect((await served(['import', '--help'], env)).stdout).toContain('ai:extract')
    // Signed in: the vault's version too.
    expect((await served(['--version'], keyEnv)).stdout).toContain(`vault ${server.url}: svc-vault `)
  })

  test('run, export, get, inject and check answer as the compiled executable does', async () => {
    const dir = tempDir()
    writeFileSync(join(dir, 'config.tpl'), 'key: {{ svc://blog/prod/OPENAI_API_KEY }}\ndsn: {{svc://blog/production/SENTRY_DSN}}\n')
    const cases: string[][] = [
      ['run', '-e', 'production', '--no-mask', '--', NODE!, '-e', 'console.log(process.env.OPENAI_API_KEY, process.env.SENTRY_DSN)'],
      ['run', '-e', 'prod', '--mask', '--', NODE!, '-e', 'console.log("key=" + process.env.OPENAI_API_KEY)'],
      ['export', '-e', 'production', '--format', 'json'],
      ['export', '-e', 'dev'],
      ['get', 'OPENAI_API_KEY', '-e', 'production'],
      ['inject', '-i', join(dir, 'config.tpl')],
      ['check', '-n', 'blog', '-e', 'development,production'],
    ]
    for (const args of cases) {
      const [a, b] = [await served(args, keyEnv), await compiled(args, keyEnv)]
      expect({ args, ...a }).toEqual({ args, ...b })
    }
    expect((await served(cases[0], keyEnv)).stdout).toBe(`${PROD_KEY} ${SENTRY}\n`)
    expect((await served(cases[1], keyEnv)).stdout).toBe('key=***\n')
    expect((await served(cases[4], keyEnv)).stdout).toBe(PROD_KEY)
    expect((await served(cases[5], keyEnv)).stdout).toBe(`key: ${PROD_KEY}\ndsn: ${SENTRY}\n`)
    const check = await served(cases[6], keyEnv)
    expect(check).toMatchObject({ code: 1, stdout: 'SENTRY_DSN: missing in development (in production)\n' })
  })

  test('the second part’s code cache: made once, 0600 in a 0700 folder of TMPDIR; a damaged one is compiled anew; a folder others can write is not used', async () => {
    const tmp = tempDir('svc-tmp-')
    const env = { ...keyEnv, TMPDIR: tmp }
    const args = ['run', '-e', 'production', '--no-mask', '--', 'printenv', 'OPENAI_API_KEY']
    expect(await served(args, env)).toMatchObject({ code: 0, stdout: `${PROD_KEY}\n`, stderr: '' })
    const dir = join(tmp, `svc-vault-code-${process.getuid!()}`)
    expect(statSync(dir).mode & 0o777).toBe(0o700)
    const files = readdirSync(dir)
    expect(files).toHaveLength(1)
    expect(files[0]).toMatch(/^[0-9a-f]{32}-.+\.bin$/)
    const cache = join(dir, files[0])
    expect(statSync(cache).mode & 0o777).toBe(0o600)
    const made = statSync(cache).mtimeMs
    // Used as it is: not written again.
    expect(await served(args, env)).toMatchObject({ code: 0, stdout: `${PROD_KEY}\n`, stderr: '' })
    expect(statSync(cache).mtimeMs).toBe(made)
    // Damaged (V8 refuses it): the text is compiled, the run is the same, and the cache made anew.
    writeFileSync(cache, Buffer.alloc(statSync(cache).size, 7))
    expect(await served(args, env)).toMatchObject({ code: 0, stdout: `${PROD_KEY}\n`, stderr: '' })
    expect(readFileSync(cache).equals(Buffer.alloc(statSync(cache).size, 7))).toBe(false)
    // A folder group or others may write to is not this user's alone: nothing read or written.
    const open = tempDir('svc-tmp-')
    const shared = join(open, `svc-vault-code-${process.getuid!()}`)
    mkdirSync(shared, { mode: 0o777 })
    chmodSync(shared, 0o777)
    expect(await served(args, { ...keyEnv, TMPDIR: open })).toMatchObject({ code: 0, stdout: `${PROD_KEY}\n`, stderr: '' })
    expect(readdirSync(shared)).toEqual([])
    // Bun runs the file as well, without a V8 code cache.
    const bunTmp = tempDir('svc-tmp-')
    expect(await runProgram([process.execPath, servedFile, ...args], { ...keyEnv, TMPDIR: bunTmp })).toMatchObject({ code: 0, stdout: `${PROD_KEY}\n` })
    expect(readdirSync(bunTmp)).toEqual([])
  })

  test('svc run sends its export before loading the rest, once per run, and never for arguments it refuses', async () => {
    const exports = async () =>
      ((await owner.get('/api/audit?limit=500')).body.items as { action: string }[]).filter((event) => event.action === 'export.read').length
    const before = await exports()
    expect((await served(['run', '-e', 'production', '--no-mask', '--', 'true'], keyEnv)).code).toBe(0)
    expect(await exports()).toBe(before + 1)
    const existing = join(tempDir(), 'taken.env')
    writeFileSync(existing, '')
    // Each would be a valid export (-e production) but for one argument.
    for (const args of [
      ['run', '-e', 'production', '--interval', '5', '--', 'true'],
      ['run', '-e', 'production', '-e', 'nowhere', '--', 'true'],
      ['run', '-e', 'production', '--mask', '--no-mask', '--', 'true'],
      ['run', '-e', 'production', '--mount', existing, '--', 'true'],
    ]) {
      const refused = await served(args, keyEnv)
      expect({ args, code: refused.code }).toEqual({ args, code: args[3] === '--mount' ? 1 : 2 })
    }
    expect(await exports()).toBe(before + 1)
  })

  test('a vault on https: the served file loads TLS when the URL asks for it and trusts NODE_EXTRA_CA_CERTS', async () => {
    const dir = tempDir('svc-tls-')
    const [key, cert] = [join(dir, 'key.pem'), join(dir, 'cert.pem')]
    const made = Bun.spawnSync(
      [
        'openssl',
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
      ],
      { stderr: 'pipe' },
    )
    expect(made.exitCode).toBe(0)
    // A TLS front for the vault, as a proxy would be.
    const front = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      tls: { key: Bun.file(key), cert: Bun.file(cert) },
      fetch: (request) => {
        const url = new URL(request.url)
        return fetch(server.url + url.pathname + url.search, { method: request.method, headers: request.headers, body: request.body })
      },
    })
    try {
      const env = { ...keyEnv, SVC_URL: `https://127.0.0.1:${front.port}` }
      const program = ['run', '-e', 'production', '--no-mask', '--', NODE!, '-e', 'console.log(process.env.OPENAI_API_KEY)']
      expect(await served(program, { ...env, NODE_EXTRA_CA_CERTS: cert })).toMatchObject({ code: 0, stdout: `${PROD_KEY}\n` })
      // Without trusting the certificate: refused, and nothing is run from an unverified answer.
      const untrusted = await served([...program.slice(0, 4), '--fallback-max-age', '0', ...program.slice(4)], env)
      expect(untrusted.code).not.toBe(0)
      expect(untrusted.stdout).toBe('')
      expect(untrusted.stderr).toContain('cannot reach the vault')
    } finally {
      front.stop(true)
    }
  })

  describe.skipIf(!hasChromium())('signed in by device approval in Chromium', () => {
    test('svc login with the served file, then the commands use the stored sign-in', async () => {
      const home = svcHome()
      const proc = Bun.spawn([NODE!, servedFile, 'login', server.url], { env: home.env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
      let stderr = ''
      const reading = (async () => {
        const decoder = new TextDecoder()
        for await (const chunk of proc.stderr as ReadableStream<Uint8Array>) stderr += decoder.decode(chunk, { stream: true })
      })()
      const started = Date.now()
      while (!/\/cli\?code=[A-Z]{4}-[A-Z]{4}/.test(stderr)) {
        if (Date.now() - started > 20_000 || proc.exitCode !== null) throw new Error(`no sign-in link: ${stderr}`)
        await Bun.sleep(20)
      }
      const [, link, userCode] = /(http:\/\/\S+\/cli\?code=([A-Z]{4}-[A-Z]{4}))/.exec(stderr)!
      const browser = await openBrowser(server.url)
      try {
        await browser.context.addCookies([{ name: 'svc_session', value: owner.credentials.cookie!, url: server.url }])
        await browser.page.goto(link)
        // The code is typed as the terminal shows it (the link never fills it in).
        await browser.page.getByLabel('Code').fill(userCode)
        await browser.page.getByRole('button', { name: 'Continue' }).click()
        await browser.page.locator('.cli-code').waitFor()
        await browser.page.getByRole('button', { name: 'Approve' }).click()
        await browser.page.getByText('Approved.').waitFor()
      } finally {
        await browser.close()
      }
      await proc.exited
      await reading
      expect(proc.exitCode).toBe(0)
      expect(stderr).toContain(`Signed in to ${server.url} as ${owner.email}`)
      for (const args of [['whoami'], ['get', 'OPENAI_API_KEY', '-e', 'dev'], ['run', '-e', 'production', '--', 'printenv', 'OPENAI_API_KEY']]) {
        const [a, b] = [await served(args, home.env), await compiled(args, home.env)]
        expect(a).toEqual(b)
        expect(a.code).toBe(0)
      }
      expect((await served(['get', 'OPENAI_API_KEY', '-e', 'dev'], home.env)).stdout).toBe(DEV_KEY)
    }, 60_000)
  })
})

describe.skipIf(!NODE)('svc run --mask', () => {
  // Writes the key whole, split over two writes, across a 64 KiB chunk boundary and inside a line.
  const PRINTER = `
    const v = process.env.OPENAI_API_KEY
    process.stdout.write('whole ' + v + '\\n')
    process.stdout.write('split ' + v.slice(0, 5))
    setTimeout(() => {
      process.stdout.write(v.slice(5) + '\\n')
      process.stdout.write('x'.repeat(65536 - 3) + v + '\\n')
      process.stderr.write('err: token=' + v + ' end\\n')
      process.exit(3)
    }, 50)`

  test('every value becomes ***, the exit code passes through; on by default under CI, --no-mask turns it off', async () => {
    for (const [flags, env] of [
      [['--mask'], keyEnv],
      [[], { ...keyEnv, CI: 'true' }],
    ] as const) {
      const result = await served(['run', '-e', 'production', ...flags, '--', NODE!, '-e', PRINTER], env)
      expect(result.code).toBe(3)
      expect(result.stdout).not.toContain(PROD_KEY)
      expect(result.stderr).not.toContain(PROD_KEY)
      expect(result.stdout).toBe(`whole ***\nsplit ***\n${'x'.repeat(65536 - 3)}***\n`)
      expect(result.stderr).toBe('err: token=*** end\n')
    }
    const plain = await served(['run', '-e', 'production', '--no-mask', '--', NODE!, '-e', PRINTER], { ...keyEnv, CI: 'true' })
    expect(plain.stdout).toContain(`whole ${PROD_KEY}\n`)
    const both = await served(['run', '--mask', '--no-mask', '--', 'true'], keyEnv)
    expect(both.code).toBe(2)
  })

  test('a signal still reaches the command, and svc ends by it', async () => {
    const proc = Bun.spawn([NODE!, servedFile, 'run', '-e', 'production', '--mask', '--', NODE!, '-e', 'console.log("ready"); setInterval(() => {}, 1000)'], {
      env: keyEnv,
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
    const first = await reader.read()
    expect(new TextDecoder().decode(first.value)).toBe('ready\n')
    proc.kill('SIGTERM')
    await proc.exited
    expect(proc.signalCode as string | null).toBe('SIGTERM')
  })
})

describe.skipIf(!NODE)('inject, svc:// values and check', () => {
  test('inject writes 0600 atomically; an unknown reference fails naming every one and writes nothing', async () => {
    const dir = tempDir()
    const template = join(dir, 'app.tpl')
    writeFileSync(template, 'A={{ svc://blog/production/OPENAI_API_KEY }}\nB={{ svc://blog/production/NOPE }}\nC={{ svc://shop/dev/OPENAI_API_KEY }}\n')
    const failed = await served(['inject', '-i', template, '-o', join(dir, 'out.env')], keyEnv)
    expect(failed.code).toBe(1)
    expect(failed.stderr).toContain('svc://blog/production/NOPE')
    expect(failed.stderr).toContain('svc://shop/dev/OPENAI_API_KEY')
    expect(failed.stderr).not.toContain(PROD_KEY)
    expect(readdirSync(dir)).toEqual(['app.tpl'])

    writeFileSync(template, 'A={{ svc://blog/production/OPENAI_API_KEY }}\nB={{svc://blog/dev/OPENAI_API_KEY}}\nkeep {{ other }}\n')
    const done = await served(['inject', '-i', template, '-o', join(dir, 'out.env')], keyEnv)
    expect(done.code).toBe(0)
    expect(readFileSync(join(dir, 'out.env'), 'utf8')).toBe(`A=${PROD_KEY}\nB=${DEV_KEY}\nkeep {{ other }}\n`)
    expect(statSync(join(dir, 'out.env')).mode & 0o777).toBe(0o600)
    expect(readdirSync(dir).sort()).toEqual(['app.tpl', 'out.env'])
  })

  test('svc run resolves svc:// values of its own environment; an unknown one runs nothing', async () => {
    const ran = await served(['run', '-e', 'production', '--', 'printenv', 'DB_KEY'], { ...keyEnv, DB_KEY: 'svc://blog/dev/OPENAI_API_KEY' })
    expect(ran).toMatchObject({ code: 0, stdout: `${DEV_KEY}\n` })
    const unknown = await served(['run', '-e', 'production', '--', 'echo', 'ran'], { ...keyEnv, DB_KEY: 'svc://blog/prod/MISSING' })
    expect(unknown).toMatchObject({ code: 1, stdout: '' })
    expect(unknown.stderr).toContain('svc://blog/prod/MISSING')
  })

  test('check: a variable missing from an environment or from a template fails (exit 1); all present passes', async () => {
    const dir = tempDir()
    writeFileSync(join(dir, '.env.example'), 'OPENAI_API_KEY=\nSENTRY_DSN=\nREDIS_URL=\n')
    const against = await served(['check', '-n', 'blog', '-e', 'production', '--against', join(dir, '.env.example')], keyEnv)
    expect(against).toMatchObject({ code: 1, stdout: `REDIS_URL: missing in production (in ${join(dir, '.env.example')})\n` })
    writeFileSync(join(dir, '.env.example'), 'OPENAI_API_KEY=\n')
    const fine = await served(['check', '-n', 'blog', '-e', 'dev,prod', '--against', join(dir, '.env.example')], keyEnv)
    expect(fine.code).toBe(0)
    expect(fine.stderr).toContain('1 variable present in development, production')
    const usage = await served(['check', '-e', 'production'], keyEnv)
    expect(usage.code).toBe(2)
  })
})

describe.skipIf(!NODE)('svc run offline: the encrypted copy of the last good answer', () => {
  let vault: TestServer
  let key: Client
  let env: Record<string, string>
  let home: string

  beforeAll(async () => {
    vault = await startTestServer()
    const user = await signUp(vault.url)
    const category = await user.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' })
    await user.post('/api/entries', { categoryId: category.body.id, name: 'blog', value: PROD_KEY, environment: 'production' })
    key = await user.keyClient(['export:read'])
    const made = svcHome({ SVC_URL: vault.url, SVC_TOKEN: key.credentials.key! })
    env = made.env
    home = made.home
  }, 30_000)

  let stopped = false
  afterAll(async () => {
    if (!stopped) await vault?.stop()
  })

  const cacheFiles = () => {
    const root = join(home, '.cache', 'svc-vault')
    if (!existsSync(root)) return []
    return readdirSync(root).flatMap((dir) => readdirSync(join(root, dir)).map((file) => join(root, dir, file)))
  }

  test('the vault stopped: the program starts with the cached values and a warning; the copy is 0600 and holds no value in clear', async () => {
    const first = await served(['run', '-e', 'production', '--', 'printenv', 'OPENAI_API_KEY'], env)
    expect(first).toMatchObject({ code: 0, stdout: `${PROD_KEY}\n`, stderr: '' })
    const files = cacheFiles()
    expect(files).toHaveLength(1)
    expect(statSync(files[0]).mode & 0o777).toBe(0o600)
    expect(statSync(join(files[0], '..')).mode & 0o777).toBe(0o700)
    const bytes = readFileSync(files[0])
    for (const canary of [
      PROD_KEY,
      Buffer.from(PROD_KEY).toString('base64').slice(0, 12),
      Buffer.from(PROD_KEY).toString('hex').slice(0, 12),
      key.credentials.key!,
    ]) {
      expect(bytes.includes(canary)).toBe(false)
    }

    await vault.stop()
    stopped = true
    const offline = await served(['run', '-e', 'production', '--', 'printenv', 'OPENAI_API_KEY'], env)
    expect(offline.code).toBe(0)
    expect(offline.stdout).toBe(`${PROD_KEY}\n`)
    expect(offline.stderr).toContain(`cannot reach the vault at ${vault.url}`)
    expect(offline.stderr).toContain('offline copy')
    // The compiled executable reads the same copy.
    expect((await compiled(['run', '-e', 'production', '--', 'printenv', 'OPENAI_API_KEY'], env)).stdout).toBe(`${PROD_KEY}\n`)
    // Another selection has no copy; --fallback-max-age 0 uses none.
    expect((await served(['run', '-e', 'development', '--', 'true'], env)).code).toBe(1)
    const off = await served(['run', '-e', 'production', '--fallback-max-age', '0', '--', 'printenv', 'OPENAI_API_KEY'], env)
    expect(off).toMatchObject({ code: 1, stdout: '' })

    // A copy older than the max age (made by the same code, dated 25 hours ago) is refused.
    saveFallback(
      { url: vault.url, key: key.credentials.key! },
      selectionKey({ environment: 'production' }),
      { OPENAI_API_KEY: PROD_KEY },
      Date.now() - 25 * 3600_000,
      env,
    )
    const old = await served(['run', '-e', 'production', '--', 'printenv', 'OPENAI_API_KEY'], env)
    expect(old).toMatchObject({ code: 1, stdout: '' })
    expect(old.stderr).toContain('older than 24 h')
    expect((await served(['run', '-e', 'production', '--fallback-max-age', '26h', '--', 'printenv', 'OPENAI_API_KEY'], env)).stdout).toBe(`${PROD_KEY}\n`)
  }, 60_000)

  test('an answer with the copy’s ETag runs the copy’s values (not rewritten unless a minute old); a changed answer runs its own, and the copy follows', async () => {
    const other = await startTestServer()
    try {
      const user = await signUp(other.url)
      const category = await user.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' })
      const entry = await user.post('/api/entries', { categoryId: category.body.id, name: 'blog', value: PROD_KEY, environment: 'production' })
      const created = await user.post('/api/access-keys', { name: 'ci', scopes: ['export:read'] })
      const made = svcHome({ SVC_URL: other.url, SVC_TOKEN: created.body.key })
      const who = { url: other.url, key: created.body.key as string }
      const selection = selectionKey({ environment: 'production' })
      const args = ['run', '-e', 'production', '--', 'printenv', 'OPENAI_API_KEY']
      expect(await served(args, made.env)).toMatchObject({ code: 0, stdout: `${PROD_KEY}\n` })
      const copy = readFallback(who, selection, made.env)!
      expect(copy.variables).toEqual({ OPENAI_API_KEY: PROD_KEY })
      expect(copy.etag).toMatch(/^"[\w-]+"$/)

      // Confirmed by the ETag: the copy is what runs (one made by the same code with other values
      // shows it), and it is not written again.
      saveFallback(who, selection, { OPENAI_API_KEY: 'from-the-copy' }, copy.savedAt, made.env, copy.etag)
      expect((await served(args, made.env)).stdout).toBe('from-the-copy\n')
      expect(readFallback(who, selection, made.env)!.savedAt).toBe(copy.savedAt)
      // A confirmed copy more than a minute old is dated anew.
      saveFallback(who, selection, copy.variables, Date.now() - 120_000, made.env, copy.etag)
      expect((await served(args, made.env)).stdout).toBe(`${PROD_KEY}\n`)
      expect(readFallback(who, selection, made.env)!.savedAt).toBeGreaterThan(Date.now() - 60_000)
      // A copy without an ETag (as earlier versions wrote it) is never taken for the answer.
      saveFallback(who, selection, { OPENAI_API_KEY: 'from-the-copy' }, Date.now(), made.env, null)
      expect((await served(args, made.env)).stdout).toBe(`${PROD_KEY}\n`)

      // The value changes in the vault: another ETag, the new value runs, and the copy has it.
      expect((await user.put(`/api/entries/${entry.body.id}`, { value: 'sk-prod-rotated-42' })).status).toBe(200)
      expect((await served(args, made.env)).stdout).toBe('sk-prod-rotated-42\n')
      const after = readFallback(who, selection, made.env)!
      expect(after.variables).toEqual({ OPENAI_API_KEY: 'sk-prod-rotated-42' })
      expect(after.etag).not.toBe(copy.etag)

      // What a confirmed copy runs is still decided by this run's flags: --allow-env, --override.
      const hooks = await user.post('/api/categories', { name: 'Node', keyType: 'simple', envVarName: 'NODE_OPTIONS' })
      await user.post('/api/entries', { categoryId: hooks.body.id, name: 'blog', value: '--no-warnings', environment: 'production' })
      const allowed = ['run', '-e', 'production', '--allow-env', 'NODE_OPTIONS', '--', 'printenv', 'NODE_OPTIONS']
      expect(await served(allowed, made.env)).toMatchObject({ code: 0, stdout: '--no-warnings\n' })
      expect(readFallback(who, selection, made.env)!.etag).not.toBe(after.etag)
      const refused = await served(args, made.env)
      expect(refused).toMatchObject({ code: 1, stdout: '' })
      expect(refused.stderr).toContain('--allow-env NODE_OPTIONS')
      const own = { ...made.env, OPENAI_API_KEY: 'mine' }
      const printKey = ['--', 'printenv', 'OPENAI_API_KEY']
      expect((await served(['run', '-e', 'production', '--allow-env', 'NODE_OPTIONS', ...printKey], own)).stdout).toBe('mine\n')
      expect((await served(['run', '-e', 'production', '--allow-env', 'NODE_OPTIONS', '--override', ...printKey], own)).stdout).toBe('sk-prod-rotated-42\n')
    } finally {
      await other.stop()
    }
  }, 60_000)

  test('a key the vault refused (401) drops its copy: after the vault stops, svc run refuses', async () => {
    const other = await startTestServer()
    const user = await signUp(other.url)
    const category = await user.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' })
    await user.post('/api/entries', { categoryId: category.body.id, name: 'blog', value: PROD_KEY, environment: 'production' })
    const created = await user.post('/api/access-keys', { name: 'ci', scopes: ['export:read'] })
    const made = svcHome({ SVC_URL: other.url, SVC_TOKEN: created.body.key })
    try {
      expect((await served(['run', '-e', 'production', '--', 'true'], made.env)).code).toBe(0)
      expect(existsSync(join(made.home, '.cache', 'svc-vault'))).toBe(true)
      expect((await user.delete(`/api/access-keys/${created.body.id}`)).status).toBe(204)
      const refused = await served(['run', '-e', 'production', '--', 'true'], made.env)
      expect(refused.code).toBe(1)
      expect(readdirSync(join(made.home, '.cache', 'svc-vault'))).toEqual([])
    } finally {
      await other.stop()
    }
    const offline = await served(['run', '-e', 'production', '--', 'printenv', 'OPENAI_API_KEY'], made.env)
    expect(offline).toMatchObject({ code: 1, stdout: '' })
    expect(offline.stderr).toContain('cannot reach the vault')
  }, 60_000)
})

describe.skipIf(!hasChromium())('the /cli page', () => {
  test('shows the install line with the vault’s own address', async () => {
    const browser = await openBrowser(server.url)
    try {
      await browser.context.addCookies([{ name: 'svc_session', value: owner.credentials.cookie!, url: server.url }])
      await browser.page.goto(`${server.url}/cli`)
      const line = await browser.page.locator('.cli-install-line').textContent()
      expect(line).toBe(`mkdir -p ~/.local/bin && curl -fsSL ${server.url}/cli/svc -o ~/.local/bin/svc && chmod +x ~/.local/bin/svc`)
    } finally {
      await browser.close()
    }
  }, 30_000)
})
