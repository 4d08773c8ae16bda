// Issue 36, item 7: with the password, one `svc_2fa` challenge took unlimited guesses and the
// account's throttle allowed 100 per 15 minutes from many addresses, with no lock-out or notice.
// Now a challenge dies after 5 wrong codes, and 20 wrong codes within a day lock the account's
// second step for 15 minutes, recorded in its audit log and sent to its webhook. On the
// injectable clock; codes from oathtool; wrong codes from many addresses (SVC_TRUST_PROXY).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { PASSWORD, signUp } from '../support/client'
import { removeDir, startTestServer, type TestServer } from '../support/server'
import { enableTwoFactor, oathtool, post, testClock } from './support'

const STEP = 30_000
const HOUR = 3_600_000
const clock = testClock(Math.floor(Date.now() / STEP) * STEP + 10_000)
let server: TestServer
const received: { headers: Headers; body: string }[] = []
let receiver: ReturnType<typeof Bun.serve>

beforeAll(async () => {
  receiver = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      received.push({ headers: request.headers, body: await request.text() })
      return new Response('ok')
    },
  })
  // SVC_WEBHOOK_ALLOW: the receiver runs on loopback (webhooks refuse private targets otherwise).
  server = await startTestServer({ now: clock.now, env: { SVC_TRUST_PROXY: 'loopback', SVC_WEBHOOK_ALLOW: '127.0.0.0/8' } })
})
afterAll(async () => {
  await server.stop()
  receiver.stop(true)
  removeDir(server.dataDir)
})

let addressCount = 0
/** Each call a client address of its own: the per-address throttle stays out of the way. */
const freshAddress = () => ({ 'x-forwarded-for': `198.18.${Math.floor(++addressCount / 250)}.${addressCount % 250}` })

async function passwordStep(email: string, headers = freshAddress()): Promise<string> {
  const login = await post(server.url, '/api/auth/login', { email, password: PASSWORD }, {}, headers)
  expect(login.body).toEqual({ twoFactorRequired: true })
  return login.cookies.svc_2fa
}
const secondStep = (challenge: string, body: unknown, headers = freshAddress()) =>
  post(server.url, '/api/auth/login/2fa', body, { svc_2fa: challenge }, headers)

/** A 6-digit code that is not the right one now (nor one step either side). */
function wrongCode(secret: string, n: number): string {
  const near = [-STEP, 0, STEP].map((d) => oathtool(secret, clock.now() + d))
  let code = String(100000 + ((n * 7919) % 900000))
  while (near.includes(code)) code = String(100000 + ((Number(code) + 1) % 900000))
  return code
}

/** `count` wrong codes, 5 per challenge (each challenge from an address of its own). */
async function wrongCodes(email: string, secret: string, count: number): Promise<number[]> {
  const statuses: number[] = []
  for (let done = 0; done < count; ) {
    const challenge = await passwordStep(email)
    const batch = Math.min(5, count - done)
    for (let i = 0; i < batch; i++, done++) statuses.push((await secondStep(challenge, { code: wrongCode(secret, done) })).status)
  }
  return statuses
}

describe('a two-factor challenge', () => {
  test('dies after 5 wrong codes, even with guesses sent in parallel; the right code then needs the password step again', async () => {
    const owner = await signUp(server.url)
    const { secret } = await enableTwoFactor(owner, clock.now())
    clock.advance(STEP)
    const challenge = await passwordStep(owner.email)
    for (let i = 0; i < 5; i++) {
      const wrong = await secondStep(challenge, { code: wrongCode(secret, i) })
      expect([wrong.status, wrong.body.code]).toEqual([401, 'INVALID_TWO_FACTOR_CODE'])
    }
    const dead = await secondStep(challenge, { code: oathtool(secret, clock.now()) })
    expect([dead.status, dead.body.code]).toEqual([401, 'TWO_FACTOR_REQUIRED'])
    expect(dead.cookies.svc_session).toBeUndefined()

    // Twelve at once on a fresh challenge: five are checked, the rest find it dead.
    const parallel = await passwordStep(owner.email)
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => secondStep(parallel, { code: wrongCode(secret, 100 + i) })))
    const codes = answers.map((answer) => answer.body.code)
    expect(codes.filter((code) => code === 'INVALID_TWO_FACTOR_CODE')).toHaveLength(5)
    expect(codes.filter((code) => code === 'TWO_FACTOR_REQUIRED')).toHaveLength(7)
    expect((await secondStep(parallel, { code: oathtool(secret, clock.now()) })).body.code).toBe('TWO_FACTOR_REQUIRED')

    // A right code after 4 wrong ones still signs in (the fifth try), and a new challenge starts afresh.
    const again = await passwordStep(owner.email)
    for (let i = 0; i < 4; i++) expect((await secondStep(again, { code: wrongCode(secret, 200 + i) })).status).toBe(401)
    const signedIn = await secondStep(again, { code: oathtool(secret, clock.now()) })
    expect(signedIn.status).toBe(200)
    expect(signedIn.cookies.svc_session).toBeTruthy()
  })
})

