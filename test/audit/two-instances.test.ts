// Issue 34: the audit logs on the PostgreSQL store. Two instances on one database recording
// events for one vault at once make one chain, never a fork (an append locks the log's row and
// seals against the head read there), and audit-verify, reading the database, accepts it. With a
// database nothing of a user is written to the data folder: it is not even created. The budget of
// failed sign-ins written one by one (20 per log per hour) counts across the instances.
import { afterAll, expect } from 'bun:test'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { INDIVIDUAL_BUDGET } from '../../src/audit/unauthenticated'
import { testClock } from '../account/support'
import { storedAuditLines } from '../support/audit-file'
import { Client, PASSWORD, signUp, uniqueEmail } from '../support/client'
import { freshDatabase, TEST_POSTGRES } from '../support/postgres'
import { testNeeding } from '../support/requirements'
import { removeDir, ROOT, spawnServer, startTestServer, tempDir, TEST_MASTER_KEY, type TestServer } from '../support/server'

const needsPostgres = testNeeding(TEST_POSTGRES ? null : 'no PostgreSQL cluster (SVC_TEST_POSTGRES; scripts/test.sh starts one)')
const started: TestServer[] = []

afterAll(async () => {
  for (const server of started) {
    await server.stop().catch(() => {})
    removeDir(server.dataDir)
  }
})

function verify(url: string): { code: number; output: string } {
  const run = Bun.spawnSync(['bun', 'src/cli/audit-verify.ts'], {
    cwd: ROOT,
    stdout: 'pipe',
    stderr: 'pipe',
    env: { ...process.env, SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_DATABASE_URL: url, SVC_DATABASE_URL_FILE: undefined },
  })
  return { code: run.exitCode, output: run.stdout.toString() + run.stderr.toString() }
}

const hashOf = (line: string) => JSON.parse(line).hash as string
const prevOf = (line: string) => JSON.parse(line).prev as string

needsPostgres(
  'two instances recording events for one vault at once: one unforked chain, which audit-verify accepts',
  async () => {
    const url = await freshDatabase()
    const one = await startTestServer({ env: { SVC_DATABASE_URL: url } })
    started.push(one)
    const two = await startTestServer({ env: { SVC_DATABASE_URL: url } })
    started.push(two)
    const alice = await signUp(one.url)
    const onTwo = new Client(two.url, alice.credentials)
    const actor = { type: 'anonymous' as const, id: null, name: null }
    // Text the database must keep byte for byte (the chain's hashes are over it): accents, a line
    // separator, quotes, a backslash, a character outside the BMP.
    const userAgent = 'agent é \u2028 "quoted" \\ \u{1F600}'
    const event = (n: number) => ({ action: 'entry.reveal' as const, actor, clientAddress: '127.0.0.1', userAgent, details: { n } })
    // Appends from both instances interleaved: the recorder's own calls (many at once per instance,
    // so each instance's batches meet the other's) and requests sent to either instance.
    const writes: Promise<unknown>[] = []
    for (let n = 0; n < 60; n++) writes.push((n % 2 === 0 ? one : two).deps.audit.record(alice.user.id, event(n)))
    for (let n = 0; n < 10; n++) {
      const client = n % 2 === 0 ? alice : onTwo
      writes.push(client.post('/api/categories', { name: `c${n}`, keyType: 'group' }).then((answer) => expect(answer.status).toBe(201)))
    }
    await Promise.all(writes)

    const lines = await storedAuditLines(one, alice.user.id)
    expect(lines.filter((line) => JSON.parse(line).userAgent === userAgent).length).toBe(60)
    // auth.register, the 60 recorded events, 10 category.create.
    expect(lines.length).toBe(71)
    // One chain: each line follows the one before it, and no two lines follow the same one.
    for (let i = 1; i < lines.length; i++) expect(prevOf(lines[i])).toBe(hashOf(lines[i - 1]))
    expect(new Set(lines.map(prevOf)).size).toBe(lines.length)
    // Each instance reads the whole chain: the same head, the same events.
    const head = hashOf(lines.at(-1)!)
    expect(await one.deps.audit.headOf(alice.user.id)).toEqual({ head, lines: 71 })
    expect(await two.deps.audit.headOf(alice.user.id)).toEqual({ head, lines: 71 })
    const listed = (await onTwo.get('/api/audit?limit=500')).body.items
    expect(listed.length).toBe(71)
    // The export is the stored lines, byte for byte, from either instance.
    const exported = (await alice.get('/api/audit/export')).text
    expect(exported).toBe(lines.map((line) => `${line}\n`).join(''))
    expect((await onTwo.get('/api/audit/export')).text).toBe(exported)

    const verified = verify(url)
    expect(verified.output).toContain(`ok   vaults/${alice.user.id}.audit.log: 71 event(s), chain intact (keyed)`)
    expect(verified.code).toBe(0)
  },
  60_000,
)

