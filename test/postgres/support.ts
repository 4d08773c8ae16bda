// Two-instance tests (issue 34): skipped with a printed reason without a PostgreSQL cluster
// (SVC_TEST_POSTGRES) or caddy, failed instead under CI=true (scripts/test.sh provides both).
import { describe } from 'bun:test'
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client, sessionCookie, PASSWORD, type Answer } from '../support/client'
import { caddyPath, UPSTREAM_HEADER } from '../support/caddy'
import { TEST_POSTGRES } from '../support/postgres'

const CI = process.env.CI === 'true'

/** `describe`, or `describe.skip` with the reason printed when what it needs is missing (never under CI). */
export function describeOnPostgres(needs: { caddy?: boolean } = {}): typeof describe | typeof describe.skip {
  const missing = [!TEST_POSTGRES && 'SVC_TEST_POSTGRES is not set (no PostgreSQL cluster)', needs.caddy && !caddyPath() && 'caddy is not installed'].filter(
    Boolean,
  ) as string[]
  if (missing.length === 0) return describe
  if (CI) throw new Error(`under CI=true nothing skips: ${missing.join('; ')}`)
  console.log(`skipped: ${missing.join('; ')}`)
  return describe.skip
}

/** The same credentials against another origin (another instance, or the balancer). */
export const at = (client: Client, base: string) => new Client(base, client.credentials)

/** Which instance (host:port) answered through the balancer. */
export const upstreamOf = (answer: Answer) => answer.headers.get(UPSTREAM_HEADER) ?? ''

/** Signs in with a password at `base`; the client of the new session. */
export async function login(base: string, email: string, password = PASSWORD): Promise<Client> {
  const response = await fetch(`${base}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  })
  if (response.status !== 200) throw new Error(`login ${response.status} ${await response.text()}`)
  return new Client(base, { cookie: sessionCookie(response.headers) })
}

/** Resolves once `check` holds, tested each time `subscribe`'s event fires; rejects after `ms`. */
export function whenEvent(subscribe: (fire: () => void) => void, check: () => boolean, ms: number, what: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not within ${ms} ms: ${what}`)), ms)
    const fire = () => {
      if (!check()) return
      clearTimeout(timer)
      resolve()
    }
    subscribe(fire)
    fire()
  })
}

const PG_BIN = '/usr/lib/postgresql/15/bin'

export interface Cluster {
  /** The URL of its `postgres` database (Unix socket). */
  url: string
  /** `pg_ctl stop -m fast`: clients are cut off at once. */
  stop(): Promise<void>
  start(): Promise<void>
  remove(): Promise<void>
}

async function asPostgres(args: string[]): Promise<void> {
  const proc = Bun.spawn(['runuser', '-u', 'postgres', '--', ...args], { stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`${args.join(' ')} failed (${code}): ${out}${err}`)
}

/**
 * A PostgreSQL cluster of the test's own (to stop and start it: the shared one stays up), in a
 * folder owned by the postgres user, listening on a Unix socket only.
 */
export async function ownCluster(): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-vault-pg-'))
  chmodSync(dir, 0o755)
  const data = join(dir, 'data')
  const socket = join(dir, 'socket')
  mkdirSync(socket)
  Bun.spawnSync(['chown', '-R', 'postgres:postgres', dir])
  await asPostgres([`${PG_BIN}/initdb`, '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync'])
  const ctl = (...args: string[]) => asPostgres([`${PG_BIN}/pg_ctl`, '-D', data, '-l', join(dir, 'log'), ...args])
  const start = () => ctl('-o', `-c listen_addresses='' -c unix_socket_directories=${socket} -c fsync=off`, '-w', 'start')
  await start()
  return {
    url: `postgres://postgres@localhost/postgres?host=${socket}`,
    stop: () => ctl('-m', 'fast', '-w', 'stop'),
    start,
    async remove() {
      await ctl('-m', 'immediate', '-w', 'stop').catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
