// PostgreSQL for tests: the throwaway cluster scripts/test.sh starts (SVC_TEST_POSTGRES: a URL to
// its `postgres` database over a Unix socket). With SVC_TEST_STORE=postgres too, every test
// server runs on the database store: one database per data folder, so a server restarted on the
// same folder finds the same database (and no two tests share one).
import { SQL } from 'bun'
import { createHash } from 'node:crypto'

/** The cluster's URL, when one runs. */
export const TEST_POSTGRES = process.env.SVC_TEST_POSTGRES?.trim() || undefined
/** Whether test servers run on PostgreSQL (the suite's second pass). */
export const ON_POSTGRES = process.env.SVC_TEST_STORE === 'postgres'

if (ON_POSTGRES && !TEST_POSTGRES) throw new Error('SVC_TEST_STORE=postgres needs SVC_TEST_POSTGRES (scripts/test.sh starts the cluster)')

let admin: InstanceType<typeof SQL> | null = null
const made = new Set<string>()

function withDatabase(url: string, name: string): string {
  const parsed = new URL(url)
  parsed.pathname = `/${name}`
  return parsed.toString()
}

/** A database of its own for `key` (a data folder's path), created on first use; its URL. */
export async function databaseFor(key: string): Promise<string> {
  if (!TEST_POSTGRES) throw new Error('no PostgreSQL cluster for the tests (SVC_TEST_POSTGRES is not set)')
  const name = `svc_t_${createHash('sha256').update(key).digest('hex').slice(0, 24)}`
  if (!made.has(name)) {
    admin ??= new SQL(TEST_POSTGRES, { max: 2 })
    const [found] = await admin`SELECT count(*)::int AS n FROM pg_database WHERE datname = ${name}`
    if (found.n === 0)
      await admin.unsafe(`CREATE DATABASE ${name}`).catch((error: { errno?: string }) => {
        // Two servers on one folder starting at once: the other made it.
        if (error?.errno !== '42P04') throw error
      })
    made.add(name)
  }
  return withDatabase(TEST_POSTGRES, name)
}

/** A fresh, empty database (a test of its own: two instances, a migration's target). */
export async function freshDatabase(): Promise<string> {
  return databaseFor(`fresh-${crypto.randomUUID()}`)
}

/** The environment a test server gets on the database store ({} on the file store). */
export async function storeEnv(dataDir: string, env: Record<string, string | undefined> = {}): Promise<Record<string, string>> {
  if (!ON_POSTGRES || env.SVC_DATABASE_URL !== undefined || env.SVC_DATABASE_URL_FILE !== undefined) return {}
  return { SVC_DATABASE_URL: await databaseFor(dataDir) }
}

/**
 * Drops the databases this run made, on a cluster of one's own (they would pile up run after
 * run). scripts/test.sh's throwaway cluster goes whole (SVC_TEST_POSTGRES_THROWAWAY): nothing to do.
 * A server a test left running loses its connections (FORCE).
 */
export async function dropMadeDatabases(): Promise<void> {
  if (!admin || made.size === 0 || process.env.SVC_TEST_POSTGRES_THROWAWAY === '1') return
  const names = [...made]
  made.clear()
  // Each DROP DATABASE waits for a checkpoint (some 75 ms): a few at a time.
  const next = () => names.pop()
  const drop = async (sql: NonNullable<typeof admin>) => {
    for (let name = next(); name; name = next()) await sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  }
  await Promise.all([drop(admin), drop(admin)])
  await admin.close()
  admin = null
}

/** Why a test of the database store cannot run here, or null (for describeNeeding/testNeeding). */
export const missingPostgres: string | null = TEST_POSTGRES ? null : 'no PostgreSQL cluster: SVC_TEST_POSTGRES is not set (scripts/test.sh starts one)'
/** A new database copied from `url`'s (nothing may be connected to it meanwhile); its URL. */
export async function copyDatabase(url: string): Promise<string> {
  if (!TEST_POSTGRES) throw new Error('no PostgreSQL cluster for the tests (SVC_TEST_POSTGRES is not set)')
  admin ??= new SQL(TEST_POSTGRES, { max: 2 })
  const from = new URL(url).pathname.slice(1)
  const name = `svc_t_${crypto.randomUUID().replaceAll('-', '').slice(0, 24)}`
  if (!/^svc_t_[0-9a-f]+$/.test(from)) throw new Error(`not a test database: ${from}`)
  await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE ${from}`)
  made.add(name)
  return withDatabase(TEST_POSTGRES, name)
}
