// Issue 36, item 3: webhooks reach only what they should. Every spelling of this machine and of
// the internal ranges is refused (at PUT when literal, at delivery always) unless SVC_WEBHOOK_ALLOW
// names the range; the connection goes to the address checked (DNS rebinding), redirects are not
// followed, lastDelivery says delivered or failed and nothing more, and one slow receiver does not
// hold up the others' deliveries.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { isPermittedAddress, postTo } from '../../src/modules/account/webhook-target'
import { parseWebhookAllow } from '../../src/config'
import { signUp, type Client } from '../support/client'
import { removeDir, startTestServer, storedVault, type TestServer } from '../support/server'

const DAY = 86_400_000
let clock = Date.parse('2026-06-01T08:00:00.000Z')
const received: { url: string; host: string | null }[] = []
let v4: ReturnType<typeof Bun.serve>
let v6: ReturnType<typeof Bun.serve>
let closed: number
let strict: TestServer
let homeLab: TestServer

const record = (request: Request) => {
  received.push({ url: request.url, host: request.headers.get('host') })
  return new Response('ok')
}

beforeAll(async () => {
  v4 = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: record })
  v6 = Bun.serve({ hostname: '::1', port: 0, fetch: record })
  // A port nobody listens on (for an allowed but unreachable target).
  const gone = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
  closed = gone.port!
  gone.stop(true)
  strict = await startTestServer({ now: () => clock })
  homeLab = await startTestServer({ now: () => clock, env: { SVC_WEBHOOK_ALLOW: '127.0.0.0/8' } })
})
afterAll(async () => {
  for (const server of [strict, homeLab]) {
    await server.stop()
    removeDir(server.dataDir)
  }
  v4.stop(true)
  v6.stop(true)
})

/** Every spelling of the loopback receivers (IPv4 at v4's port, IPv6 at v6's). */
const loopbackSpellings = () => {
  const p = v4.port
  const p6 = v6.port
  return [
    `http://127.0.0.1:${p}/hook`,
    `http://2130706433:${p}/hook`,
    `http://0177.0.0.1:${p}/hook`,
    `http://0x7f.1:${p}/hook`,
    `http://0x7f000001:${p}/hook`,
    `http://127.1:${p}/hook`,
    `http://127.0.0.1.:${p}/hook`,
    `http://017700000001:${p}/hook`,
    `http://0.0.0.0:${p}/hook`,
    `http://0:${p}/hook`,
    `http://localhost:${p}/hook`,
    `http://localhost.:${p}/hook`,
    `http://LOCALHOST:${p}/hook`,
    `http://hooks.localhost:${p}/hook`,
    `http://[::ffff:127.0.0.1]:${p}/hook`,
    `http://[0:0:0:0:0:ffff:7f00:1]:${p}/hook`,
    `http://[::1]:${p6}/hook`,
    `http://[0:0:0:0:0:0:0:1]:${p6}/hook`,
    `http://[::]:${p6}/hook`,
  ]
}

/** A user with something due, so that a delivery has something to send. */
async function userWithDueItem(server: TestServer): Promise<Client & { user: any }> {
  const user = await signUp(server.url)
  const category = (await user.post('/api/categories', { name: 'K', keyType: 'simple', envVarName: 'K_KEY' })).body
  await user.post('/api/entries', { categoryId: category.id, name: 'old', value: 'v', expiresAt: new Date(clock - DAY).toISOString() })
  return user
}

/** Sets the webhook and runs the delivery it starts: the PUT's status and whether the receivers got a request. */
async function tryWebhook(server: TestServer, user: Client & { user: any }, webhookUrl: string) {
  const before = received.length
  // Cleared first: spellings of one address are one URL once parsed, and a new URL starts its day afresh.
  await user.put('/api/account/notifications', { webhookUrl: null })
  const put = await user.put('/api/account/notifications', { webhookUrl })
  if (put.status === 200) {
    const notifier = server.deps.notifier
    await Bun.sleep(0)
    await notifier.deliver(user.user.id)
  }
  return { status: put.status, code: put.body.code, reached: received.length > before }
}

