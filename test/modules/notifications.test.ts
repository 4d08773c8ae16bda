// Issue 20, notifications: GET/PUT /api/account/notifications (session only), one signed JSON POST a
// day listing due items (never a value) to a receiver on loopback, retries with back-off, only
// http(s) URLs and never the vault itself; on the injectable clock.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { signUp, type Client } from '../support/client'
import { durableDocument, removeDir, startTestServer, storedVault, type TestServer } from '../support/server'

const DAY = 86_400_000
let clock = Date.parse('2026-06-01T08:00:00.000Z')
let server: TestServer
let alice: Client & { user: any }
const received: { headers: Headers; body: string }[] = []
let answerWith = 200
let receiver: ReturnType<typeof Bun.serve>

beforeAll(async () => {
  receiver = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      received.push({ headers: request.headers, body: await request.text() })
      return new Response('ok', { status: answerWith })
    },
  })
  // The receiver is on loopback: allowed here, as a home lab would (test/modules/webhook-ssrf.test.ts covers the refusals).
  server = await startTestServer({ now: () => clock, env: { SVC_WEBHOOK_ALLOW: '127.0.0.0/8' } })
  alice = await signUp(server.url)
})
afterAll(async () => {
  await server.stop()
  receiver.stop(true)
  removeDir(server.dataDir)
})

const hook = () => `http://127.0.0.1:${receiver.port}/hook`

test('settings are session only, start empty, and refuse non-http(s) URLs and the vault itself', async () => {
  expect((await alice.get('/api/account/notifications')).body).toEqual({ webhookUrl: null, hasSecret: false, lastDelivery: null })
  const key = await alice.keyClient(['entries:read'])
  expect((await key.get('/api/account/notifications')).body.code).toBe('SESSION_REQUIRED')
  expect((await key.put('/api/account/notifications', { webhookUrl: hook() })).body.code).toBe('SESSION_REQUIRED')
  const port = new URL(server.url).port
  for (const webhookUrl of [
    'ftp://example.com/x',
    'not a url',
    'file:///etc/passwd',
    `${server.url}/api/stats`,
    `http://localhost:${port}/x`,
    `http://[::1]:${port}/`,
    'http://user:pw@example.com/',
  ]) {
    const answer = await alice.put('/api/account/notifications', { webhookUrl })
    expect(answer.status).toBe(400)
    expect(answer.body.code).toBe('INVALID_WEBHOOK_URL')
  }
  expect((await alice.get('/api/account/notifications')).body.webhookUrl).toBeNull()
})

