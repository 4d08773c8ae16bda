// PostgreSQL for `bun run bench --store postgres`: the cluster SVC_TEST_POSTGRES names, or a
// throwaway one started here (Debian's postgresql package: initdb and pg_ctl, run as the
// `postgres` user when we are root, listening on a Unix socket only) and removed at the end.
import { SQL } from 'bun'
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface BenchCluster {
  /** The cluster's `postgres` database. */
  url: string
  /** Where it came from, for the report. */
  source: string
  /** A new empty database; its URL. Dropped by close(). */
  createDatabase(name: string): Promise<string>
  /** Runs one statement on the cluster's `postgres` database (settings for the report). */
  setting(name: string): Promise<string>
  /** Writes back what the seed left in the cluster's buffers (a checkpoint), before measuring. */
  checkpoint(): Promise<void>
  close(): Promise<void>
}

function postgresBin(tool: string): string {
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^\d+$/.test(v) && Number(v) >= 15)
        .sort((a, b) => Number(b) - Number(a))
    : []
  for (const version of versions) if (existsSync(join(root, version, 'bin', tool))) return join(root, version, 'bin', tool)
  const found = Bun.which(tool)
  if (!found) throw new Error(`${tool} not found: install PostgreSQL 15+ (apt-get install postgresql) or set SVC_TEST_POSTGRES`)
  return found
}

function run(command: string[], asPostgres: boolean): void {
  const full = asPostgres ? ['runuser', '-u', 'postgres', '--', ...command] : command
  const done = Bun.spawnSync(full, { stdout: 'pipe', stderr: 'pipe' })
  if (done.exitCode !== 0) throw new Error(`${command.join(' ')} failed: ${done.stderr.toString()}${done.stdout.toString()}`)
}

function withDatabase(url: string, name: string): string {
  const parsed = new URL(url)
  parsed.pathname = `/${name}`
  return parsed.toString()
}

export async function openBenchCluster(given = process.env.SVC_TEST_POSTGRES?.trim() || undefined): Promise<BenchCluster> {
  let stop = async () => {}
  let url: string
  let source: string
  if (given) {
    url = given
    source = 'SVC_TEST_POSTGRES'
  } else {
    // initdb refuses to run as root: the cluster belongs to `postgres`.
    const root = process.getuid?.() === 0
    const dir = mkdtempSync(join(tmpdir(), 'svc-vault-bench-pg-'))
    const data = join(dir, 'data')
    const socket = join(dir, 'socket')
    mkdirSync(socket)
    if (root) {
      const uid = Number(Bun.spawnSync(['id', '-u', 'postgres']).stdout.toString().trim())
      const gid = Number(Bun.spawnSync(['id', '-g', 'postgres']).stdout.toString().trim())
      if (!Number.isInteger(uid)) throw new Error('running as root needs the `postgres` user (apt-get install postgresql)')
      chownSync(dir, uid, gid)
      chownSync(socket, uid, gid)
    }
    run([postgresBin('initdb'), '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync'], root)
    // Durable like a real server (fsync on, the default): a write answers once its commit is on disk.
    run([postgresBin('pg_ctl'), '-D', data, '-l', join(dir, 'log'), '-o', `-c listen_addresses='' -c unix_socket_directories=${socket}`, '-w', 'start'], root)
    url = `postgres://postgres@localhost/postgres?host=${socket}`
    source = 'a throwaway cluster (initdb, pg_ctl)'
    stop = async () => {
      try {
        run([postgresBin('pg_ctl'), '-D', data, '-m', 'fast', '-w', 'stop'], root)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }
  }
  const admin = new SQL(url, { max: 1 })
  const made: string[] = []
  return {
    url,
    source,
    async createDatabase(name) {
      const database = `svc_bench_${process.pid}_${name}`
      await admin.unsafe(`DROP DATABASE IF EXISTS ${database}`)
      await admin.unsafe(`CREATE DATABASE ${database}`)
      made.push(database)
      return withDatabase(url, database)
    },
    async setting(name) {
      const [row] = await admin.unsafe(`SELECT current_setting('${name.replace(/[^a-z_]/g, '')}') AS value`)
      return String(row.value)
    },
    async checkpoint() {
      await admin.unsafe('CHECKPOINT')
    },
    async close() {
      try {
        for (const database of made) await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {})
        await admin.close()
      } finally {
        await stop()
      }
    },
  }
}
