// A PostgreSQL cluster of its own (initdb, pg_ctl as the postgres user; we run as root), on a
// Unix socket only: for a test that stops and starts the database (the shared cluster must stay
// up), and for `bun run mutants` when no cluster runs (SVC_TEST_POSTGRES unset).
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** Debian's postgresql package (15 on bookworm). */
const PG_BIN = '/usr/lib/postgresql/15/bin'

/** Why a cluster of its own cannot start here, or null. */
export function clusterMissing(): string | null {
  if (!existsSync(`${PG_BIN}/initdb`)) return `${PG_BIN}/initdb is not installed (Debian's postgresql package)`
  if (process.getuid?.() !== 0) return 'a cluster of its own needs root (initdb runs as the postgres user)'
  return null
}

export interface Cluster {
  /** The URL of its `postgres` database (Unix socket). */
  url: string
  /** `pg_ctl stop -m fast`: clients are cut off at once. */
  stop(): Promise<void>
  start(): Promise<void>
  /** SIGSTOP to every process of the cluster: a cut network (nothing answers, nothing refuses). */
  pause(): void
  /** SIGCONT: the network is back. */
  resume(): void
  remove(): Promise<void>
}

/** The postmaster and its children (backends, background workers). */
function clusterProcesses(data: string): number[] {
  const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0])
  const children = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        // The parent id is the second field after the command's closing parenthesis.
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster
      } catch {
        return false
      }
    })
    .map(Number)
  return [postmaster, ...children]
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
  let paused: number[] = []
  return {
    url: `postgres://postgres@localhost/postgres?host=${socket}`,
    stop: () => ctl('-m', 'fast', '-w', 'stop'),
    start,
    pause() {
      paused = clusterProcesses(data)
      for (const pid of paused) process.kill(pid, 'SIGSTOP')
    },
    resume() {
      for (const pid of paused) process.kill(pid, 'SIGCONT')
      paused = []
    },
    async remove() {
      for (const pid of paused) process.kill(pid, 'SIGCONT')
      await ctl('-m', 'immediate', '-w', 'stop').catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
