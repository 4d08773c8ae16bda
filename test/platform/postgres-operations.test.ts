// Operating the PostgreSQL store: what /metrics shows of the database (pool use, query latency,
// conflicts, reconnects, notifications) and what happens when the database goes away (503
// STORE_UNAVAILABLE within a second, /readyz 503, back by itself). The server reaches the
// database through a TCP proxy the test cuts and mends, as a network cut or a failover would.
// Needs SVC_TEST_POSTGRES (scripts/test.sh starts a cluster); skipped without it, except under CI.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import type { PgStore } from '../../src/store/postgres/store'
import { VERSION } from '../../src/version'
import { signUp, type Client } from '../support/client'
import { freshDatabase, TEST_POSTGRES } from '../support/postgres'
import { removeDir, startTestServer, type TestServer } from '../support/server'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy'

const CI = process.env.CI === 'true'
if (CI && !TEST_POSTGRES) throw new Error('SVC_TEST_POSTGRES is not set: under CI the PostgreSQL tests must run (scripts/test.sh starts a cluster)')
const suite = TEST_POSTGRES ? describe : describe.skip
const SKIPPED = TEST_POSTGRES ? '' : ' (skipped: SVC_TEST_POSTGRES is not set)'

const METRICS_TOKEN = 'metrics-token-postgres-0123456789'
let clock = Date.parse('2026-05-01T12:00:00Z')
let server: TestServer
let proxy: TcpProxy
let admin: InstanceType<typeof SQL>

/** The cluster's Unix socket, from SVC_TEST_POSTGRES (`?host=DIR`, the port or 5432). */
function socketPath(url: string): string {
  const parsed = new URL(url)
  const dir = parsed.searchParams.get('host')
  if (!dir) throw new Error('SVC_TEST_POSTGRES must name a Unix socket folder (?host=DIR)')
  return `${dir}/.s.PGSQL.${parsed.port || 5432}`
}

beforeAll(async () => {
  if (!TEST_POSTGRES) return
  const database = await freshDatabase()
  admin = new SQL(database, { max: 2 })
  proxy = await startTcpProxy(socketPath(TEST_POSTGRES))
  const through = new URL(database)
  through.searchParams.delete('host')
  through.host = `127.0.0.1:${proxy.port}`
  server = await startTestServer({ env: { SVC_DATABASE_URL: through.toString(), SVC_METRICS_TOKEN: METRICS_TOKEN }, now: () => clock })
})
afterAll(async () => {
  if (!TEST_POSTGRES) return
  await server?.stop()
  if (server) removeDir(server.dataDir)
  await proxy?.close()
  await admin?.close()
})

const metricsText = async () => {
  const response = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  expect(response.status).toBe(200)
  return response.text()
}
const sample = (text: string, series: string) => {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

suite(`PostgreSQL in /metrics${SKIPPED}`, () => {
  test('pool, query latency and the counters are there; the latency histogram counts every query', async () => {
    const user = await signUp(server.url)
    expect((await user.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })).status).toBe(201)
    const text = await metricsText()
    expect(sample(text, 'svc_vault_db_up')).toBe(1)
    expect(sample(text, 'svc_vault_db_pool_connections')).toBe(10)
    expect(sample(text, 'svc_vault_db_pool_in_use')).toBeGreaterThanOrEqual(0)
    const queries = sample(text, 'svc_vault_db_queries_total')!
    expect(queries).toBeGreaterThan(5)
    expect(sample(text, 'svc_vault_db_query_duration_seconds_count')).toBe(queries)
    expect(sample(text, 'svc_vault_db_query_duration_seconds_bucket{le="+Inf"}')).toBe(queries)
    expect(sample(text, 'svc_vault_db_query_duration_seconds_sum')).toBeGreaterThan(0)
    for (const counter of ['query_failures', 'conflicts', 'reconnects', 'notifications']) {
      expect(text).toContain(`# TYPE svc_vault_db_${counter}_total counter`)
      expect(sample(text, `svc_vault_db_${counter}_total`)).toBeGreaterThanOrEqual(0)
    }
    // Labels name no user, no database, no URL.
    expect(text).not.toContain(user.user.id)
    expect(text).not.toContain('postgres://')
  })

  test("another instance's notification is counted", async () => {
    const before = sample(await metricsText(), 'svc_vault_db_notifications_total')!
    // Version 0 of the accounts: older than held, so nothing is fetched; the notification still arrives.
    await admin`SELECT pg_notify('svc_vault', 'accounts:0')`
    let after = before
    for (let i = 0; i < 200 && after === before; i++) {
      await Bun.sleep(10)
      after = sample(await metricsText(), 'svc_vault_db_notifications_total')!
    }
    expect(after).toBe(before + 1)
  })

  test('a write that finds its version taken by another writer is counted as a conflict and made again', async () => {
    const user = await signUp(server.url)
    expect((await user.post('/api/categories', { name: 'First', keyType: 'simple', envVarName: 'FIRST_KEY' })).status).toBe(201)
    const before = sample(await metricsText(), 'svc_vault_db_conflicts_total')!
    const vaultId = user.user.id
    // Another writer takes the vault's next version in a transaction not yet committed: the
    // server's refresh does not see it, its insert of the same version waits, then fails.
    const other = await admin.reserve()
    try {
      await other`BEGIN`
      const [{ version }] = await other`SELECT max(version)::int AS version FROM svc_changes WHERE document_id = ${vaultId}`
      await other`INSERT INTO svc_changes (document_id, version, changes) VALUES (${vaultId}, ${version + 1}, '[]')`
      const writing = user.post('/api/categories', { name: 'Second', keyType: 'simple', envVarName: 'SECOND_KEY' })
      let waiting = false
      for (let i = 0; i < 150 && !waiting; i++) {
        const rows = await admin`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`
        waiting = rows.length > 0
        if (!waiting) await Bun.sleep(5)
      }
      expect(waiting).toBe(true)
      await other`COMMIT`
      expect((await writing).status).toBe(201)
    } finally {
      other.release()
    }
    expect(sample(await metricsText(), 'svc_vault_db_conflicts_total')).toBe(before + 1)
    const names = (await user.get('/api/categories')).body.map((c: { name: string }) => c.name)
    expect(names).toEqual(expect.arrayContaining(['First', 'Second']))
  })
})

