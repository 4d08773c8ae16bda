// Issue 36, item 1: anyone could fill the disk through the audit log (every failed sign-in, the
// throttle's 429s too, was an event of ~800 bytes in the victim's log; unknown e-mails in the
// server's audit.log). A bounded burst of anonymous failed sign-ins now grows each log by less than
// 64 KiB, and the failures still show as counts; under SVC_DISK_FLOOR nothing of them is written.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { INDIVIDUAL_BUDGET } from '../../src/audit/unauthenticated'
import { post, testClock } from '../account/support'
import { SoftPasskey } from './soft-passkey'
import { storedAuditLines, storedAuditText } from '../support/audit-file'
import { PASSWORD, signUp, uniqueEmail } from '../support/client'
import { removeDir, startTestServer, type TestServer } from '../support/server'

const KIB = 1024
const METRICS_TOKEN = 'flood-test-metrics-token-0123456789'
/** A log's size as a file holds it (on the database: its lines' bytes, newlines counted). */
const sizeOf = async (log: { server: TestServer; userId: string | null }) => Buffer.byteLength(await storedAuditText(log.server, log.userId))
const userLog = (server: TestServer, userId: string) => ({ server, userId })
const serverLog = (server: TestServer) => ({ server, userId: null })

/** A sign-in attempt from a client address (the server believes X-Forwarded-For from loopback). */
const login = (server: TestServer, email: string, address: string, password = 'wrong password') =>
  post(server.url, '/api/auth/login', { email, password }, {}, { 'x-forwarded-for': address, 'user-agent': `flood/${'x'.repeat(280)}` })

/** Runs `count` attempts, `parallel` at a time; answers their statuses. */
async function burst(count: number, parallel: number, attempt: (n: number) => Promise<{ status: number }>): Promise<number[]> {
  const statuses: number[] = []
  for (let start = 0; start < count; start += parallel) {
    const answers = await Promise.all(Array.from({ length: Math.min(parallel, count - start) }, (_, i) => attempt(start + i)))
    statuses.push(...answers.map((answer) => answer.status))
  }
  return statuses
}

const tally = (statuses: number[]) => statuses.reduce<Record<number, number>>((out, status) => ({ ...out, [status]: (out[status] ?? 0) + 1 }), {})
/** Failed sign-ins as the dashboard counts them: a summary stands for `details.count` attempts. */
const attempts = (events: any[]) => events.reduce((sum, event) => sum + (typeof event.details.count === 'number' ? event.details.count : 1), 0)

