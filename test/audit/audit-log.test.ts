// The audit log (issue 17): events and their fields, reading them (filters, pages, scope), the
// server's own log for unknown e-mails, the hash chain and `bun run audit-verify` catching an
// edited, removed or reordered line, and retention (compaction keeps the chain verifiable).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { cpSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { AuditService } from '../../src/modules/audit/service'
import { auditFileLines, auditFileText } from '../support/audit-file'
import { heldSync, turn } from '../support/held-sync'
import { Client, signUp, uniqueEmail, PASSWORD } from '../support/client'
import { AUDIT_LOGS_IN_FILES, testOnFileStore } from '../support/requirements'
import { removeDir, ROOT, startTestServer, storedVault, tempDir, TEST_MASTER_KEY, type TestServer } from '../support/server'

let server: TestServer
let alice: Client & { user: any; email: string }

beforeAll(async () => {
  server = await startTestServer()
  alice = await signUp(server.url)
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

const logPath = (s: TestServer, userId: string) => join(s.dataDir, 'vaults', `${userId}.audit.log`)
const lines = auditFileLines

function verify(dataDir: string): { code: number; output: string } {
  const run = Bun.spawnSync(['bun', 'src/cli/audit-verify.ts', '--data-dir', dataDir], {
    cwd: ROOT,
    stdout: 'pipe',
    stderr: 'pipe',
    env: { ...process.env, SVC_MASTER_KEY: TEST_MASTER_KEY },
  })
  return { code: run.exitCode, output: run.stdout.toString() + run.stderr.toString() }
}

describe('events', () => {
  test('a reveal leaves one event with action, outcome, actor, client address, user agent and records, never the value', async () => {
    const category = (await alice.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })).body
    const entry = (await alice.post('/api/entries', { categoryId: category.id, name: 'shop', value: 'sk_live_do_not_log', environment: 'production' })).body
    const key = await alice.keyClient(['entries:reveal'])
    const keyRecord = (await alice.get('/api/access-keys')).body.at(-1)
    const before = lines(logPath(server, alice.user.id)).length
    const revealed = await key.post(`/api/entries/${entry.id}/reveal`, undefined, { 'user-agent': 'audit-test/1.0' })
    expect(revealed.status).toBe(200)
    const after = lines(logPath(server, alice.user.id))
    expect(after.length).toBe(before + 1)
    const event = JSON.parse(after.at(-1)!)
    expect(event).toMatchObject({
      action: 'entry.reveal',
      outcome: 'ok',
      actor: { type: 'access-key', id: keyRecord.id, name: keyRecord.name },
      clientAddress: '127.0.0.1',
      userAgent: 'audit-test/1.0',
      records: [{ kind: 'entry', id: entry.id, name: 'shop' }],
    })
    expect(Date.parse(event.time)).toBeGreaterThan(Date.now() - 60_000)
    expect(after.at(-1)).not.toContain('sk_live_do_not_log')
    // The API shows the same event first.
    const page = await alice.get('/api/audit?limit=1')
    expect(page.status).toBe(200)
    expect(page.body.items[0]).toMatchObject({ id: event.id, action: 'entry.reveal' })
    expect(page.body.items[0]).not.toHaveProperty('hash')
  })

  test('a session is named by its id prefix; a sign-out is recorded', async () => {
    const bob = await signUp(server.url)
    const login = await bob.anonymous().post('/api/auth/login', { email: bob.email, password: PASSWORD })
    expect(login.status).toBe(200)
    const cookie = /svc_session=([^;]*)/.exec(login.headers.get('set-cookie') ?? '')![1]
    const session = new Client(server.url, { cookie })
    expect((await session.post('/api/auth/logout')).status).toBe(204)
    const events = (await bob.get('/api/audit')).body.items
    expect(events.map((e: any) => e.action)).toEqual(['auth.logout', 'auth.login', 'auth.register'])
    const hash = new Bun.CryptoHasher('sha256').update(cookie).digest('hex')
    expect(events[0].actor).toEqual({ type: 'session', id: hash.slice(0, 12), name: null })
    expect(events[1].actor).toEqual(events[0].actor)
    expect(events[1].details).toEqual({ method: 'password' })
  })

  test('a key without the scope: 403, and scope.denied is recorded', async () => {
    const key = await alice.keyClient(['stats:read'])
    const denied = await key.post('/api/categories', { name: 'x', keyType: 'group' })
    expect(denied.status).toBe(403)
    const [event] = (await alice.get('/api/audit?action=scope.denied')).body.items
    expect(event).toMatchObject({
      action: 'scope.denied',
      outcome: 'denied',
      actor: { type: 'access-key' },
      details: { required: 'categories:write', method: 'POST', path: '/api/categories' },
    })
    // On a session-only endpoint too.
    expect((await key.get('/api/access-keys')).status).toBe(403)
    const events = (await alice.get('/api/audit?action=scope.denied&limit=2')).body.items
    expect(events[0].details.required).toBe('session')
  })

  testOnFileStore(AUDIT_LOGS_IN_FILES)(
    "failed sign-ins: the account's log for its e-mail, the server's audit.log for an unknown one, chained alike",
    async () => {
      const wrong = await alice.anonymous().post('/api/auth/login', { email: alice.email, password: 'not the password' })
      expect(wrong.status).toBe(401)
      const [event] = (await alice.get('/api/audit?action=auth.login_failed')).body.items
      expect(event).toMatchObject({ outcome: 'failed', actor: { type: 'anonymous', id: null }, details: { method: 'password', reason: 'invalid_credentials' } })
      expect(JSON.stringify(event)).not.toContain('not the password')
      const stranger = uniqueEmail('stranger')
      expect((await alice.anonymous().post('/api/auth/login', { email: stranger, password: 'guess guess' })).status).toBe(401)
      const serverLog = lines(join(server.dataDir, 'audit.log'))
      const last = JSON.parse(serverLog.at(-1)!)
      expect(last).toMatchObject({ action: 'auth.login_failed', outcome: 'failed', details: { method: 'password', email: stranger } })
      expect(serverLog.join('\n')).not.toContain('guess guess')
      expect(verify(server.dataDir).code).toBe(0)
    },
  )
})