describe('without SVC_WEBHOOK_ALLOW', () => {
  test('no spelling of this machine receives a delivery', async () => {
    const user = await userWithDueItem(strict)
    for (const url of loopbackSpellings()) {
      const outcome = await tryWebhook(strict, user, url)
      expect({ url, reached: outcome.reached }).toEqual({ url, reached: false })
      // A literal address or local name is refused at once.
      expect({ url, status: outcome.status, code: outcome.code }).toEqual({ url, status: 400, code: 'INVALID_WEBHOOK_URL' })
    }
    expect(received).toHaveLength(0)
  })

  test('private, link-local, metadata, unique-local, multicast and reserved addresses are refused at PUT', async () => {
    const user = await signUp(strict.url)
    const urls = [
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00:ec2::254]/latest/meta-data/',
      'http://10.0.0.1/',
      'http://172.16.5.4:8080/',
      'http://192.168.1.1/',
      'http://100.100.100.200/',
      'http://[fd12:3456::1]/',
      'http://[fe80::1]/',
      'http://224.0.0.1/',
      'http://[ff02::1]/',
      'http://255.255.255.255/',
      'http://[::ffff:10.0.0.1]/',
      'http://[::ffff:169.254.169.254]/',
      'http://[64:ff9b::a9fe:a9fe]/',
      'http://0xa9fea9fe/',
      'http://0251.0376.0251.0376/',
    ]
    for (const webhookUrl of urls) {
      const answer = await user.put('/api/account/notifications', { webhookUrl })
      expect({ webhookUrl, status: answer.status, code: answer.body.code }).toEqual({ webhookUrl, status: 400, code: 'INVALID_WEBHOOK_URL' })
    }
    // Public addresses and names are accepted.
    for (const webhookUrl of ['https://hooks.example.com/vault', 'http://93.184.215.14/x', 'http://[2606:4700::1111]/x']) {
      expect((await user.put('/api/account/notifications', { webhookUrl })).status).toBe(200)
    }
  })

  test('a stored internal address (set before the check, or by a name) is refused at delivery, and lastDelivery says only "failed"', async () => {
    const user = await userWithDueItem(strict)
    const notifier = strict.deps.notifier
    const vault = await storedVault(strict, user.user.id)
    for (const url of loopbackSpellings()) {
      await vault.update((_, write) =>
        write.set('notifications', { webhookUrl: url, encryptedSecret: null, lastDelivery: null, day: null, done: false, attempts: 0, nextAttemptAt: null }),
      )
      const before = received.length
      await notifier.deliver(user.user.id)
      expect({ url, reached: received.length > before }).toEqual({ url, reached: false })
      expect((await user.get('/api/account/notifications')).body.lastDelivery).toEqual({ at: new Date(clock).toISOString(), status: 'failed', attempts: 1 })
    }
  })
})

describe('with SVC_WEBHOOK_ALLOW=127.0.0.0/8 (a home lab)', () => {
  test('every spelling of this machine receives its delivery', async () => {
    const user = await userWithDueItem(homeLab)
    for (const url of loopbackSpellings()) {
      const outcome = await tryWebhook(homeLab, user, url)
      expect({ url, status: outcome.status, reached: outcome.reached }).toEqual({ url, status: 200, reached: true })
    }
    // The request names the host of the URL, not the address connected to.
    expect(received.at(-1)!.host).toBe(`[::]:${v6.port}`)
    // Still never the vault itself, nor another internal range.
    const port = new URL(homeLab.url).port
    for (const webhookUrl of [
      `http://127.0.0.1:${port}/api/auth/me`,
      `http://localhost.:${port}/`,
      `http://[::ffff:127.0.0.1]:${port}/`,
      'http://169.254.169.254/',
      'http://10.0.0.1/',
    ]) {
      expect((await user.put('/api/account/notifications', { webhookUrl })).body.code).toBe('INVALID_WEBHOOK_URL')
    }
  })

  test('a failure says "failed" and nothing more; a redirect is not followed', async () => {
    const user = await userWithDueItem(homeLab)
    const notifier = homeLab.deps.notifier
    // Nobody listening.
    await user.put('/api/account/notifications', { webhookUrl: `http://127.0.0.1:${closed}/hook` })
    await Bun.sleep(0)
    await notifier.deliver(user.user.id)
    const unreachable = await user.get('/api/account/notifications')
    expect(unreachable.body.lastDelivery).toEqual({ at: new Date(clock).toISOString(), status: 'failed', attempts: 1 })
    expect(JSON.stringify(unreachable.body.lastDelivery)).not.toMatch(/connect|timed|http|refused|status": *\d/i)
    // A redirect to the metadata address (or anywhere): a failure, not followed.
    const redirecting = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: () => new Response(null, { status: 302, headers: { location: `http://127.0.0.1:${v4.port}/redirected` } }),
    })
    try {
      const before = received.length
      await user.put('/api/account/notifications', { webhookUrl: `http://127.0.0.1:${redirecting.port}/hook` })
      await Bun.sleep(0)
      await notifier.deliver(user.user.id)
      expect(received).toHaveLength(before)
      expect((await user.get('/api/account/notifications')).body.lastDelivery).toEqual({ at: new Date(clock).toISOString(), status: 'failed', attempts: 1 })
    } finally {
      redirecting.stop(true)
    }
  })

  test('one slow receiver does not hold up the others', async () => {
    let release!: () => void
    const released = new Promise<void>((done) => (release = done))
    let slowCalls = 0
    const slow = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch() {
        slowCalls++
        await released
        return new Response('late')
      },
    })
    let arrived!: () => void
    const fastArrived = new Promise<void>((done) => (arrived = done))
    const fast = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch() {
        arrived()
        return new Response('ok')
      },
    })
    try {
      const notifier = homeLab.deps.notifier
      // The slow one first: a round one after another would wait for it.
      const sleepy = await userWithDueItem(homeLab)
      const quick = await userWithDueItem(homeLab)
      await sleepy.put('/api/account/notifications', { webhookUrl: `http://127.0.0.1:${slow.port}/hook` })
      await quick.put('/api/account/notifications', { webhookUrl: `http://127.0.0.1:${fast.port}/hook` })
      clock += DAY
      const round = notifier.tick()
      const outcome = await Promise.race([fastArrived.then(() => 'fast delivered'), Bun.sleep(5000).then(() => 'held up')])
      expect(outcome).toBe('fast delivered')
      expect(slowCalls).toBeGreaterThan(0)
      release()
      await round
    } finally {
      release()
      slow.stop(true)
      fast.stop(true)
    }
  })
})