describe('a burst of anonymous failed sign-ins', () => {
  const clock = testClock(Date.now())
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer({ now: clock.now, env: { SVC_TRUST_PROXY: 'loopback', SVC_METRICS_TOKEN: METRICS_TOKEN } })
  })
  afterAll(async () => {
    await server.stop()
    removeDir(server.dataDir)
  })

  test("grows the victim's log and the server's audit.log by less than 64 KiB each; the failures still show as counts", async () => {
    const victim = await signUp(server.url)
    const victimBefore = await sizeOf(userLog(server, victim.user.id))
    const serverBefore = await sizeOf(serverLog(server))

    // The victim's e-mail: 10 wrong passwords from each of 2 addresses and 5 from a third (each a
    // password check: past the log's budget of 20), then 600 throttled attempts (no check).
    const addresses = ['203.0.113.1', '203.0.113.2', '203.0.113.3']
    const checked = await burst(25, 5, (n) => login(server, victim.email, addresses[Math.min(2, Math.floor(n / 10))]))
    expect(tally(checked)).toEqual({ 401: 25 })
    const throttled = await burst(600, 20, (n) => login(server, victim.email, addresses[n % 2]))
    expect(tally(throttled)).toEqual({ 429: 600 })
    // Unknown e-mails: one e-mail 10 times from one address (then throttled 400 times), and
    // passkeys nobody registered from 30 addresses (no password check: cheap for anyone).
    const stranger = uniqueEmail('nobody')
    expect(tally(await burst(10, 5, () => login(server, stranger, '198.51.100.7')))).toEqual({ 401: 10 })
    expect(tally(await burst(400, 20, () => login(server, stranger, '198.51.100.7')))).toEqual({ 429: 400 })
    const passkey = new SoftPasskey(server.url)
    const passkeyFailures = await burst(30, 5, async (n) => {
      const headers = { 'x-forwarded-for': `198.51.100.${100 + n}` }
      const options = await post(server.url, '/api/auth/passkey/options', {}, {}, headers)
      return post(server.url, '/api/auth/passkey/login', { response: passkey.signIn(options.body) }, { svc_passkey: options.cookies.svc_passkey }, headers)
    })
    expect(tally(passkeyFailures)).toEqual({ 401: 30 })
    await server.deps.audit.settle()

    // Before the fix: 625 events of ~1 KiB in the victim's log, 440 in the server's.
    expect((await sizeOf(userLog(server, victim.user.id))) - victimBefore).toBeLessThan(64 * KIB)
    expect((await sizeOf(serverLog(server))) - serverBefore).toBeLessThan(64 * KIB)

    // The Activity page's API: every attempt counted, the throttled ones in one summary event with
    // the count, the addresses and the first and last time.
    const events = (await victim.get('/api/audit?action=auth.login_failed&limit=500')).body.items
    expect(attempts(events)).toBe(625)
    expect(events.filter((event: any) => !event.details.summary)).toHaveLength(INDIVIDUAL_BUDGET)
    const summary = events.find((event: any) => event.details.reason === 'throttled')
    expect(summary).toMatchObject({
      action: 'auth.login_failed',
      outcome: 'denied',
      actor: { type: 'anonymous' },
      details: { method: 'password', summary: true, count: 600 },
    })
    expect([...summary.details.addresses].sort()).toEqual(addresses.slice(0, 2))
    expect(Date.parse(summary.details.firstAt)).toBeLessThanOrEqual(Date.parse(summary.details.lastAt))
    const overBudget = events.find((event: any) => event.details.summary && event.details.reason === 'invalid_credentials')
    expect(overBudget.details.count).toBe(25 - INDIVIDUAL_BUDGET)
    // Read again: nothing more was written (the counts went in once).
    const sizeAfterRead = await sizeOf(userLog(server, victim.user.id))
    expect(attempts((await victim.get('/api/audit?action=auth.login_failed&limit=500')).body.items)).toBe(625)
    expect(await sizeOf(userLog(server, victim.user.id))).toBe(sizeAfterRead)

    // The server's log: its counts are written when their window ends (here: shutdown's flush).
    await server.deps.audit.unauthenticated.flushAll()
    await server.deps.audit.settle()
    expect((await sizeOf(serverLog(server))) - serverBefore).toBeLessThan(64 * KIB)
    const serverEvents = (await storedAuditLines(server, null)).map((line) => JSON.parse(line)).filter((event) => event.action === 'auth.login_failed')
    expect(attempts(serverEvents)).toBe(440)
    expect(serverEvents.length).toBeLessThanOrEqual(INDIVIDUAL_BUDGET + 3)
    // Summaries name at most 20 addresses and 10 e-mails, counting the rest.
    for (const event of serverEvents.filter((e) => e.details.summary)) expect(event.details.addresses.length).toBeLessThanOrEqual(20)
    expect(serverEvents.find((e) => e.details.reason === 'throttled').details).toMatchObject({ count: 400, emails: [stranger], addresses: ['198.51.100.7'] })

    // /metrics says what was counted instead of written.
    const metrics = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text()
    expect(metrics).toContain('svc_vault_audit_unauthenticated_counted_total{reason="throttled"} 1000')
    expect(metrics).toMatch(/svc_vault_audit_unauthenticated_counted_total\{reason="budget"\} \d+/)
    expect(metrics).toContain('svc_vault_disk_low 0')
  }, 180_000)

  test('the budget is per hour and a summary per 15 minutes: with time, single events come back and windows split', async () => {
    const owner = await signUp(server.url)
    // Straight to the audit service (no password check: the time is the test's, not argon2's).
    const source = (address: string) => ({ request: new Request(server.url), server: { requestIP: () => ({ address, family: 'IPv4', port: 1 }) } as any })
    const failed = (reason: 'invalid_credentials' | 'throttled', address = '192.0.2.50') =>
      server.deps.audit.signIn({
        userId: owner.user.id,
        method: 'password',
        ok: false,
        source: source(address),
        reason,
        outcome: reason === 'throttled' ? 'denied' : 'failed',
      })
    for (let i = 0; i < 25; i++) await failed('invalid_credentials')
    for (let i = 0; i < 50; i++) await failed('throttled')
    clock.advance(14 * 60_000)
    for (let i = 0; i < 10; i++) await failed('throttled', '192.0.2.60')
    // Past the summary's 15 minutes: the next attempt starts a new one; the old one is written.
    clock.advance(2 * 60_000)
    await failed('throttled')
    await server.deps.audit.unauthenticated.flushDue()
    await server.deps.audit.settle()
    const written = (await storedAuditLines(server, owner.user.id)).map((line) => JSON.parse(line)).filter((e) => e.action === 'auth.login_failed')
    expect(
      written
        .filter((e) => e.details.reason === 'throttled')
        .map((e) => [e.details.count, e.details.addresses, Date.parse(e.details.lastAt) - Date.parse(e.details.firstAt)]),
    ).toEqual([[60, ['192.0.2.50', '192.0.2.60'], 14 * 60_000]])
    const events = (await owner.get('/api/audit?action=auth.login_failed&limit=500')).body.items
    // The new window (1), then the first (60); single events within the budget, the rest counted.
    expect(events.filter((e: any) => e.details.reason === 'throttled').map((e: any) => e.details.count)).toEqual([1, 60])
    expect(events.filter((e: any) => !e.details.summary)).toHaveLength(INDIVIDUAL_BUDGET)
    expect(attempts(events)).toBe(25 + 50 + 10 + 1)
    // An hour on, the log's budget is back: a wrong password is an event of its own again.
    clock.advance(61 * 60_000)
    await failed('invalid_credentials', '192.0.2.51')
    const latest = (await owner.get('/api/audit?action=auth.login_failed&limit=1')).body.items[0]
    expect(latest.details).toEqual({ method: 'password', reason: 'invalid_credentials' })
    expect(latest.clientAddress).toBe('192.0.2.51')
  })
})