describe('reading', () => {
  test('an event still syncing is not listed nor exported: only durable lines are shown', async () => {
    const dave = await signUp(server.url)
    server.deps.audit.closeUserLog(dave.user.id)
    await server.deps.audit.settle()
    const disk = heldSync()
    // A service on the same store whose syncs the test holds (the server's own let go of the log).
    const audit = new AuditService({ ...server.deps, dataSync: disk.sync })
    const actor = { type: 'anonymous' as const, id: null, name: null }
    const durable = audit.record(dave.user.id, { action: 'entry.reveal', actor, clientAddress: '127.0.0.1', userAgent: null, details: { n: 1 } })
    while (disk.held.length === 0) await turn()
    disk.release()
    await durable
    const syncing = audit.record(dave.user.id, { action: 'entry.reveal', actor, clientAddress: '127.0.0.1', userAgent: null, details: { n: 2 } })
    while (disk.held.length === 0) await turn()
    // Written to the file, not yet synced.
    expect(auditFileText(logPath(server, dave.user.id))).toContain('"n":2')
    const listed = async () => (await audit.list(dave.user.id, { action: 'entry.reveal' })).items.map((event) => event.details.n)
    expect(await listed()).toEqual([1])
    const exported = () => new Response(audit.exportLines(dave.user.id)).text()
    expect(await exported()).not.toContain('"n":2')
    disk.release()
    await syncing
    expect(await listed()).toEqual([2, 1])
    expect(await exported()).toContain('"n":2')
    await audit.close()
  })

  test('newest first, pages by cursor, filters by action, actor and time; export answers the stored lines', async () => {
    const carol = await signUp(server.url)
    const key = await carol.keyClient(['categories:write', 'audit:read'])
    const keyId = (await carol.get('/api/access-keys')).body[0].id
    for (let i = 0; i < 5; i++) expect((await key.post('/api/categories', { name: `c${i}`, keyType: 'group' })).status).toBe(201)
    const all = (await carol.get('/api/audit?limit=500')).body.items
    expect(all.map((e: any) => e.action)).toEqual([...Array(5).fill('category.create'), 'access_key.create', 'auth.register'])
    expect(all[0].records[0].name).toBe('c4')
    // Pages of two, by cursor, cover the same events once each.
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const page: any = (await carol.get(`/api/audit?limit=2${cursor ? `&cursor=${cursor}` : ''}`)).body
      expect(page.items.length).toBeLessThanOrEqual(2)
      seen.push(...page.items.map((e: any) => e.id))
      cursor = page.nextCursor
    } while (cursor)
    expect(seen).toEqual(all.map((e: any) => e.id))
    // Filters.
    expect((await carol.get(`/api/audit?actor=${keyId}`)).body.items.length).toBe(5)
    expect((await carol.get('/api/audit?actor=session')).body.items.map((e: any) => e.action)).toEqual(['access_key.create', 'auth.register'])
    expect((await carol.get('/api/audit?action=access_key.create')).body.items.length).toBe(1)
    const middle = all[2].time
    expect((await carol.get(`/api/audit?since=${middle}`)).body.items.every((e: any) => e.time >= middle)).toBe(true)
    expect((await carol.get(`/api/audit?until=${all.at(-1).time}`)).body.items).toEqual([])
    expect((await carol.get('/api/audit?action=nope')).status).toBe(400)
    expect((await carol.get('/api/audit?limit=0')).status).toBe(400)
    // An access key with audit:read reads it; one without gets 403.
    expect((await key.get('/api/audit')).status).toBe(200)
    expect((await (await carol.keyClient(['stats:read'])).get('/api/audit')).status).toBe(403)
    // The raw lines, oldest first, with their chain.
    const exported = await key.get('/api/audit/export')
    expect(exported.status).toBe(200)
    expect(exported.headers.get('content-type')).toContain('application/x-ndjson')
    expect(exported.text).toBe(auditFileText(logPath(server, carol.user.id)))
    const first = JSON.parse(exported.text.split('\n')[0])
    expect(first).toHaveProperty('prev')
    expect(first).toHaveProperty('hash')
    // Another user's log is never shown.
    expect((await alice.get('/api/audit?limit=500')).body.items.some((e: any) => e.actor.id === keyId)).toBe(false)
  })
})

