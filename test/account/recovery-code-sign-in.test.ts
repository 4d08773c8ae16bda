// Issue 32: a sign-in with a recovery code stands out (a stolen code's use): its session and its
// audit event say `method: recovery_code`, an app code's say otherwise; GET /api/auth/me tells how
// many recovery codes are left.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Client, signUp } from '../support/client'
import { removeDir, startTestServer, type TestServer } from '../support/server'
import { enableTwoFactor, oathtool, post, testClock } from './support'

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

async function signInWith(email: string, proof: Record<string, string>): Promise<Client> {
  const login = await post(server.url, '/api/auth/login', { email, password: 'correct horse battery' })
  expect(login.body).toEqual({ twoFactorRequired: true })
  const second = await post(server.url, '/api/auth/login/2fa', proof, { svc_2fa: login.cookies.svc_2fa })
  expect(second.status).toBe(200)
  return new Client(server.url, { cookie: second.cookies.svc_session })
}

test('a recovery-code sign-in is method recovery_code in its session and its audit event; codes left are counted', async () => {
  const ana = await signUp(server.url)
  const { recoveryCodes, secret } = await enableTwoFactor(ana, clock.now())
  expect((await ana.get('/api/auth/me')).body.user).toMatchObject({ twoFactorEnabled: true, recoveryCodesLeft: 10 })

  const byRecovery = await signInWith(ana.email, { recoveryCode: recoveryCodes[3] })
  expect((await byRecovery.get('/api/auth/me')).body.user.recoveryCodesLeft).toBe(9)
  // The session itself records how it signed in (kept with the session, not in the list's answer).
  const methods = () => server.deps.accounts.liveSessions(ana.user.id).map((s) => s.signInMethod)
  expect(methods()).toContain('recovery_code')

  // A wrong recovery code is recorded under the same method; an app code is not a recovery code.
  const failedLogin = await post(server.url, '/api/auth/login', { email: ana.email, password: 'correct horse battery' })
  expect((await post(server.url, '/api/auth/login/2fa', { recoveryCode: 'aaaa-aaaa-aaaa-aaaa' }, { svc_2fa: failedLogin.cookies.svc_2fa })).status).toBe(401)
  clock.advance(STEP)
  const byApp = await signInWith(ana.email, { code: oathtool(secret, clock.now()) })
  expect(methods().filter((method) => method === 'recovery_code')).toHaveLength(1)

  const events = (await byApp.get('/api/audit?limit=10')).body.items.filter((e: any) => e.action.startsWith('auth.login'))
  const logged = events.map((e: any) => `${e.action} ${e.details?.method}`)
  expect(logged.slice(0, 3)).toEqual(['auth.login 2fa', 'auth.login_failed recovery_code', 'auth.login recovery_code'])
  expect((await byApp.get('/api/auth/me')).body.user.recoveryCodesLeft).toBe(9)
})
