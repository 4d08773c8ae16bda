// On the file store used sign-in challenges are remembered in memory only (issue 36, item 13): so
// a challenge is good only in the process that issued it. One from before a restart, which the
// new process could not know to be used, is refused. On PostgreSQL the used ones are in the
// database (issue 34: any instance finishes a sign-in another started): one from before a
// restart is good once, and its use is known after the next restart too.
import { expect, test } from 'bun:test'
import { signUp, PASSWORD } from '../support/client'
import { ON_POSTGRES } from '../support/postgres'
import { removeDir, startTestServer, tempDir } from '../support/server'
import { enableTwoFactor, oathtool, post, testClock } from './support'

// One test per store: each pass of the suite runs its own (nothing is skipped).
const onFiles = ON_POSTGRES ? () => {} : test
const onPostgres = ON_POSTGRES ? test : () => {}

/** A user with a second factor, signed in with the password (a challenge issued) by a server that then stopped. */
async function challengeBeforeRestart() {
  const clock = testClock()
  const dataDir = tempDir()
  const first = await startTestServer({ dataDir, now: clock.now })
  const alice = await signUp(first.url)
  const { secret } = await enableTwoFactor(alice, clock.now())
  clock.advance(60_000)
  const password = await post(first.url, '/api/auth/login', { email: alice.email, password: PASSWORD })
  expect(password.body).toEqual({ twoFactorRequired: true })
  const challenge = password.cookies.svc_2fa
  await first.stop()
  return { clock, dataDir, alice, secret, challenge }
}

onFiles('a two-factor challenge issued before a restart is refused after it', async () => {
  const { clock, dataDir, alice, secret, challenge } = await challengeBeforeRestart()

  const second = await startTestServer({ dataDir, now: clock.now })
  try {
    const late = await post(second.url, '/api/auth/login/2fa', { code: oathtool(secret, clock.now()) }, { svc_2fa: challenge })
    expect(late.status).toBe(401)
    expect(late.body.code).toBe('TWO_FACTOR_REQUIRED')
    expect(late.cookies.svc_session).toBeUndefined()
    // A challenge of this process works.
    const again = await post(second.url, '/api/auth/login', { email: alice.email, password: PASSWORD })
    clock.advance(30_000)
    const done = await post(second.url, '/api/auth/login/2fa', { code: oathtool(secret, clock.now()) }, { svc_2fa: again.cookies.svc_2fa })
    expect(done.status).toBe(200)
  } finally {
    await second.stop()
    removeDir(dataDir)
  }
})

onPostgres('on PostgreSQL a two-factor challenge issued before a restart is good once after it', async () => {
  const { clock, dataDir, alice, secret, challenge } = await challengeBeforeRestart()
  let second = await startTestServer({ dataDir, now: clock.now })
  try {
    const late = await post(second.url, '/api/auth/login/2fa', { code: oathtool(secret, clock.now()) }, { svc_2fa: challenge })
    expect(late.status).toBe(200)
    await second.stop()
    second = await startTestServer({ dataDir, now: clock.now })
    clock.advance(30_000)
    const again = await post(second.url, '/api/auth/login/2fa', { code: oathtool(secret, clock.now()) }, { svc_2fa: challenge })
    expect(again.status).toBe(401)
    expect(again.body.code).toBe('TWO_FACTOR_REQUIRED')
  } finally {
    await second.stop()
    removeDir(dataDir)
  }
})