test('the connection goes to the address checked, whatever the name resolves to later (DNS rebinding)', async () => {
  // A name that resolves to nothing at all: the request still reaches the checked address, so no
  // second resolution took place, and it names the host it was meant for.
  const before = received.length
  const check = { allow: parseWebhookAllow('127.0.0.0/8'), isSelf: () => false }
  const outcome = await postTo(new URL(`http://rebound.invalid:${v4.port}/hook`), '127.0.0.1', check, { 'content-type': 'application/json' }, '{}', 5000)
  expect(outcome).toBe('delivered')
  expect(received.slice(before)).toEqual([{ url: expect.stringContaining('/hook'), host: `rebound.invalid:${v4.port}` }])
})

test('the address policy: mapped and NAT64 forms are judged by the IPv4 address they carry', () => {
  for (const address of [
    '127.0.0.1',
    '::1',
    '::',
    '0.0.0.0',
    '::ffff:7f00:1',
    '::ffff:127.0.0.1',
    '::7f00:1',
    '10.1.2.3',
    '::ffff:a01:203',
    '64:ff9b::a01:203',
    'fe80::1',
    'fd00::1',
    'ff02::1',
    '169.254.169.254',
    '100.64.0.1',
    '2002:7f00:1::1',
    '2001:0:4136:e378::1',
    '::ffff:5db8:d70e',
  ]) {
    expect({ address, permitted: isPermittedAddress(address, null) }).toEqual({ address, permitted: false })
  }
  for (const address of ['93.184.215.14', '2606:4700::1111', '64:ff9b::5db8:d70e']) {
    expect({ address, permitted: isPermittedAddress(address, null) }).toEqual({ address, permitted: true })
  }
  const lab = parseWebhookAllow('192.168.1.0/24')
  expect(isPermittedAddress('192.168.1.20', lab)).toBe(true)
  expect(isPermittedAddress('::ffff:192.168.1.20', lab)).toBe(true)
  expect(isPermittedAddress('192.168.2.20', lab)).toBe(false)
  expect(isPermittedAddress('127.0.0.1', lab)).toBe(false)
})

test('a peer reported in its IPv4-mapped form is judged as the IPv4 address it is', async () => {
  const { unmapped } = await import('../../src/modules/account/webhook-target')
  expect(unmapped('::ffff:93.184.215.14')).toBe('93.184.215.14')
  expect(unmapped('::ffff:5db8:d70e')).toBe('93.184.215.14')
  expect(isPermittedAddress(unmapped('::ffff:93.184.215.14'), null)).toBe(true)
  expect(isPermittedAddress(unmapped('::ffff:127.0.0.1'), null)).toBe(false)
  expect(unmapped('2606:4700::1111')).toBe('2606:4700::1111')
})