needsPostgres(
  "with a database the data folder is never written: sign-up, writes, reveals, failed sign-ins, the server's log",
  async () => {
    const dataDir = join(tempDir('svc-vault-pg-nodata-'), 'data')
    const url = await freshDatabase()
    const server = await startTestServer({ dataDir, env: { SVC_DATABASE_URL: url } })
    started.push(server)
    const bob = await signUp(server.url)
    const category = (await bob.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })).body
    const entry = (await bob.post('/api/entries', { categoryId: category.id, name: 'shop', value: 'sk_live_x', environment: 'production' })).body
    expect((await bob.post(`/api/entries/${entry.id}/reveal`)).status).toBe(200)
    // A failed sign-in for the account (its log) and for an unknown e-mail (the server's log).
    expect((await bob.anonymous().post('/api/auth/login', { email: bob.email, password: 'wrong password' })).status).toBe(401)
    expect((await bob.anonymous().post('/api/auth/login', { email: uniqueEmail('nobody'), password: PASSWORD })).status).toBe(401)
    expect((await bob.get('/api/audit?action=auth.login_failed')).body.items.length).toBe(1)
    await server.deps.audit.compactOpenLogs()
    await server.deps.audit.settle()
    await server.deps.audit.logHeads()
    expect((await storedAuditLines(server, null)).map((line) => JSON.parse(line).action)).toEqual(['auth.login_failed'])
    expect((await storedAuditLines(server, bob.user.id)).length).toBeGreaterThanOrEqual(5)
    await server.stop()
    started.splice(started.indexOf(server), 1)
    expect(existsSync(dataDir) ? readdirSync(dataDir, { recursive: true }) : 'absent').toBe('absent')

    // The server as its own process (start-up, the jobs it runs, a clean stop) on the same database.
    const spawned = await spawnServer({ dataDir, env: { SVC_DATABASE_URL: url } })
    try {
      const again = new Client(spawned.url, bob.credentials)
      expect((await again.post(`/api/entries/${entry.id}/reveal`)).status).toBe(200)
      expect((await again.anonymous().post('/api/auth/login', { email: uniqueEmail('nobody'), password: PASSWORD })).status).toBe(401)
    } finally {
      expect(await spawned.stop()).toBe(0)
    }
    expect((await storedAuditLines(server, null)).length).toBe(2)
    expect(existsSync(dataDir) ? readdirSync(dataDir, { recursive: true }) : 'absent').toBe('absent')
    removeDir(join(dataDir, '..'))
  },
  60_000,
)

needsPostgres(
  'failed sign-ins through two instances: at most 20 single events per log per hour in all, the rest counted in summaries',
  async () => {
    const url = await freshDatabase()
    const clock = testClock(Date.now())
    const one = await startTestServer({ now: clock.now, env: { SVC_DATABASE_URL: url, SVC_TRUST_PROXY: 'loopback' } })
    started.push(one)
    const two = await startTestServer({ now: clock.now, env: { SVC_DATABASE_URL: url, SVC_TRUST_PROXY: 'loopback' } })
    started.push(two)
    const victim = await signUp(one.url)
    const stranger = uniqueEmail('nobody')
    // Straight to each instance's audit service (no password check: fast), all at once, alternating.
    const source = (n: number) => ({
      request: new Request(one.url),
      server: { requestIP: () => ({ address: `192.0.2.${n}`, family: 'IPv4', port: 1 }) } as any,
    })
    const failed = (server: TestServer, userId: string | null, n: number) =>
      server.deps.audit.signIn({ userId, email: stranger, method: 'password', ok: false, source: source(n), reason: 'invalid_credentials' })
    const attempts = 2 * INDIVIDUAL_BUDGET + 10
    await Promise.all(Array.from({ length: attempts }, (_, n) => [failed(n % 2 ? two : one, victim.user.id, n), failed(n % 2 ? one : two, null, n)]).flat())
    // Through HTTP too, once the budget is spent: a wrong password on either instance is only counted.
    for (const server of [one, two]) {
      const answer = await fetch(`${server.url}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.9' },
        body: JSON.stringify({ email: victim.email, password: 'wrong password' }),
      })
      expect(answer.status).toBe(401)
    }
    for (const server of [one, two]) await server.deps.audit.unauthenticated.flushAll()
    for (const server of [one, two]) await server.deps.audit.settle()

    const failures = async (userId: string | null) =>
      (await storedAuditLines(one, userId)).map((line) => JSON.parse(line)).filter((event) => event.action === 'auth.login_failed')
    for (const [userId, total] of [
      [victim.user.id, attempts + 2],
      [null, attempts],
    ] as const) {
      const events = await failures(userId)
      const singles = events.filter((event) => !event.details.summary)
      const summaries = events.filter((event) => event.details.summary)
      // Each instance writes its own summary of what it counted; together they hold every attempt.
      expect({ userId, singles: singles.length, counted: summaries.reduce((sum, event) => sum + event.details.count, 0) }).toEqual({
        userId,
        singles: INDIVIDUAL_BUDGET,
        counted: total - INDIVIDUAL_BUDGET,
      })
      expect(summaries.length).toBeLessThanOrEqual(2)
    }
    // An hour on, the log's budget is back on both: a failed sign-in is an event of its own again.
    clock.advance(61 * 60_000)
    await failed(two, victim.user.id, 200)
    await failed(one, victim.user.id, 201)
    await one.deps.audit.settle()
    await two.deps.audit.settle()
    const latest = (await failures(victim.user.id)).slice(-2)
    expect(latest.map((event) => [event.details.summary ?? false, event.clientAddress])).toEqual([
      [false, '192.0.2.200'],
      [false, '192.0.2.201'],
    ])
  },
  60_000,
)