/** Mends the cut and waits for the server to answer `user` again (it reconnects by itself): that answer. */
async function mended(user: Client) {
  proxy.mend()
  let answer = await user.get('/api/categories')
  for (let i = 0; i < 100 && answer.status !== 200; i++) {
    await Bun.sleep(50)
    answer = await user.get('/api/categories')
  }
  expect(answer.status).toBe(200)
  return answer
}

suite(`the database going away${SKIPPED}`, () => {
  test('requests answer 503 STORE_UNAVAILABLE within a second, /readyz 503; once it is back, both recover without a restart', async () => {
    const user = await signUp(server.url)
    const category = await user.post('/api/categories', { name: 'Kept', keyType: 'simple', envVarName: 'KEPT_KEY' })
    expect(category.status).toBe(201)
    const before = await metricsText()

    proxy.cut()
    const started = performance.now()
    const refused = await user.get('/api/categories')
    const took = performance.now() - started
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 503, code: 'STORE_UNAVAILABLE' })
    // The request's queries share one bound, under a second; the answer follows it at once.
    expect(took).toBeLessThan(1000)
    clock += 1500
    const notReady = await fetch(`${server.url}/readyz`)
    expect(notReady.status).toBe(503)
    expect(await notReady.json()).toEqual({
      error: 'Not ready: the database takes no writes',
      code: 'NOT_READY',
      status: 'not-ready',
      version: VERSION,
      checks: { store: 'failed', masterKey: 'ok', disk: 'ok' },
    })
    // The process itself is alive: a restart would not bring the database back.
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
    const away = await metricsText()
    expect(sample(away, 'svc_vault_db_up')).toBe(0)
    expect(sample(away, 'svc_vault_db_query_failures_total')!).toBeGreaterThan(sample(before, 'svc_vault_db_query_failures_total')!)

    const answer = await mended(user)
    expect(answer.body.map((c: { id: string }) => c.id)).toContain(category.body.id)
    clock += 1500
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200)
    const back = await metricsText()
    expect(sample(back, 'svc_vault_db_up')).toBe(1)
    expect(sample(back, 'svc_vault_db_reconnects_total')!).toBeGreaterThan(sample(before, 'svc_vault_db_reconnects_total')!)
    expect((await user.post('/api/categories', { name: 'After', keyType: 'simple', envVarName: 'AFTER_KEY' })).status).toBe(201)
  }, 30_000)

  test('a request that comes while a refresh is held by the cut (started by another request, or by a notification) answers 503 within a second of its own arrival', async () => {
    const user = await signUp(server.url)
    const store = server.deps.store as PgStore
    const timed = async (request: () => Promise<{ status: number; body: any }>) => {
      const started = performance.now()
      const answer = await request()
      return { status: answer.status, code: answer.body?.code, ms: performance.now() - started }
    }
    const sent = async () => {
      for (let i = 0; i < 1000 && store.db.inFlight === 0; i++) await Bun.sleep(1)
      expect(store.db.inFlight).toBeGreaterThan(0)
    }
    const answered: { ms: number; status: number; code?: string }[] = []
    // A request's refresh of the accounts is sent and held; another request begins after it was sent,
    // so it cannot share it and waits for it to end.
    proxy.cut()
    try {
      const first = timed(() => user.get('/api/categories'))
      await sent()
      answered.push(await timed(() => user.get('/api/categories')), await first)
    } finally {
      await mended(user)
    }
    // The same behind a refresh no request waits on: the one another instance's notification starts.
    proxy.cut()
    try {
      const notified = store.accounts.refresh!().catch(() => 'failed')
      await sent()
      answered.push(await timed(() => user.get('/api/categories')))
      expect(await notified).toBe('failed')
    } finally {
      await mended(user)
    }
    for (const answer of answered) expect(answer).toEqual({ status: 503, code: 'STORE_UNAVAILABLE', ms: expect.any(Number) })
    expect(answered.map((answer) => answer.ms).filter((ms) => ms >= 1000)).toEqual([])
  }, 30_000)
})