describe("an account's second step", () => {
  test("locks for 15 minutes after 20 wrong codes within a day: recorded, told to the owner by the dashboard's events and the webhook", async () => {
    const owner = await signUp(server.url)
    const { secret, recoveryCodes } = await enableTwoFactor(owner, clock.now())
    const set = await owner.put('/api/account/notifications', { webhookUrl: `http://127.0.0.1:${receiver.port}/alerts`, secret: 'alert-secret' })
    expect(set.status).toBe(200)
    clock.advance(STEP)
    const sentBefore = received.length

    // 19 wrong codes over 20 hours, from many addresses: no lock yet.
    expect(await wrongCodes(owner.email, secret, 10)).toEqual(Array(10).fill(401))
    clock.advance(10 * HOUR)
    expect(await wrongCodes(owner.email, secret, 9)).toEqual(Array(9).fill(401))
    clock.advance(10 * HOUR)
    expect((await owner.get('/api/audit?action=auth.twofa_locked')).body.items).toEqual([])
    // The 20th locks it.
    const challenge = await passwordStep(owner.email)
    const twentieth = await secondStep(challenge, { code: wrongCode(secret, 19) })
    expect([twentieth.status, twentieth.body.code]).toEqual([401, 'INVALID_TWO_FACTOR_CODE'])
    // Even the right code, or a recovery code, from anywhere, on a fresh challenge: 429 for 15 minutes.
    for (const body of [{ code: oathtool(secret, clock.now()) }, { recoveryCode: recoveryCodes[0] }]) {
      const locked = await secondStep(await passwordStep(owner.email), body)
      expect([locked.status, locked.body.code]).toEqual([429, 'TOO_MANY_ATTEMPTS'])
      expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(14 * 60)
      expect(Number(locked.headers.get('retry-after'))).toBeLessThanOrEqual(15 * 60)
      expect(locked.cookies.svc_session).toBeUndefined()
    }

    // Recorded in the account's log (what the dashboard shows), never a code.
    const [event] = (await owner.get('/api/audit?action=auth.twofa_locked')).body.items
    expect(event).toMatchObject({
      action: 'auth.twofa_locked',
      outcome: 'denied',
      details: { wrongCodes: 20, lockedUntil: new Date(clock.now() + 15 * 60_000).toISOString() },
    })
    expect(JSON.stringify(event)).not.toContain(wrongCode(secret, 19))
    // And sent to the webhook, signed.
    for (let i = 0; i < 500 && received.length === sentBefore; i++) await Bun.sleep(10)
    expect(received.length).toBe(sentBefore + 1)
    const alert = received.at(-1)!
    expect(JSON.parse(alert.body)).toMatchObject({ event: 'two_factor_locked', wrongCodes: 20, lockedUntil: event.details.lockedUntil })
    expect(alert.headers.get('x-svc-signature')).toBe(createHmac('sha256', 'alert-secret').update(alert.body).digest('hex'))

    // 15 minutes on, the right code gets in; one more wrong code (20 within the day) locks it again,
    // recorded again, but the webhook is not sent again the same day.
    clock.advance(15 * 60_000 + STEP)
    expect((await secondStep(await passwordStep(owner.email), { code: oathtool(secret, clock.now()) })).status).toBe(200)
    expect((await secondStep(await passwordStep(owner.email), { code: wrongCode(secret, 30) })).status).toBe(401)
    clock.advance(STEP)
    expect((await secondStep(await passwordStep(owner.email), { code: oathtool(secret, clock.now()) })).status).toBe(429)
    expect((await owner.get('/api/audit?action=auth.twofa_locked')).body.items).toHaveLength(2)
    await Bun.sleep(50)
    expect(received.length).toBe(sentBefore + 1)

    // A day on, the old wrong codes no longer count: wrong codes answer 401, not a lock.
    clock.advance(25 * HOUR)
    expect(await wrongCodes(owner.email, secret, 5)).toEqual(Array(5).fill(401))
    expect((await secondStep(await passwordStep(owner.email), { code: oathtool(secret, clock.now()) })).status).toBe(200)
  }, 120_000)

  test('the lock holds against guesses in parallel: at most 20 wrong codes are checked', async () => {
    const owner = await signUp(server.url)
    const { secret } = await enableTwoFactor(owner, clock.now())
    clock.advance(STEP)
    // 8 challenges, 5 codes each, all at once: 40 guesses.
    const challenges = await Promise.all(Array.from({ length: 8 }, () => passwordStep(owner.email)))
    const answers = await Promise.all(
      challenges.flatMap((challenge, c) => Array.from({ length: 5 }, (_, i) => secondStep(challenge, { code: wrongCode(secret, c * 5 + i) }))),
    )
    const codes = answers.map((answer) => answer.body.code)
    expect(codes.filter((code) => code === 'INVALID_TWO_FACTOR_CODE')).toHaveLength(20)
    expect(codes.filter((code) => code === 'TOO_MANY_ATTEMPTS')).toHaveLength(20)
    expect((await owner.get('/api/audit?action=auth.twofa_locked')).body.items).toHaveLength(1)
  }, 60_000)
})