test('one signed POST a day lists due items by name, category and date, never a value; retries back off', async () => {
  const category = (await alice.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })).body
  await alice.post('/api/entries', { categoryId: category.id, name: 'shop', value: 'value-canary-1', expiresAt: new Date(clock + 5 * DAY).toISOString() })
  await alice.post('/api/entries', { categoryId: category.id, name: 'fine', value: 'value-canary-2' })
  const notifier = server.deps.notifier

  const set = await alice.put('/api/account/notifications', { webhookUrl: hook(), secret: 'hook-secret-canary' })
  expect(set.status).toBe(200)
  expect(set.body).toEqual({ webhookUrl: hook(), hasSecret: true, lastDelivery: null })
  // The first delivery goes at once.
  await notifier.deliver(alice.user.id)
  await Bun.sleep(0)
  await notifier.deliver(alice.user.id)
  expect(received).toHaveLength(1)
  const [first] = received
  expect(first.headers.get('content-type')).toBe('application/json')
  expect(first.headers.get('x-svc-signature')).toBe(createHmac('sha256', 'hook-secret-canary').update(first.body).digest('hex'))
  const payload = JSON.parse(first.body)
  expect(payload.items).toEqual([
    {
      kind: 'entry',
      name: 'shop',
      category: 'Stripe',
      environment: null,
      dueStatus: 'due_soon',
      reason: 'expiry',
      dueAt: new Date(clock + 5 * DAY).toISOString(),
    },
  ])
  expect(first.body).not.toContain('canary')
  const settings = await alice.get('/api/account/notifications')
  expect(settings.body.lastDelivery).toEqual({ at: new Date(clock).toISOString(), status: 'delivered', attempts: 1 })
  expect(settings.text).not.toContain('hook-secret')
  expect((await durableDocument(server, alice.user.id)).text).not.toContain('hook-secret-canary')

  // Once a day.
  clock += 3_600_000
  await notifier.tick()
  expect(received).toHaveLength(1)

  // The next day the receiver fails: retried after 1, then 5 minutes.
  clock += DAY
  answerWith = 500
  await notifier.tick()
  expect(received).toHaveLength(2)
  // Failed, nothing more (no HTTP status: it would map the network).
  expect((await alice.get('/api/account/notifications')).body.lastDelivery).toEqual({ at: new Date(clock).toISOString(), status: 'failed', attempts: 1 })
  clock += 30_000
  await notifier.tick()
  expect(received).toHaveLength(2)
  clock += 30_000
  await notifier.tick()
  expect(received).toHaveLength(3)
  answerWith = 200
  clock += 4 * 60_000
  await notifier.tick()
  expect(received).toHaveLength(3)
  clock += 60_000
  await notifier.tick()
  expect(received).toHaveLength(4)
  expect((await alice.get('/api/account/notifications')).body.lastDelivery).toMatchObject({ status: 'delivered', attempts: 3 })

  // Without a secret, no signature; null turns notifications off (a day on: the session re-authenticates first).
  await alice.reauth()
  expect((await alice.put('/api/account/notifications', { webhookUrl: hook(), secret: null })).body.hasSecret).toBe(false)
  clock += DAY
  await notifier.tick()
  expect(received.at(-1)!.headers.get('x-svc-signature')).toBeNull()
  await alice.reauth()
  expect((await alice.put('/api/account/notifications', { webhookUrl: null })).body).toEqual({ webhookUrl: null, hasSecret: false, lastDelivery: null })
  const count = received.length
  clock += DAY
  await notifier.tick()
  expect(received).toHaveLength(count)
})

test('nothing is sent on a day with nothing due', async () => {
  const bob = await signUp(server.url)
  const before = received.length
  await bob.put('/api/account/notifications', { webhookUrl: hook() })
  await server.deps.notifier.deliver(bob.user.id)
  await server.deps.notifier.tick()
  expect(received).toHaveLength(before)
})

test("a stored address that is the vault's own is refused at delivery too, and says so", async () => {
  const carol = await signUp(server.url)
  const category = (await carol.post('/api/categories', { name: 'K', keyType: 'simple', envVarName: 'K_KEY' })).body
  await carol.post('/api/entries', { categoryId: category.id, name: 'old', value: 'v', expiresAt: new Date(clock - DAY).toISOString() })
  expect((await carol.put('/api/account/notifications', { webhookUrl: hook() })).status).toBe(200)
  const notifier = server.deps.notifier
  await notifier.deliver(carol.user.id)
  // As if the vault had moved onto the address stored earlier (a new SVC_BASE_URL or port).
  const vault = await storedVault(server, carol.user.id)
  const selfUrl = `http://localhost:${new URL(server.url).port}/api/auth/me`
  await vault.update((data, write) =>
    write.set('notifications', { ...data.notifications!, webhookUrl: selfUrl, day: null, done: false, attempts: 0, nextAttemptAt: null }),
  )
  const before = received.length
  await notifier.deliver(carol.user.id)
  expect(received).toHaveLength(before)
  expect((await carol.get('/api/account/notifications')).body.lastDelivery).toEqual({ at: new Date(clock).toISOString(), status: 'failed', attempts: 1 })
  expect(server.logs.join('\n')).toContain('refused')
})
