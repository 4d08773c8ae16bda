// Issue 34: what lived only in one process's memory counts across instances on one database
// (src/store/shared-state.ts, src/store/postgres/state.ts). Two instances = two servers on one
// fresh database; the test alternates its requests between them. One test per rule.
import { afterEach, expect, test } from 'bun:test'
import { lifecyclePass } from '../../src/modules/lifecycle/jobs'
import type { PgStore } from '../../src/store/postgres/store'
import { enableTwoFactor, oathtool, post, testClock } from '../account/support'
import { SoftPasskey } from '../audit/soft-passkey'
import { Client, PASSWORD, signUp, uniqueEmail } from '../support/client'
import { freshDatabase, TEST_POSTGRES } from '../support/postgres'
import { describeNeeding } from '../support/requirements'
import { removeDir, startTestServer, type TestServer } from '../support/server'

const missing = TEST_POSTGRES ? null : 'SVC_TEST_POSTGRES is not set (a PostgreSQL cluster: scripts/test.sh starts one)'
if (missing) console.warn(`two instances on one database: skipped, ${missing}`)

let running: TestServer[] = []

/** Two instances on one fresh database, with the same clock (hashing at the real cost: requests race its checks). */
async function twoInstances(env: Record<string, string> = {}, now?: () => number): Promise<[TestServer, TestServer]> {
  const database = await freshDatabase()
  const a = await startTestServer({ now, env: { SVC_DATABASE_URL: database, ...env }, realPasswordCost: true })
  const b = await startTestServer({ now, env: { SVC_DATABASE_URL: database, ...env }, realPasswordCost: true })
  running.push(a, b)
  return [a, b]
}

afterEach(async () => {
  for (const server of running) {
    await server.stop()
    removeDir(server.dataDir)
  }
  running = []
})

/** Runs a pass named `name` on `server` that lasts until `release()`; resolves once it holds the lock. */
async function hold(server: TestServer, name: string): Promise<{ release(): Promise<void> }> {
  let started = () => {}
  let finish = () => {}
  const running = new Promise<void>((resolve) => (started = resolve))
  const pass = server.deps.store.state.exclusive(name, () => {
    started()
    return new Promise<void>((resolve) => (finish = resolve))
  })
  await running
  return {
    async release() {
      finish()
      await pass
    },
  }
}

const from = (address: string) => ({ 'x-forwarded-for': address })

