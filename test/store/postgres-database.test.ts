// src/store/postgres/database.ts (issue 34): only a database that cannot be reached is a 503
// STORE_UNAVAILABLE (and marks the instance's database away); a bug of ours or a bad query passes
// unchanged (a 500 like any other), the database still up. And the queries of one request wait
// one bound together: a second query after a slow first does not start a fresh one.
import { afterAll, expect, test } from 'bun:test'
import { beginRequest, Database, isConnectionFailure, QUERY_TIMEOUT_MS } from '../../src/store/postgres/database'
import { StoreUnavailableError } from '../../src/store/errors'
import { signUp } from '../support/client'
import { freshDatabase, missingPostgres } from '../support/postgres'
import { describeNeeding } from '../support/requirements'
import { removeDir, startTestServer } from '../support/server'

const databases: Database[] = []
afterAll(async () => {
  for (const db of databases) await db.close()
})

async function database(url?: string): Promise<Database> {
  const db = new Database(url ?? (await freshDatabase()))
  databases.push(db)
  return db
}

/** What `run` rejected with. */
async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection')
}

test('connection failures are told from everything else, by SQLSTATE and by the client code', () => {
  for (const errno of ['08006', '08001', '08P01', '53300', '53100', '57P01', '57P02', '57P03', '28P01', '28000'])
    expect({ errno, unavailable: isConnectionFailure({ errno, code: 'ERR_POSTGRES_SERVER_ERROR' }) }).toEqual({ errno, unavailable: true })
  for (const errno of ['42601', '42P01', '23505', '22012', '40001', '57P04', '57014'])
    expect({ errno, unavailable: isConnectionFailure({ errno, code: 'ERR_POSTGRES_SERVER_ERROR' }) }).toEqual({ errno, unavailable: false })
  for (const code of [
    'ERR_POSTGRES_CONNECTION_CLOSED',
    'ERR_POSTGRES_CONNECTION_REFUSED',
    'ERR_POSTGRES_CONNECTION_FAILED',
    'ERR_POSTGRES_CONNECTION_TIMEOUT',
    'ECONNRESET',
  ])
    expect({ code, unavailable: isConnectionFailure({ code }) }).toEqual({ code, unavailable: true })
  for (const error of [
    new TypeError("Cannot read properties of undefined (reading 'x')"),
    new RangeError('bad'),
    { code: 'ERR_POSTGRES_SYNTAX_ERROR' },
    null,
    'text',
  ])
    expect(isConnectionFailure(error)).toBe(false)
  expect(isConnectionFailure(new StoreUnavailableError('timed out'))).toBe(true)
})

