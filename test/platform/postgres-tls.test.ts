// TLS to PostgreSQL, as docs/postgres.md says: `sslmode=require` encrypts, `verify-full` with the
// CA (`sslrootcert=` in the URL) also checks the server's certificate and name, and
// `verify-full` against an unknown CA refuses to start. A cluster of its own with ssl=on, a
// certificate from a CA made here with openssl, and TCP connections refused unless they use TLS.
// Needs Debian's postgresql (initdb, pg_ctl) and openssl; skipped without them, except under CI.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { openVault } from '../../src/app'
import { signUp } from '../support/client'
import { unassignedPort } from '../support/ports'
import { removeDir, startTestServer, tempDir, TEST_MASTER_KEY } from '../support/server'

const CI = process.env.CI === 'true'
const BIN = '/usr/lib/postgresql/15/bin'
const root = process.getuid?.() === 0
const available = existsSync(join(BIN, 'initdb')) && Bun.which('openssl') !== null && (!root || Bun.which('runuser') !== null)
if (CI && !available) throw new Error('PostgreSQL 15 (initdb, pg_ctl) and openssl are needed under CI (scripts/test.sh installs them)')
const suite = available ? describe : describe.skip
const SKIPPED = available ? '' : ' (skipped: initdb, pg_ctl or openssl missing)'

let dir: string
let port: number
let stopCluster = () => {}

function run(command: string[], asPostgres = false): void {
  const done = Bun.spawnSync(asPostgres && root ? ['runuser', '-u', 'postgres', '--', ...command] : command, { stdout: 'pipe', stderr: 'pipe' })
  if (done.exitCode !== 0) throw new Error(`${command.join(' ')}: ${done.stderr.toString()}`)
}

beforeAll(() => {
  if (!available) return
  dir = tempDir('svc-vault-pg-tls-')
  const ssl = (...args: string[]) => run(['openssl', ...args])
  ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    join(dir, 'ca.key'),
    '-out',
    join(dir, 'ca.crt'),
    '-days',
    '1',
    '-subj',
    '/CN=svc-vault test CA',
  )
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'server.key'), '-out', join(dir, 'server.csr'), '-subj', '/CN=localhost')
  writeFileSync(join(dir, 'ext'), 'subjectAltName=DNS:localhost\n')
  ssl(
    'x509',
    '-req',
    '-in',
    join(dir, 'server.csr'),
    '-CA',
    join(dir, 'ca.crt'),
    '-CAkey',
    join(dir, 'ca.key'),
    '-CAcreateserial',
    '-out',
    join(dir, 'server.crt'),
    '-days',
    '1',
    '-extfile',
    join(dir, 'ext'),
  )
  mkdirSync(join(dir, 'socket'))
  if (root) {
    const id = (flag: string) => Number(Bun.spawnSync(['id', flag, 'postgres']).stdout.toString().trim())
    for (const path of [dir, join(dir, 'socket'), join(dir, 'server.key'), join(dir, 'server.crt')]) chownSync(path, id('-u'), id('-g'))
  }
  run(['chmod', '600', join(dir, 'server.key')])
  run([join(BIN, 'initdb'), '-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync'], true)
  // Over TCP, only TLS: a connection without it is turned away.
  writeFileSync(join(dir, 'data', 'pg_hba.conf'), 'local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 reject\n')
  if (root) run(['chown', 'postgres', join(dir, 'data', 'pg_hba.conf')])
  // A TCP port of its own (PostgreSQL cannot take port 0 and say which it got); another one should
  // that be taken (the run's two passes listen on many at once).
  for (let attempt = 1; ; attempt++) {
    port = unassignedPort()
    const log = join(dir, `log-${attempt}`)
    const options = `-c listen_addresses=127.0.0.1 -p ${port} -c unix_socket_directories=${join(dir, 'socket')} -c ssl=on -c ssl_cert_file=${join(dir, 'server.crt')} -c ssl_key_file=${join(dir, 'server.key')}`
    try {
      run([join(BIN, 'pg_ctl'), '-D', join(dir, 'data'), '-l', log, '-o', options, '-w', 'start'], true)
      break
    } catch (error) {
      if (attempt === 5 || !(existsSync(log) && readFileSync(log, 'utf8').includes('Address already in use'))) throw error
    }
  }
  stopCluster = () => run([join(BIN, 'pg_ctl'), '-D', join(dir, 'data'), '-m', 'immediate', '-w', 'stop'], true)
}, 60_000)
afterAll(() => {
  if (!available) return
  try {
    stopCluster()
  } finally {
    removeDir(dir)
  }
})

/** How many of the server's connections to the cluster use TLS, and how many do not. */
async function connections(): Promise<{ tls: number; plain: number }> {
  const admin = new SQL(`postgres://postgres@localhost/postgres?host=${join(dir, 'socket')}&port=${port}`, { max: 1 })
  try {
    const [row] = await admin`SELECT count(*) FILTER (WHERE s.ssl)::int AS tls, count(*) FILTER (WHERE NOT s.ssl)::int AS plain
      FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.datname = 'postgres' AND a.client_addr IS NOT NULL`
    return { tls: row.tls, plain: row.plain }
  } finally {
    await admin.close()
  }
}

suite(`TLS to PostgreSQL${SKIPPED}`, () => {
  for (const [mode, query] of [
    ['sslmode=require', 'sslmode=require'],
    ['sslmode=verify-full with the CA in sslrootcert', `sslmode=verify-full&sslrootcert=${'CA'}`],
  ] as const) {
    test(`the server works over ${mode}, every connection encrypted`, async () => {
      const url = `postgres://postgres@localhost:${port}/postgres?${query.replace('CA', join(dir, 'ca.crt'))}`
      const server = await startTestServer({ env: { SVC_DATABASE_URL: url } })
      try {
        const user = await signUp(server.url)
        expect((await user.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })).status).toBe(201)
        const seen = await connections()
        expect(seen.tls).toBeGreaterThan(0)
        expect(seen.plain).toBe(0)
      } finally {
        await server.stop()
        removeDir(server.dataDir)
      }
    })
  }

  test('without sslmode, Bun does not use TLS: a server that asks for it turns the vault away at start', async () => {
    const dataDir = tempDir()
    try {
      const config = loadConfig({ SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: `postgres://postgres@localhost:${port}/postgres` })
      const error = await openVault(config, () => {}).then(
        () => null,
        (e: Error) => e,
      )
      expect(error?.message).toMatch(/unavailable/)
      expect(error?.message).not.toContain('postgres://postgres@')
    } finally {
      removeDir(dataDir)
    }
  })

  test('sslmode=verify-full against a certificate of an unknown CA refuses to start', async () => {
    const dataDir = tempDir()
    try {
      const config = loadConfig({
        SVC_MASTER_KEY: TEST_MASTER_KEY,
        SVC_DATA_DIR: dataDir,
        SVC_DATABASE_URL: `postgres://postgres@localhost:${port}/postgres?sslmode=verify-full`,
      })
      const error = await openVault(config, () => {}).then(
        () => null,
        (e: Error) => e,
      )
      expect(error?.message).toMatch(/certificate/)
    } finally {
      removeDir(dataDir)
    }
  })
})
