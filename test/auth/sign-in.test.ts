// The end of every sign-in is written once (src/auth/sign-in.ts): the session and the audit event
// name the same method, and a refusal is recorded by one rule (malformed input is not an attempt).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Client, PASSWORD, signUp } from '../support/client'
import { removeDir, startTestServer, type TestServer } from '../support/server'
import { enableTwoFactor, oathtool, post, testClock } from '../account/support'

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

test('a password sign-in and a two-factor one name their method alike on the session and in the audit log', async () => {
  const alice = await signUp(server.url)
  const password = await post(server.url, '/api/auth/login', { email: alice.email, password: PASSWORD })
  expect(password.status).toBe(200)
  const { secret } = await enableTwoFactor(alice, clock.now())

  clock.advance(STEP)
  const challenge = (await post(server.url, '/api/auth/login', { email: alice.email, password: PASSWORD })).cookies.svc_2fa
  // Neither code nor recovery code: bad input, not an attempt (not recorded).
  expect((await post(server.url, '/api/auth/login/2fa', {}, { svc_2fa: challenge })).status).toBe(400)
  const twoFactor = await post(server.url, '/api/auth/login/2fa', { code: oathtool(secret, clock.now()) }, { svc_2fa: challenge })
  expect(twoFactor.status).toBe(200)

  const sessions = server.deps.accounts.liveSessions(alice.user.id).map((s) => s.signInMethod)
  expect(sessions).toEqual(['register', 'password', '2fa'])
  const viaTwoFactor = new Client(server.url, { cookie: twoFactor.cookies.svc_session })
  const events = (await viaTwoFactor.get('/api/audit?limit=50')).body.items
  expect(events.filter((e: any) => e.action === 'auth.login').map((e: any) => e.details.method)).toEqual(['2fa', 'password'])
  expect(events.filter((e: any) => e.action === 'auth.login_failed')).toEqual([])
})