describe('the chain', () => {
  testOnFileStore(AUDIT_LOGS_IN_FILES)('audit-verify passes an intact folder and names the line edited, removed or reordered', async () => {
    const dave = await signUp(server.url)
    for (let i = 0; i < 6; i++) await dave.post('/api/categories', { name: `d${i}`, keyType: 'group' })
    const ok = verify(server.dataDir)
    expect(ok.output).toContain(`ok   vaults/${dave.user.id}.audit.log: 7 event(s)`)
    expect(ok.code).toBe(0)

    const check = (tamper: (lines: string[]) => string[], expected: RegExp) => {
      const copy = tempDir('svc-vault-audit-tamper-')
      try {
        cpSync(server.dataDir, copy, { recursive: true })
        const path = join(copy, 'vaults', `${dave.user.id}.audit.log`)
        writeFileSync(path, `${tamper(lines(path)).join('\n')}\n`)
        const result = verify(copy)
        expect(result.code).toBe(1)
        expect(result.output).toMatch(expected)
      } finally {
        removeDir(copy)
      }
    }
    // Edited: a name changed in line 3.
    check((l) => l.map((line, i) => (i === 2 ? line.replace('"d1"', '"d9"') : line)), /FAIL vaults\/.*: line 3 was edited/)
    // Edited and re-hashed by someone who knows the format but not the key: its MAC does not match.
    check((l) => {
      const event = JSON.parse(l[2])
      event.records[0].name = 'forged'
      const { hash: _hash, ...body } = event
      const text = JSON.stringify(body)
      l[2] = `${text.slice(0, -1)},"hash":"${new Bun.CryptoHasher('sha256').update(text).digest('hex')}"}`
      return l
    }, /line 3 was edited: rewritten without the audit key/)
    // Removed: line 4.
    check((l) => l.filter((_, i) => i !== 3), /line 4 does not follow line 3: a line between them was removed/)
    // Removed: the first line.
    check((l) => l.slice(1), /line 1 does not follow the chain's start/)
    // Reordered: lines 5 and 6 swapped.
    check((l) => [...l.slice(0, 4), l[5], l[4], ...l.slice(6)], /line 5 is out of order/)
    // Garbage.
    check((l) => [...l.slice(0, 2), 'not json', ...l.slice(2)], /line 3 is not an audit event/)
  })

  testOnFileStore(AUDIT_LOGS_IN_FILES)('retention: compaction drops old events and the file then starts from a recorded checkpoint', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z')
    const dataDir = tempDir()
    const clocked = await startTestServer({ dataDir, now: () => now, env: { SVC_AUDIT_RETENTION: '30d', SVC_SESSION_TTL: '300d' } })
    try {
      const erin = await signUp(clocked.url)
      for (let i = 0; i < 3; i++) await erin.post('/api/categories', { name: `old${i}`, keyType: 'group' })
      now += 40 * 86_400_000
      for (let i = 0; i < 2; i++) await erin.post('/api/categories', { name: `new${i}`, keyType: 'group' })
      expect(lines(logPath(clocked, erin.user.id)).length).toBe(6)
      await clocked.deps.audit.compactOpenLogs()
      const kept = lines(logPath(clocked, erin.user.id)).map((line) => JSON.parse(line))
      expect(kept.map((e) => e.records[0].name)).toEqual(['new0', 'new1'])
      const vault = (await storedVault(clocked, erin.user.id)).data
      expect(vault.auditChain!.checkpoint).toBe(kept[0].prev)
      expect(vault.auditChain!.start).toMatch(/^[0-9a-f]{64}$/)
      // Still verifiable, and appends continue the chain.
      expect(verify(dataDir).code).toBe(0)
      await erin.post('/api/categories', { name: 'after', keyType: 'group' })
      expect(verify(dataDir).code).toBe(0)
      // Removing the first kept line is still caught.
      const path = logPath(clocked, erin.user.id)
      writeFileSync(path, `${lines(path).slice(1).join('\n')}\n`)
      expect(verify(dataDir).output).toMatch(/line 1 does not follow the chain's start/)
    } finally {
      await clocked.stop()
      removeDir(dataDir)
    }
  })
})

describe('the end of the chain', () => {
  testOnFileStore(AUDIT_LOGS_IN_FILES)('after a clean stop, lines cut from the end of a log are caught too', async () => {
    const dataDir = tempDir()
    const own = await startTestServer({ dataDir })
    const grace = await signUp(own.url)
    for (let i = 0; i < 3; i++) await grace.post('/api/categories', { name: `g${i}`, keyType: 'group' })
    await own.stop()
    try {
      expect(verify(dataDir).code).toBe(0)
      const path = join(dataDir, 'vaults', `${grace.user.id}.audit.log`)
      const all = lines(path)
      writeFileSync(path, `${all.slice(0, -1).join('\n')}\n`)
      const cut = verify(dataDir)
      expect(cut.code).toBe(1)
      expect(cut.output).toMatch(/lines were removed from the end/)
    } finally {
      removeDir(dataDir)
    }
  })
})

describe('scope.denied from a handler', () => {
  test('a scope a handler requires itself (denyScope) is recorded too', async () => {
    const { Elysia } = await import('elysia')
    const { authGuard } = await import('../../src/auth/guard')
    const { errorHandler } = await import('../../src/http/error-handler')
    const app = new Elysia()
      .use(errorHandler(() => {}))
      .use(authGuard(server.deps))
      .get(
        '/extra',
        async ({ denyScope }) => {
          throw await denyScope('export:read')
        },
        { auth: 'stats:read' },
      )
    const frank = await signUp(server.url)
    const created = await frank.post('/api/access-keys', { name: 'narrow', scopes: ['stats:read'] })
    const answer = await app.handle(new Request('http://localhost/extra', { headers: { authorization: `Bearer ${created.body.key}` } }))
    expect(answer.status).toBe(403)
    const [event] = (await frank.get('/api/audit?action=scope.denied')).body.items
    expect(event).toMatchObject({
      outcome: 'denied',
      actor: { type: 'access-key', id: created.body.id, name: 'narrow' },
      details: { required: 'export:read', path: '/extra' },
    })
  })
})

describe('settings', () => {
  test('SVC_AUDIT_RETENTION defaults to 365d and refuses a bad value; SVC_AUDIT is on or off', async () => {
    const { loadConfig } = await import('../../src/config')
    expect(loadConfig({}).audit).toEqual({ enabled: true, retentionMs: 365 * 86_400_000 })
    expect(loadConfig({ SVC_AUDIT_RETENTION: '90d', SVC_AUDIT: 'off' }).audit).toEqual({ enabled: false, retentionMs: 90 * 86_400_000 })
    expect(() => loadConfig({ SVC_AUDIT_RETENTION: 'forever' })).toThrow(/SVC_AUDIT_RETENTION/)
    expect(() => loadConfig({ SVC_AUDIT: 'maybe' })).toThrow(/SVC_AUDIT/)
  })
})