describe('SVC_DISK_FLOOR', () => {
  let server: TestServer

  beforeAll(async () => {
    // A floor above any disk's free space: the disk reads as low. The floor guards the data
    // folder's disk, which a server on PostgreSQL does not write: the file store in both passes.
    server = await startTestServer({ store: 'file', env: { SVC_DISK_FLOOR: '8000TiB', SVC_METRICS_TOKEN: METRICS_TOKEN } })
  })
  afterAll(async () => {
    await server.stop()
    removeDir(server.dataDir)
  })

  test('under the floor, failed sign-ins are counted, not written; /readyz and /metrics say so; the counts are written once there is room', async () => {
    const victim = await signUp(server.url)
    const before = await sizeOf(userLog(server, victim.user.id))
    const serverBefore = await sizeOf(serverLog(server))
    expect(tally(await burst(3, 3, () => login(server, victim.email, '127.0.0.1')))).toEqual({ 401: 3 })
    expect((await login(server, uniqueEmail('nobody'), '127.0.0.1')).status).toBe(401)
    await server.deps.audit.settle()
    expect(await sizeOf(userLog(server, victim.user.id))).toBe(before)
    expect(await sizeOf(serverLog(server))).toBe(serverBefore)
    // The owner's own actions are still written, and the vault still serves.
    expect((await victim.post('/api/categories', { name: 'Still', keyType: 'group' })).status).toBe(201)
    expect((await victim.get('/api/audit?action=category.create')).body.items).toHaveLength(1)

    const ready = await fetch(`${server.url}/readyz`)
    expect(ready.status).toBe(200)
    expect((await ready.json()).checks).toEqual({ store: 'ok', masterKey: 'ok', disk: 'low' })
    const metrics = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text()
    expect(metrics).toContain('svc_vault_disk_low 1')
    expect(metrics).toContain('svc_vault_disk_floor_bytes 8796093022208000')
    expect(metrics).toContain('svc_vault_audit_unauthenticated_counted_total{reason="disk_low"} 4')
    expect(metrics).toContain('svc_vault_audit_unauthenticated_pending 2')

    // Room again (the floor lowered): the owner's next read writes the counts.
    ;(server.deps.config as { diskFloorBytes: number }).diskFloorBytes = 0
    const events = (await victim.get('/api/audit?action=auth.login_failed')).body.items
    expect(events).toHaveLength(1)
    expect(events[0].details).toMatchObject({ method: 'password', reason: 'invalid_credentials', summary: true, count: 3, addresses: ['127.0.0.1'] })
  })

  test('SVC_DISK_FLOOR takes sizes, defaults to 256 MiB and refuses anything else naming the variable', async () => {
    const { loadConfig } = await import('../../src/config')
    expect(loadConfig({}).diskFloorBytes).toBe(256 * 1024 ** 2)
    expect(loadConfig({ SVC_DISK_FLOOR: '1GB' }).diskFloorBytes).toBe(1e9)
    expect(loadConfig({ SVC_DISK_FLOOR: '1GiB' }).diskFloorBytes).toBe(1024 ** 3)
    expect(loadConfig({ SVC_DISK_FLOOR: '0' }).diskFloorBytes).toBe(0)
    expect(loadConfig({ SVC_DISK_FLOOR: '5000000' }).diskFloorBytes).toBe(5e6)
    for (const bad of ['lots', '-1', '1PB', '', '9e99']) expect(() => loadConfig({ SVC_DISK_FLOOR: bad })).toThrow(/SVC_DISK_FLOOR/)
  })
})

