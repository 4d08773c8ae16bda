// Two-factor sign-in (issue 16) against the real server over HTTP, with codes computed by oathtool
// and the server's clock moved by hand: setup, enable, the two-step sign-in, replay, drift,
// recovery codes, the challenge's lifetime, throttling, disable and regeneration.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Client, PASSWORD, signUp } from '../support/client'
import { ACCOUNTS, durableDocument, removeDir, startTestServer, type TestServer } from '../support/server'
import { enableTwoFactor, oathtool, post, setCookieLine, testClock } from './support'

const STEP = 30_000
const clock = testClock(Math.floor(Date.now() / STEP) * STEP + 10_000)
let server: TestServer

beforeAll(async () => {
  server = await startTestServer({ now: clock.now })
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

/** Password step: answers the challenge cookie (and checks no session came with it). */
async function passwordStep(email: string, password = PASSWORD): Promise<string> {
  const login = await post(server.url, '/api/auth/login', { email, password })
  expect(login.status).toBe(200)
  expect(login.body).toEqual({ twoFactorRequired: true })
  expect(login.cookies.svc_session).toBeUndefined()
  expect(login.cookies.svc_2fa).toBeTruthy()
  return login.cookies.svc_2fa
}

const secondStep = (challenge: string | undefined, body: unknown) => post(server.url, '/api/auth/login/2fa', body, challenge ? { svc_2fa: challenge } : {})

describe('setup and enable', () => {
  test('setup needs the password and answers a base32 secret, its otpauth URI and an SVG QR code', async () => {
    const alice = await signUp(server.url)
    const wrong = await alice.post('/api/account/2fa/setup', { password: 'not the password' })
    expect(wrong.status).toBe(401)
    expect(wrong.body.code).toBe('INVALID_CREDENTIALS')

    const setup = await alice.post('/api/account/2fa/setup', { password: PASSWORD })
    expect(setup.status).toBe(200)
    expect(Object.keys(setup.body).sort()).toEqual(['qr', 'secret', 'uri'])
    expect(setup.body.secret).toMatch(/^[A-Z2-7]{32}$/)
    const uri = new URL(setup.body.uri)
    expect(uri.protocol).toBe('otpauth:')
    expect(setup.body.uri.startsWith('otpauth://totp/')).toBe(true)
    expect(uri.searchParams.get('secret')).toBe(setup.body.secret)
    expect(setup.body.qr.trim().startsWith('<svg')).toBe(true)
    expect(setup.headers.get('cache-control')).toBe('no-store')
    expect((await alice.get('/api/auth/me')).body.user.twoFactorEnabled).toBe(false)

    // A wrong code does not enable it.
    const bad = await alice.post('/api/account/2fa/enable', { code: oathtool(setup.body.secret, clock.now() + 10 * STEP) })
    expect(bad.status).toBe(401)
    expect(bad.body.code).toBe('INVALID_TWO_FACTOR_CODE')
    expect((await alice.get('/api/auth/me')).body.user.twoFactorEnabled).toBe(false)

    const enabled = await alice.post('/api/account/2fa/enable', { code: oathtool(setup.body.secret, clock.now()) })
    expect(enabled.status).toBe(200)
    expect(enabled.body.recoveryCodes).toHaveLength(10)
    expect(new Set(enabled.body.recoveryCodes).size).toBe(10)
    expect((await alice.get('/api/auth/me')).body.user.twoFactorEnabled).toBe(true)

    // The seed is sealed and the recovery codes hashed: neither is in the accounts file (or its rows in the database).
    const stored = (await durableDocument(server, ACCOUNTS)).text
    expect(stored).not.toContain(setup.body.secret)
    for (const code of enabled.body.recoveryCodes) {
      expect(stored).not.toContain(code)
      expect(stored).not.toContain(code.replace(/-/g, ''))
    }
    // Enabling twice is refused; a new setup too while it is on.
    expect((await alice.post('/api/account/2fa/setup', { password: PASSWORD })).body.code).toBe('TWO_FACTOR_ALREADY_ENABLED')
  })

  test('enable without a setup is 409 TWO_FACTOR_SETUP_REQUIRED', async () => {
    const bob = await signUp(server.url)
    const answer = await bob.post('/api/account/2fa/enable', { code: '123456' })
    expect(answer.status).toBe(409)
    expect(answer.body.code).toBe('TWO_FACTOR_SETUP_REQUIRED')
  })
})

describe('signing in with two-factor on', () => {
  test('the password answers a challenge cookie, not a session; a code completes the sign-in once', async () => {
    const carol = await signUp(server.url)
    const { secret } = await enableTwoFactor(carol, clock.now())
    clock.advance(STEP)

    const login = await post(server.url, '/api/auth/login', { email: carol.email, password: PASSWORD })
    expect(login.body).toEqual({ twoFactorRequired: true })
    const line = setCookieLine(login.headers, 'svc_2fa')!
    const flags = line
      .toLowerCase()
      .split(';')
      .map((part) => part.trim())
    expect(flags).toContain('httponly')
    expect(flags).toContain('max-age=300')
    expect(login.cookies.svc_session).toBeUndefined()

    const code = oathtool(secret, clock.now())
    const done = await secondStep(login.cookies.svc_2fa, { code })
    expect(done.status).toBe(200)
    expect(done.body.user.email).toBe(carol.email)
    expect(Object.keys(done.body)).toEqual(['user'])
    const session = done.cookies.svc_session
    expect(session).toBeTruthy()
    expect((await new Client(server.url, { cookie: session }).get('/api/auth/me')).status).toBe(200)
    // The challenge cookie is cleared.
    expect(done.cookies.svc_2fa).toBe('')

    // The same code again, with a new challenge: a replay, refused.
    const replay = await secondStep(await passwordStep(carol.email), { code })
    expect(replay.status).toBe(401)
    expect(replay.body.code).toBe('INVALID_TWO_FACTOR_CODE')
    expect(replay.cookies.svc_session).toBeUndefined()
  })

  test('one step of clock drift either way is accepted, two are not', async () => {
    const dave = await signUp(server.url)
    const { secret } = await enableTwoFactor(dave, clock.now())
    clock.advance(10 * STEP)
    const now = clock.now()
    const tryCode = async (at: number) => (await secondStep(await passwordStep(dave.email), { code: oathtool(secret, at) })).status
    expect(await tryCode(now - 2 * STEP)).toBe(401)
    expect(await tryCode(now - STEP)).toBe(200)
    expect(await tryCode(now)).toBe(200)
    expect(await tryCode(now + STEP)).toBe(200)
    expect(await tryCode(now + 2 * STEP)).toBe(401)
    // Each of those steps' codes was used once.
    for (const at of [now - STEP, now, now + STEP]) expect(await tryCode(at)).toBe(401)
  })

  test('drift works in either order; the code that turned 2FA on still signs in once', async () => {
    const kay = await signUp(server.url)
    const setup = await kay.post('/api/account/2fa/setup', { password: PASSWORD })
    const code = oathtool(setup.body.secret, clock.now())
    expect((await kay.post('/api/account/2fa/enable', { code })).status).toBe(200)
    // Turning it on proved the app works; it was no sign-in, so the same code signs in once.
    expect((await secondStep(await passwordStep(kay.email), { code })).status).toBe(200)
    expect((await secondStep(await passwordStep(kay.email), { code })).status).toBe(401)
    clock.advance(10 * STEP)
    const now = clock.now()
    const tryCode = async (at: number) => (await secondStep(await passwordStep(kay.email), { code: oathtool(setup.body.secret, at) })).status
    expect(await tryCode(now + STEP)).toBe(200)
    expect(await tryCode(now - STEP)).toBe(200)
    expect(await tryCode(now - STEP)).toBe(401)
  })

  test('a missing, forged, expired or used challenge is 401 TWO_FACTOR_REQUIRED', async () => {
    const erin = await signUp(server.url)
    const { secret } = await enableTwoFactor(erin, clock.now())
    clock.advance(STEP)
    const code = () => oathtool(secret, clock.now())

    const missing = await secondStep(undefined, { code: code() })
    expect(missing.status).toBe(401)
    expect(missing.body.code).toBe('TWO_FACTOR_REQUIRED')
    expect((await secondStep('v1.forged.value', { code: code() })).body.code).toBe('TWO_FACTOR_REQUIRED')

    const stale = await passwordStep(erin.email)
    clock.advance(5 * 60_000 + 1000)
    const expired = await secondStep(stale, { code: code() })
    expect(expired.status).toBe(401)
    expect(expired.body.code).toBe('TWO_FACTOR_REQUIRED')

    const challenge = await passwordStep(erin.email)
    expect((await secondStep(challenge, { code: code() })).status).toBe(200)
    clock.advance(STEP)
    const reused = await secondStep(challenge, { code: code() })
    expect(reused.status).toBe(401)
    expect(reused.body.code).toBe('TWO_FACTOR_REQUIRED')
  })

  test('a wrong code keeps the challenge open; a recovery code works once, in any case and with or without dashes', async () => {
    const fay = await signUp(server.url)
    const { recoveryCodes } = await enableTwoFactor(fay, clock.now())
    const challenge = await passwordStep(fay.email)
    expect((await secondStep(challenge, { code: '000000' })).body.code).toBe('INVALID_TWO_FACTOR_CODE')
    const first = await secondStep(challenge, { recoveryCode: recoveryCodes[0].toUpperCase() })
    expect(first.status).toBe(200)
    const again = await secondStep(await passwordStep(fay.email), { recoveryCode: recoveryCodes[0] })
    expect(again.status).toBe(401)
    expect(again.body.code).toBe('INVALID_TWO_FACTOR_CODE')
    expect((await secondStep(await passwordStep(fay.email), { recoveryCode: recoveryCodes[1].replace(/-/g, '') })).status).toBe(200)
  })

  test('neither or both of code and recoveryCode is 400', async () => {
    const gus = await signUp(server.url)
    const { recoveryCodes } = await enableTwoFactor(gus, clock.now())
    const challenge = await passwordStep(gus.email)
    expect((await secondStep(challenge, {})).status).toBe(400)
    expect((await secondStep(challenge, { code: '123456', recoveryCode: recoveryCodes[0] })).status).toBe(400)
    expect((await secondStep(challenge, { code: '123456', extra: 1 })).status).toBe(400)
  })

  test('wrong codes are throttled like passwords, counted before the check (parallel guesses included)', async () => {
    const hal = await signUp(server.url)
    const { secret } = await enableTwoFactor(hal, clock.now())
    clock.advance(STEP)
    // One challenge takes 5 wrong codes (issue 36), parallel ones too; then it is dead.
    const challenge = await passwordStep(hal.email)
    const guesses = await Promise.all(Array.from({ length: 15 }, (_, i) => secondStep(challenge, { code: String(100000 + i) })))
    const codes = guesses.map((g) => g.body.code)
    expect(codes.filter((c) => c === 'INVALID_TWO_FACTOR_CODE')).toHaveLength(5)
    expect(codes.filter((c) => c === 'TWO_FACTOR_REQUIRED')).toHaveLength(10)
    expect((await secondStep(challenge, { code: oathtool(secret, clock.now()) })).body.code).toBe('TWO_FACTOR_REQUIRED')
    // Across challenges the throttle counts: 10 wrong codes from one address, then 429.
    const second = await passwordStep(hal.email)
    const more = await Promise.all(Array.from({ length: 5 }, (_, i) => secondStep(second, { code: String(200000 + i) })))
    expect(more.map((g) => g.status)).toEqual([401, 401, 401, 401, 401])
    // Even the right code waits now.
    const right = await secondStep(await passwordStep(hal.email), { code: oathtool(secret, clock.now()) })
    expect(right.status).toBe(429)
    expect(right.body.code).toBe('TOO_MANY_ATTEMPTS')
    expect(Number(right.headers.get('retry-after'))).toBeGreaterThan(0)
    // Once the window has passed, the right code gets in.
    clock.advance(15 * 60_000 + STEP)
    const later = await secondStep(await passwordStep(hal.email), { code: oathtool(secret, clock.now()) })
    expect(later.status).toBe(200)
  })
})

describe('disable and new recovery codes', () => {
  test('disable needs the password and a code; sign-in then needs no second step', async () => {
    const ida = await signUp(server.url)
    const { secret } = await enableTwoFactor(ida, clock.now())
    clock.advance(STEP)
    const wrongPassword = await ida.post('/api/account/2fa/disable', { password: 'wrong password', code: oathtool(secret, clock.now()) })
    expect(wrongPassword.status).toBe(401)
    expect(wrongPassword.body.code).toBe('INVALID_CREDENTIALS')
    const wrongCode = await ida.post('/api/account/2fa/disable', { password: PASSWORD, code: '000000' })
    expect(wrongCode.status).toBe(401)
    expect(wrongCode.body.code).toBe('INVALID_TWO_FACTOR_CODE')
    const off = await ida.post('/api/account/2fa/disable', { password: PASSWORD, code: oathtool(secret, clock.now()) })
    expect(off.status).toBe(204)
    expect((await ida.get('/api/auth/me')).body.user.twoFactorEnabled).toBe(false)
    const login = await post(server.url, '/api/auth/login', { email: ida.email, password: PASSWORD })
    expect(login.body.user.email).toBe(ida.email)
    expect(login.cookies.svc_session).toBeTruthy()
    expect((await ida.post('/api/account/2fa/disable', { password: PASSWORD, code: '000000' })).body.code).toBe('TWO_FACTOR_NOT_ENABLED')
  })

  test('disable with a recovery code; new recovery codes replace the old ones', async () => {
    const jo = await signUp(server.url)
    const { recoveryCodes } = await enableTwoFactor(jo, clock.now())
    const renewed = await jo.post('/api/account/2fa/recovery-codes', { password: PASSWORD, recoveryCode: recoveryCodes[0] })
    expect(renewed.status).toBe(200)
    expect(renewed.body.recoveryCodes).toHaveLength(10)
    expect((await secondStep(await passwordStep(jo.email), { recoveryCode: recoveryCodes[1] })).status).toBe(401)
    expect((await secondStep(await passwordStep(jo.email), { recoveryCode: renewed.body.recoveryCodes[0] })).status).toBe(200)
    const off = await jo.post('/api/account/2fa/disable', { password: PASSWORD, recoveryCode: renewed.body.recoveryCodes[1] })
    expect(off.status).toBe(204)
  })
})