describeNeeding(missing)('two instances on one database', () => {
  const it = (name: string, fn: () => Promise<void>) => test(name, fn, 90_000)

  it('300 parallel guesses spread over two instances: still exactly 10 password checks, the rest 429', async () => {
    const clock = testClock(Date.now())
    const [a, b] = await twoInstances({ SVC_TRUST_PROXY: 'loopback' }, clock.now)
    const victim = await signUp(a.url)
    const checks = () => a.deps.accounts.passwordChecks + b.deps.accounts.passwordChecks
    const before = checks()
    const answers = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        post(i % 2 ? a.url : b.url, '/api/auth/login', { email: victim.email, password: `guess ${i}` }, {}, from('198.51.100.1')),
      ),
    )
    const statuses = answers.map((answer) => answer.status)
    expect(checks() - before).toBe(10)
    expect(statuses.filter((status) => status === 401)).toHaveLength(10)
    expect(statuses.filter((status) => status === 429)).toHaveLength(290)
    // Both instances refuse even the right password from there now; another address still gets in.
    for (const server of [a, b]) {
      const right = await post(server.url, '/api/auth/login', { email: victim.email, password: PASSWORD }, {}, from('198.51.100.1'))
      expect(right.status).toBe(429)
      expect(Number(right.headers.get('retry-after'))).toBeGreaterThan(0)
    }
    expect((await post(b.url, '/api/auth/login', { email: victim.email, password: PASSWORD }, {}, from('198.51.100.2'))).status).toBe(200)
    // After the window, the address may try again on either.
    clock.advance(15 * 60_000 + 1000)
    expect((await post(b.url, '/api/auth/login', { email: victim.email, password: PASSWORD }, {}, from('198.51.100.1'))).status).toBe(200)
  })

  it('the sign-up limit counts across instances: SVC_REGISTER_LIMIT accounts an hour from one address, parallel included', async () => {
    const clock = testClock(Date.now())
    const [a, b] = await twoInstances({ SVC_TRUST_PROXY: 'loopback', SVC_REGISTER_LIMIT: '3' }, clock.now)
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        post(i % 2 ? a.url : b.url, '/api/auth/register', { email: uniqueEmail('limit'), password: PASSWORD }, {}, from('203.0.113.5')),
      ),
    )
    const statuses = answers.map((answer) => answer.status)
    expect(statuses.filter((status) => status === 201)).toHaveLength(3)
    expect(statuses.filter((status) => status === 429)).toHaveLength(9)
    // Another address is not held back; the hour over, this one registers again.
    expect((await post(a.url, '/api/auth/register', { email: uniqueEmail('other'), password: PASSWORD }, {}, from('203.0.113.6'))).status).toBe(201)
    clock.advance(60 * 60_000 + 1000)
    expect((await post(b.url, '/api/auth/register', { email: uniqueEmail('later'), password: PASSWORD }, {}, from('203.0.113.5'))).status).toBe(201)
  })

  it('a two-factor code is accepted once across instances, even sent to both at once', async () => {
    const clock = testClock()
    const [a, b] = await twoInstances({}, clock.now)
    const alice = await signUp(a.url)
    const { secret } = await enableTwoFactor(alice, clock.now())
    clock.advance(60_000)
    const onA = await post(a.url, '/api/auth/login', { email: alice.email, password: PASSWORD })
    const onB = await post(b.url, '/api/auth/login', { email: alice.email, password: PASSWORD })
    expect([onA.body, onB.body]).toEqual([{ twoFactorRequired: true }, { twoFactorRequired: true }])
    const code = oathtool(secret, clock.now())
    const answers = await Promise.all([
      post(a.url, '/api/auth/login/2fa', { code }, { svc_2fa: onA.cookies.svc_2fa }),
      post(b.url, '/api/auth/login/2fa', { code }, { svc_2fa: onB.cookies.svc_2fa }),
    ])
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 401])
    expect(answers.find((answer) => answer.status === 401)!.body.code).toBe('INVALID_TWO_FACTOR_CODE')
    // A challenge made on one instance is finished on the other (the next step's code).
    clock.advance(30_000)
    const started = await post(b.url, '/api/auth/login', { email: alice.email, password: PASSWORD })
    const finished = await post(a.url, '/api/auth/login/2fa', { code: oathtool(secret, clock.now()) }, { svc_2fa: started.cookies.svc_2fa })
    expect(finished.status).toBe(200)
    // ...once: the used challenge is refused on the instance that issued it.
    const replay = await post(b.url, '/api/auth/login/2fa', { code: oathtool(secret, clock.now()) }, { svc_2fa: started.cookies.svc_2fa })
    expect(replay.body.code).toBe('TWO_FACTOR_REQUIRED')
  })

  it('a passkey challenge made on one instance is answered on the other, once', async () => {
    const [a, b] = await twoInstances()
    const alice = await signUp(a.url)
    const options = await alice.post('/api/account/passkeys/options')
    expect(options.status).toBe(200)
    const passkey = new SoftPasskey(a.url)
    const onB = new Client(b.url, alice.credentials)
    const registered = await onB.post('/api/account/passkeys', { name: 'laptop', response: passkey.register(options.body) })
    expect(registered.status).toBeLessThan(300)
    // The registration challenge was taken: the same answer again is refused on either instance.
    const again = await alice.post('/api/account/passkeys', { name: 'again', response: passkey.register(options.body) })
    expect(again.body.code).toBe('PASSKEY_FAILED')

    const signInOptions = await post(a.url, '/api/auth/passkey/options', {})
    const assertion = passkey.signIn(signInOptions.body)
    const signedIn = await post(b.url, '/api/auth/passkey/login', { response: assertion }, { svc_passkey: signInOptions.cookies.svc_passkey })
    expect(signedIn.status).toBe(200)
    expect(signedIn.body.user.email).toBe(alice.email)
    const replayed = await post(
      a.url,
      '/api/auth/passkey/login',
      { response: passkey.signIn(signInOptions.body) },
      { svc_passkey: signInOptions.cookies.svc_passkey },
    )
    expect(replayed.status).toBe(401)
    expect(replayed.body.code).toBe('PASSKEY_FAILED')
  })

  it('a device sign-in started on one instance is approved and polled on the others', async () => {
    const clock = testClock()
    const [a, b] = await twoInstances({}, clock.now)
    const alice = await signUp(b.url)
    const started = await post(a.url, '/api/auth/device', { deviceName: 'build box' })
    expect(started.status).toBe(200)
    const { deviceCode, userCode } = started.body
    const pending = await post(b.url, '/api/auth/device/token', { deviceCode })
    expect(pending.body.code).toBe('AUTHORIZATION_PENDING')
    const shown = await new Client(b.url, alice.credentials).get(`/api/auth/device/${userCode}`)
    expect(shown.status).toBe(200)
    expect(shown.body.deviceName).toBe('build box')
    // Polling too fast is seen by the other instance too.
    const tooFast = await post(a.url, '/api/auth/device/token', { deviceCode })
    expect(tooFast.body.code).toBe('SLOW_DOWN')
    const approved = await new Client(a.url, alice.credentials).post(`/api/auth/device/${userCode}/approve`, null)
    expect(approved.status).toBe(200)
    clock.advance(15_000)
    const token = await post(b.url, '/api/auth/device/token', { deviceCode })
    expect(token.status).toBe(200)
    expect(token.body.key).toStartWith('svc_')
    expect((await new Client(a.url, { key: token.body.key }).get('/api/auth/key')).status).toBe(200)
    // Collected once: a second poll, on either instance, is refused.
    clock.advance(15_000)
    for (const server of [a, b]) expect((await post(server.url, '/api/auth/device/token', { deviceCode })).body.code).toBe('INVALID_GRANT')
    // The database holds neither code (keys are hashes; the request holds no code).
    const text = JSON.stringify(await (a.deps.store as PgStore).db.run((sql) => sql`SELECT * FROM svc_state_entries`))
    expect(text).not.toContain(deviceCode)
    expect(text).not.toContain(userCode.replace('-', ''))
  })

  it('the daily webhook round and the trash purge run on one instance at a time: one delivery, not one per instance', async () => {
    const received: string[] = []
    const receiver = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(request) {
        received.push(await request.text())
        return new Response('ok')
      },
    })
    try {
      let clock = Date.UTC(2026, 0, 15, 12, 0, 0)
      const now = () => clock
      const [a, b] = await twoInstances({ SVC_WEBHOOK_ALLOW: '127.0.0.0/8' }, now)
      const alice = await signUp(a.url)
      const category = (await alice.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })).body
      await alice.post('/api/entries', { categoryId: category.id, name: 'shop', value: 'v', expiresAt: new Date(clock + 5 * 86_400_000).toISOString() })
      expect((await alice.put('/api/account/notifications', { webhookUrl: `http://127.0.0.1:${receiver.port}/hook` })).status).toBe(200)
      // The first delivery goes at once, from the instance that took the address.
      await a.deps.notifier.deliver(alice.user.id)
      expect(received).toHaveLength(1)
      // Both instances know the webhook (the background pass), and both start the next day's round at once.
      await Promise.all([a.deps.notifier.scan(), b.deps.notifier.scan()])
      clock += 86_400_000
      await Promise.all([a.deps.notifier.tick(), b.deps.notifier.tick(), a.deps.notifier.tick(), b.deps.notifier.tick()])
      await Promise.all([a.deps.notifier.tick(), b.deps.notifier.tick()])
      expect(received).toHaveLength(2)

      // While one instance holds a pass, the other's is skipped; afterwards it runs.
      const trash = await hold(a, 'trash-purge')
      expect(await lifecyclePass(b.deps)).toBeNull()
      await trash.release()
      expect(await lifecyclePass(b.deps)).toBe(0)
      const round = await hold(a, 'webhook-round')
      expect(await b.deps.notifier.tick()).toBe(false)
      await round.release()
      expect(await b.deps.notifier.tick()).toBe(true)
    } finally {
      receiver.stop(true)
    }
  })
})
