// Login throttling against the real server process: 10 failures for one e-mail, 50 from one
// client address, then 429 TOO_MANY_ATTEMPTS with Retry-After. (Each failure costs an argon2
// verification: the timeouts are generous for a loaded machine; speed targets live in bench/.)
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { PASSWORD, signUp, uniqueEmail } from '../support/client'
import { removeDir, spawnServer, type SpawnedServer } from '../support/server'

// A server of its own for each test: the counts are per process, so no test relies on (or is
// thrown off by) the failures of another, whichever runs alone or first.
let server: SpawnedServer

beforeEach(async () => {
  server = await spawnServer({ env: { SVC_SIGNUP: 'open' } })
})
afterEach(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

const login = (email: string, password: string) =>
  fetch(`${server.url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  })

async function expectThrottled(response: Response) {
  expect(response.status).toBe(429)
  expect(await response.json()).toEqual({ error: expect.any(String), code: 'TOO_MANY_ATTEMPTS' })
  const retryAfter = response.headers.get('retry-after')
  expect(retryAfter).toMatch(/^\d+$/)
  expect(Number(retryAfter)).toBeGreaterThan(0)
  expect(Number(retryAfter)).toBeLessThanOrEqual(15 * 60)
  expect(response.headers.getSetCookie()).toEqual([])
}

test('10 failures for one e-mail: 429 with Retry-After, even for the right password; other e-mails still sign in', async () => {
  const alice = await signUp(server.url)
  const bob = await signUp(server.url)
  for (let i = 0; i < 10; i++) {
    const response = await login(alice.email, `wrong password ${i}`)
    expect(response.status).toBe(401)
  }
  await expectThrottled(await login(alice.email, 'wrong again'))
  await expectThrottled(await login(alice.email, PASSWORD))
  // The e-mail is matched case-insensitively.
  await expectThrottled(await login(alice.email.toUpperCase(), PASSWORD))
  expect((await login(bob.email, PASSWORD)).status).toBe(200)
  // An existing session is not affected.
  expect((await alice.get('/api/auth/me')).status).toBe(200)
}, 120_000)

test('50 failures from one client address: 429 for every e-mail from it', async () => {
  const carol = await signUp(server.url)
  // 50 failures, each for another e-mail (so no e-mail reaches its own limit of 10).
  for (let batch = 0; batch < 10; batch++) {
    const answers = await Promise.all(Array.from({ length: 5 }, () => login(uniqueEmail('nobody'), 'wrong password')))
    expect(answers.map((response) => response.status)).toEqual([401, 401, 401, 401, 401])
  }
  await expectThrottled(await login(uniqueEmail('fresh'), 'wrong password'))
  await expectThrottled(await login(carol.email, PASSWORD))
  // Other endpoints are not throttled.
  expect((await carol.get('/api/auth/me')).status).toBe(200)
}, 120_000)