describe('counts are not lost', () => {
  test('a summary whose write fails goes back into the open one and is written with it later', async () => {
    const { UnauthenticatedEvents } = await import('../../src/audit/unauthenticated')
    let now = Date.parse('2026-06-01T10:00:00.000Z')
    let failing = true
    const written: any[] = []
    const gate = new UnauthenticatedEvents({
      now: () => now,
      diskLow: () => false,
      write: async (_userId, event) => {
        if (failing) throw new Error('ENOSPC')
        written.push(event)
      },
    })
    const event = (address: string) => ({
      action: 'auth.login_failed' as const,
      outcome: 'denied' as const,
      actor: { type: 'anonymous' as const, id: null, name: null },
      clientAddress: address,
      userAgent: null,
      records: [],
      details: { method: 'password', reason: 'throttled' },
    })
    await gate.add(null, event('192.0.2.1'), true, 'a@example.test')
    await gate.add(null, event('192.0.2.2'), true, 'b@example.test')
    // A new attempt arrives while the failing write is under way: a new summary opens, and the
    // failed one is merged into it.
    const failed = gate.flushAll()
    now += 60_000
    await gate.add(null, event('192.0.2.3'), true, 'c@example.test')
    await failed
    expect(written).toEqual([])
    expect(gate.pending).toBe(1)
    failing = false
    await gate.flushAll()
    gate.stop()
    expect(written).toHaveLength(1)
    expect(written[0].details).toMatchObject({ count: 3, firstAt: '2026-06-01T10:00:00.000Z', lastAt: '2026-06-01T10:01:00.000Z' })
    expect([...written[0].details.addresses].sort()).toEqual(['192.0.2.1', '192.0.2.2', '192.0.2.3'])
    expect([...written[0].details.emails].sort()).toEqual(['a@example.test', 'b@example.test', 'c@example.test'])
  })
})
