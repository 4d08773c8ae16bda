// Login throttling against the real server process: 10 failures for one e-mail, 50 from one
// client address, then 429 TOO_MANY_ATTEMPTS with Retry-After. (Each failure costs an argon2
// verification: the timeouts are generous for a loaded machine; speed targets live in bench/.)
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { PASSWORD, signUp, uniqueEmail } from '../support/client'
import { removeDir, spawnServer, startTestServer, type SpawnedServer, type TestServer } from '../support/server'

// A server of its own for each test: the counts are per process, so no test relies on (or is
// thrown off by) the failures of another, whichever runs alone or first.
let server: SpawnedServer

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

describe('a server per test', () => {
  beforeEach(async () => {
    server = await spawnServer({ env: { SVC_SIGNUP: 'open' } })
  })
  afterEach(async () => {
    await server.stop()
    removeDir(server.dataDir)
  })

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
})

// Issue 14: the limits act before the password check, per (e-mail, client address), with a
// per-e-mail ceiling; the client address comes from forwarding headers only behind SVC_TRUST_PROXY.
describe('issue 14: brute force and lock-out', () => {
  let clock = Date.now()
  const now = () => clock
  let vault: TestServer

  beforeAll(async () => {
    vault = await startTestServer({ now, env: { SVC_TRUST_PROXY: 'loopback' } })
  })
  afterAll(async () => {
    await vault.stop()
    removeDir(vault.dataDir)
  })

  const loginFrom = (email: string, password: string, client?: string, headers: Record<string, string> = {}) =>
    fetch(`${vault.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(client ? { 'x-forwarded-for': client } : {}), ...headers },
      body: JSON.stringify({ email, password }),
    })

  test('300 parallel guesses against one e-mail: at most 10 password checks, the rest 429', async () => {
    // Hashing at the real cost: the guesses race the checks under way.
    const racing = await startTestServer({ now, env: { SVC_TRUST_PROXY: 'loopback' }, realPasswordCost: true })
    try {
      const victim = await signUp(racing.url)
      const before = racing.deps.accounts.passwordChecks
      const guess = (password: string) =>
        fetch(`${racing.url}/api/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.1' },
          body: JSON.stringify({ email: victim.email, password }),
        })
      const answers = await Promise.all(Array.from({ length: 300 }, (_, i) => guess(`guess ${i}`)))
      const statuses = answers.map((response) => response.status)
      // Counted by the server itself, not by timing: the throttle decided before any check ran.
      expect(racing.deps.accounts.passwordChecks - before).toBe(10)
      expect(statuses.filter((status) => status === 401)).toHaveLength(10)
      expect(statuses.filter((status) => status === 429)).toHaveLength(290)
      await expectThrottled(await guess(PASSWORD))
    } finally {
      await racing.stop()
      removeDir(racing.dataDir)
    }
  }, 60_000)

  test('a stranger cannot lock the owner out: the strict limit is per (e-mail, client address)', async () => {
    const owner = await signUp(vault.url)
    for (let i = 0; i < 10; i++) expect((await loginFrom(owner.email, `wrong ${i}`, '203.0.113.9')).status).toBe(401)
    await expectThrottled(await loginFrom(owner.email, PASSWORD, '203.0.113.9'))
    // The owner, from their own address, still gets in.
    expect((await loginFrom(owner.email, PASSWORD, '198.51.100.77')).status).toBe(200)
    // After the window the stranger's address may try again.
    clock += 15 * 60_000 + 1000
    expect((await loginFrom(owner.email, 'wrong again', '203.0.113.9')).status).toBe(401)
    clock += 15 * 60_000 + 1000
  }, 60_000)

  test('guessing spread over many addresses meets the per-e-mail ceiling of 100', async () => {
    const owner = await signUp(vault.url)
    for (let address = 0; address < 10; address++) {
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => loginFrom(owner.email, `wrong ${i}`, `192.0.2.${address + 1}`)))
      expect(answers.map((response) => response.status)).toEqual(Array(10).fill(401))
    }
    await expectThrottled(await loginFrom(owner.email, 'wrong', '192.0.2.200'))
    clock += 15 * 60_000 + 1000
    expect((await loginFrom(owner.email, PASSWORD, '192.0.2.200')).status).toBe(200)
  }, 60_000)

  test('forwarding headers from a client that is not a trusted proxy are ignored', async () => {
    const untrusting = await startTestServer({ now })
    try {
      const owner = await signUp(untrusting.url)
      // Each guess claims another address; without SVC_TRUST_PROXY they are all the peer's.
      for (let i = 0; i < 10; i++) {
        const response = await fetch(`${untrusting.url}/api/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': `203.0.113.${i + 1}`, forwarded: `for=203.0.113.${i + 1}` },
          body: JSON.stringify({ email: owner.email, password: `wrong ${i}` }),
        })
        expect(response.status).toBe(401)
      }
      const last = await fetch(`${untrusting.url}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.99' },
        body: JSON.stringify({ email: owner.email, password: PASSWORD }),
      })
      await expectThrottled(last)
    } finally {
      await untrusting.stop()
      removeDir(untrusting.dataDir)
    }
  }, 60_000)

  test('registration: at most SVC_REGISTER_LIMIT (default 10) accounts an hour from one address, parallel included', async () => {
    const limited = await startTestServer({ now, env: { SVC_REGISTER_LIMIT: undefined, SVC_TRUST_PROXY: 'loopback' }, realPasswordCost: true })
    try {
      expect(limited.deps.config.registerLimit).toBe(10)
      const register = (client: string) =>
        fetch(`${limited.url}/api/auth/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': client },
          body: JSON.stringify({ email: uniqueEmail('reg'), password: PASSWORD }),
        })
      const answers = await Promise.all(Array.from({ length: 15 }, () => register('198.51.100.5')))
      expect(answers.filter((response) => response.status === 201)).toHaveLength(10)
      const refused = answers.filter((response) => response.status === 429)
      expect(refused).toHaveLength(5)
      expect(await refused[0].json()).toEqual({ error: expect.any(String), code: 'TOO_MANY_ATTEMPTS' })
      expect(Number(refused[0].headers.get('retry-after'))).toBeGreaterThan(0)
      expect(Number(refused[0].headers.get('retry-after'))).toBeLessThanOrEqual(3600)
      expect(refused[0].headers.getSetCookie()).toEqual([])
      // Another address is not affected; an hour later this one may register again.
      expect((await register('198.51.100.6')).status).toBe(201)
      clock += 60 * 60_000 + 1000
      expect((await register('198.51.100.5')).status).toBe(201)
    } finally {
      await limited.stop()
      removeDir(limited.dataDir)
    }
  }, 60_000)

  test('login and register refuse a cross-site Origin or Sec-Fetch-Site: cross-site (403 CSRF_REJECTED)', async () => {
    const owner = await signUp(vault.url)
    const cases: Record<string, string>[] = [{ origin: 'https://evil.example' }, { 'sec-fetch-site': 'cross-site' }]
    for (const headers of cases) {
      const login = await loginFrom(owner.email, PASSWORD, undefined, headers)
      expect(login.status).toBe(403)
      expect(await login.json()).toEqual({ error: expect.any(String), code: 'CSRF_REJECTED' })
      expect(login.headers.getSetCookie()).toEqual([])
      const email = uniqueEmail('csrf')
      const register = await fetch(`${vault.url}/api/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ email, password: PASSWORD }),
      })
      expect(register.status).toBe(403)
      expect(((await register.json()) as any).code).toBe('CSRF_REJECTED')
      expect(vault.deps.accounts.userByEmail(email)).toBeUndefined()
      // A cookie-authenticated write marked cross-site is refused without an Origin too.
      const write = await owner.post('/api/categories', { name: 'X', keyType: 'group' }, headers)
      expect(write.status).toBe(403)
      expect(write.body.code).toBe('CSRF_REJECTED')
    }
    // Same-origin and same-site requests, and requests without these headers, pass.
    expect((await loginFrom(owner.email, PASSWORD, undefined, { origin: vault.url, 'sec-fetch-site': 'same-origin' })).status).toBe(200)
    expect((await loginFrom(owner.email, PASSWORD)).status).toBe(200)
    expect((await owner.get('/api/categories', { 'sec-fetch-site': 'cross-site' })).status).toBe(200)
    // A form POST under Referrer-Policy: no-referrer carries `Origin: null`: refused unless the
    // browser's Fetch Metadata says same-origin.
    expect((await owner.post('/api/categories', { name: 'N', keyType: 'group' }, { origin: 'null' })).status).toBe(403)
    const form = await owner.post('/api/categories', { name: 'N', keyType: 'group' }, { origin: 'null', 'sec-fetch-site': 'same-origin' })
    expect(form.status).toBe(201)
  }, 60_000)
})