describeNeeding(missingPostgres)('Database.run on PostgreSQL', () => {
  test('a bug inside run (a TypeError) passes unchanged; the database stays up', async () => {
    const db = await database()
    const bug = new TypeError("Cannot read properties of undefined (reading 'version')")
    expect(
      await failure(
        db.run(async (sql) => {
          await sql`SELECT 1`
          throw bug
        }),
      ),
    ).toBe(bug)
    expect(await failure(db.run(() => Promise.reject(bug)))).toBe(bug)
    expect({ reachable: db.reachable, failures: db.stats.failures }).toEqual({ reachable: true, failures: 0 })
  })

  test('a syntax error (42601) and a missing table (42P01) pass unchanged; a unique violation too', async () => {
    const db = await database()
    const syntax = await failure(db.run((sql) => sql`SELEC 1`))
    expect(syntax).not.toBeInstanceOf(StoreUnavailableError)
    expect((syntax as { errno?: string }).errno).toBe('42601')
    const missing = await failure(db.run((sql) => sql`SELECT * FROM svc_no_such_table`))
    expect((missing as { errno?: string }).errno).toBe('42P01')
    await db.run((sql) => sql`CREATE TABLE t (id int PRIMARY KEY)`)
    await db.run((sql) => sql`INSERT INTO t VALUES (1)`)
    expect(((await failure(db.run((sql) => sql`INSERT INTO t VALUES (1)`))) as { errno?: string }).errno).toBe('23505')
    expect({ reachable: db.reachable, failures: db.stats.failures }).toEqual({ reachable: true, failures: 0 })
  })

  test('the server ending the connection (57P01) and a database that cannot be reached are 503s and mark it away', async () => {
    const db = await database()
    expect(await failure(db.run((sql) => sql`SELECT pg_terminate_backend(pg_backend_pid())`))).toBeInstanceOf(StoreUnavailableError)
    expect(db.reachable).toBe(false)
    // The pool connects again by itself: the next query answers, and the database is up again.
    expect(await db.run((sql) => sql`SELECT 1 AS one`)).toEqual([{ one: 1 }])
    expect(db.reachable).toBe(true)

    const gone = await database('postgres://postgres@localhost/postgres?host=/nonexistent/svc-vault-socket')
    const error = await failure(gone.run((sql) => sql`SELECT 1`))
    expect(error).toBeInstanceOf(StoreUnavailableError)
    expect(String((error as Error).message)).not.toContain('postgres://')
    expect({ reachable: gone.reachable, failures: gone.stats.failures }).toEqual({ reachable: false, failures: 1 })
  })

  test('within a request, a query that found the database away makes the later ones fail at once; slow answers are not charged', async () => {
    const db = await database()
    const sleep = (share: number) => (sql: Parameters<Parameters<Database['run']>[0]>[0]) => sql`SELECT pg_sleep(${(QUERY_TIMEOUT_MS * share) / 1000})`
    // A busy database is not an absent one: slow queries that answer, together past the bound, all answer.
    const busy = beginRequest()
    const started = performance.now()
    await db.run(sleep(0.6))
    await db.run(sleep(0.6))
    expect(performance.now() - started).toBeGreaterThan(QUERY_TIMEOUT_MS)
    busy()
    // One past the bound fails at the bound; the request's next query fails at once, not a bound later.
    const away = beginRequest()
    const timed = performance.now()
    expect(await failure(db.run(sleep(1.5)))).toBeInstanceOf(StoreUnavailableError)
    expect(performance.now() - timed).toBeLessThan(QUERY_TIMEOUT_MS + 150)
    const after = performance.now()
    expect(await failure(db.run((sql) => sql`SELECT 1`))).toBeInstanceOf(StoreUnavailableError)
    expect(performance.now() - after).toBeLessThan(50)
    // Once the request answered, what it left running queries as background work does.
    away()
    expect(await db.run((sql) => sql`SELECT 1 AS one`)).toEqual([{ one: 1 }])
    // Work with a bound of its own (a snapshot) has that bound, in a request or not.
    const again = beginRequest()
    await db.run(sleep(1.2), { timeoutMs: 10_000 })
    again()
  })
})

describeNeeding(missingPostgres)('a bug inside a query over HTTP', () => {
  test("a bug answers 500 INTERNAL_ERROR, not 503, and /readyz stays 200; after a query past the bound, the request's next fails at once", async () => {
    const server = await startTestServer({ env: { SVC_DATABASE_URL: await freshDatabase() } })
    try {
      const user = await signUp(server.url)
      const accounts = server.deps.accounts as unknown as { fresh: (request: Request) => Promise<void> }
      const fresh = accounts.fresh
      const db = (server.deps.store as unknown as { db: Database }).db
      accounts.fresh = () =>
        db.run(async () => {
          throw new TypeError("Cannot read properties of undefined (reading 'sessions')")
        })
      try {
        const answer = await user.get('/api/auth/me')
        expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 500, code: 'INTERNAL_ERROR' })
        expect((await fetch(`${server.url}/readyz`)).status).toBe(200)
        expect(db.reachable).toBe(true)
      } finally {
        accounts.fresh = fresh
      }
      expect((await user.get('/api/auth/me')).status).toBe(200)

      // The app gives each request its state: after a query past the bound, the request's next
      // query fails at once: one 503 within a second, not after two bounds.
      const slow = () => db.run((sql) => sql`SELECT pg_sleep(${(QUERY_TIMEOUT_MS * 1.2) / 1000})`)
      let second = 0
      accounts.fresh = async () => {
        await slow().catch(() => {})
        const at = performance.now()
        await db.run((sql) => sql`SELECT 1`).finally(() => (second = performance.now() - at))
      }
      try {
        const started = performance.now()
        const answer = await user.get('/api/auth/me')
        expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 503, code: 'STORE_UNAVAILABLE' })
        expect(performance.now() - started).toBeLessThan(1000)
        expect(second).toBeLessThan(50)
      } finally {
        accounts.fresh = fresh
      }
      // The next request starts afresh.
      expect((await user.get('/api/auth/me')).status).toBe(200)
    } finally {
      await server.stop()
      removeDir(server.dataDir)
    }
  })
})
