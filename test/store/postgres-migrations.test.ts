// The schema on PostgreSQL (issue 34): numbered migrations applied at start under an advisory
// lock, so that instances starting together on an empty database apply each once; and a database
// whose schema is newer than the server knows is refused, the server not starting. And the line a
// server logs at start names its database, never the URL's password.
import { afterAll, expect, test } from 'bun:test'
import { ACCOUNTS_ID, PgStore } from '../../src/store/postgres/store'
import { Database, QUERY_TIMEOUT_MS } from '../../src/store/postgres/database'
import { migrate, SCHEMA_VERSION, SchemaTooNewError } from '../../src/store/postgres/migrations'
import { newAccounts } from '../../src/store/store'
import { freshDatabase, missingPostgres } from '../support/postgres'
import { describeNeeding } from '../support/requirements'
import { removeDir, ROOT, tempDir, TEST_MASTER_KEY } from '../support/server'

const dirs: string[] = []
afterAll(() => dirs.forEach(removeDir))

async function rows<T>(url: string, query: (sql: Database['sql']) => Promise<T>): Promise<T> {
  const db = new Database(url, { max: 1 })
  try {
    return await db.run(query)
  } finally {
    await db.close()
  }
}

/** The server from the sources on a database (a data folder of its own that it must not use); its output piped. */
function startServer(url: string) {
  const dataDir = tempDir('svc-vault-schema-')
  dirs.push(dataDir)
  const env = {
    PATH: process.env.PATH!,
    HOME: process.env.HOME ?? '/tmp',
    PORT: '0',
    SVC_DATA_DIR: dataDir,
    SVC_DATABASE_URL: url,
    SVC_MASTER_KEY: TEST_MASTER_KEY,
  }
  return { server: Bun.spawn(['bun', 'src/index.ts'], { cwd: ROOT, env, stdout: 'pipe', stderr: 'pipe' }), dataDir }
}

describeNeeding(missingPostgres)('the schema on PostgreSQL', () => {
  test('instances starting at once on an empty database apply each migration once, and share one accounts document', async () => {
    const url = await freshDatabase()
    const keyChecks = ['a', 'b', 'c', 'd']
    const stores = await Promise.all(keyChecks.map((check) => PgStore.open(url, { createKeyCheck: () => check })))
    try {
      const applied: { version: number }[] = await rows(url, (sql) => sql`SELECT version FROM svc_schema ORDER BY version`)
      expect(applied.map((row) => Number(row.version))).toEqual(Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1))
      // One accounts document: the first instance's key check; every instance reads that one.
      const documents: { n: number }[] = await rows(url, (sql) => sql`SELECT count(*)::int AS n FROM svc_documents WHERE id = ${ACCOUNTS_ID}`)
      expect(documents[0].n).toBe(1)
      expect(new Set(stores.map((store) => store.accounts.data.keyCheck)).size).toBe(1)
    } finally {
      await Promise.all(stores.map((store) => store.close()))
    }
    // Started again: nothing more to apply.
    const again = await PgStore.open(url, { createKeyCheck: () => 'e' })
    await again.close()
    expect(((await rows(url, (sql) => sql`SELECT count(*)::int AS n FROM svc_schema`)) as { n: number }[])[0].n).toBe(SCHEMA_VERSION)
  }, 60_000)

  test("an instance that starts while another is creating the accounts waits for it under the start's bound, not a request's", async () => {
    const url = await freshDatabase()
    const schema = new Database(url, { max: 1 })
    await migrate(schema).finally(() => schema.close())
    // Another instance's start, its accounts inserted but not yet committed, for longer than a
    // request's bound (as a busy machine keeps it; that bound is a real timer, so is the wait):
    // the start below waits on that row.
    const other = new Database(url, { max: 1, timeoutMs: 30_000 })
    let inserted = () => {}
    const insertedNow = new Promise<void>((resolve) => (inserted = resolve))
    const held = other.run((sql) =>
      sql.begin(async (tx) => {
        await tx`INSERT INTO svc_documents (id, kind, snapshot, snapshot_version) VALUES (${ACCOUNTS_ID}, 'accounts', ${JSON.stringify(newAccounts('first'))}, 0)`
        await tx`INSERT INTO svc_changes (document_id, version, changes) VALUES (${ACCOUNTS_ID}, 0, '[]')`
        inserted()
        await Bun.sleep(QUERY_TIMEOUT_MS * 2)
      }),
    )
    try {
      await Promise.race([insertedNow, held])
      const store = await PgStore.open(url, { createKeyCheck: () => 'second' })
      await store.close()
      expect(store.accounts.data.keyCheck).toBe('first')
    } finally {
      await held
      await other.close()
    }
  }, 30_000)

  test('a schema newer than the server knows is refused: the store does not open, the server exits 1 saying so', async () => {
    const url = await freshDatabase()
    const store = await PgStore.open(url, { createKeyCheck: () => 'x' })
    await store.close()
    await rows(url, (sql) => sql`INSERT INTO svc_schema (version) VALUES (${SCHEMA_VERSION + 1})`)
    const refused = await PgStore.open(url, { createKeyCheck: () => 'x' }).then(
      () => null,
      (error: unknown) => error,
    )
    expect(refused).toBeInstanceOf(SchemaTooNewError)
    expect((refused as Error).message).toContain(`version ${SCHEMA_VERSION + 1}, newer than this svc-vault knows (${SCHEMA_VERSION})`)

    const { server, dataDir } = startServer(url)
    const [out, err, code] = await Promise.all([new Response(server.stdout).text(), new Response(server.stderr).text(), server.exited])
    expect(code).toBe(1)
    expect(out + err).toContain(`svc-vault: the database's schema is version ${SCHEMA_VERSION + 1}, newer than this svc-vault knows`)
    // Nothing was applied over it.
    expect(((await rows(url, (sql) => sql`SELECT max(version)::int AS v FROM svc_schema`)) as { v: number }[])[0].v).toBe(SCHEMA_VERSION + 1)
  }, 60_000)

  test("the start-up line names the database (host or socket, name), never the URL's user or password", async () => {
    const url = new URL(await freshDatabase())
    // The test cluster trusts its socket: a password in the URL is sent but not needed.
    url.username = 'postgres'
    url.password = 'not-to-be-logged-7f3a'
    const { server, dataDir } = startServer(url.toString())
    let output = ''
    const decoder = new TextDecoder()
    try {
      for (const stream of [server.stderr, server.stdout])
        void (async () => {
          for await (const chunk of stream) output += decoder.decode(chunk)
        })()
      for (let i = 0; i < 600 && !output.includes('listening on') && server.exitCode === null; i++) await Bun.sleep(50)
      const line = output.split('\n').find((l) => l.includes('listening on')) ?? output
      expect(line).toContain(`(database: ${url.searchParams.get('host')}${url.pathname})`)
      expect(output).not.toContain('not-to-be-logged-7f3a')
      expect(output).not.toContain(dataDir)
    } finally {
      server.kill('SIGTERM')
      await server.exited
    }
  }, 60_000)
})
