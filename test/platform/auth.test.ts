// Sign-in over real HTTP: register, login, logout, me, cookie flags, sessions stored hashed, CSRF.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { Client, PASSWORD, sessionCookie, signUp, uniqueEmail } from '../support/client'
import { ACCOUNTS, durableDocument, removeDir, startTestServer, type TestServer } from '../support/server'

let server: TestServer

beforeAll(async () => {
  server = await startTestServer()
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(server.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })

function sessionSetCookie(headers: Headers): string {
  const line = headers.getSetCookie().find((l) => l.startsWith('svc_session='))
  if (!line) throw new Error('no svc_session cookie set')
  return line
}

const flags = (line: string) => line.split(';').map((part) => part.trim().toLowerCase())

describe('register', () => {
  test('201 with { user } and a session cookie with the contract flags', async () => {
    const email = uniqueEmail('reg')
    const response = await post('/api/auth/register', { email, password: PASSWORD, name: 'Ada' })
    expect(response.status).toBe(201)
    const body = (await response.json()) as any
    expect(Object.keys(body)).toEqual(['user'])
    expect(Object.keys(body.user).sort()).toEqual(['createdAt', 'email', 'id', 'name'])
    expect(body.user).toMatchObject({ email, name: 'Ada' })
    expect(Number.isNaN(Date.parse(body.user.createdAt))).toBe(false)

    const line = sessionSetCookie(response.headers)
    const parts = flags(line)
    expect(parts).toContain('httponly')
    expect(parts).toContain('samesite=lax')
    expect(parts).toContain('path=/')
    expect(parts).not.toContain('secure')
    // At least 32 random bytes: 43 characters of base64url.
    const token = sessionCookie(response.headers)!
    expect(token.length).toBeGreaterThanOrEqual(43)

    const me = await new Client(server.url, { cookie: token }).get('/api/auth/me')
    expect(me.status).toBe(200)
    expect(me.body).toEqual({ user: { ...body.user, twoFactorEnabled: false }, auth: 'session' })
  })

  test('409 EMAIL_TAKEN for an address already registered (case-insensitive)', async () => {
    const email = uniqueEmail('dup')
    expect((await post('/api/auth/register', { email, password: PASSWORD })).status).toBe(201)
    for (const again of [email, email.toUpperCase()]) {
      const response = await post('/api/auth/register', { email: again, password: PASSWORD })
      expect(response.status).toBe(409)
      expect(await response.json()).toEqual({ error: expect.any(String), code: 'EMAIL_TAKEN' })
    }
  })

  test('400 VALIDATION_ERROR naming the field, never 422', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ email: 'not-an-address', password: PASSWORD }, 'email'],
      [{ email: 'a@b', password: PASSWORD }, 'email'],
      [{ password: PASSWORD }, 'email'],
      [{ email: uniqueEmail(), password: 'short12' }, 'password'],
      [{ email: uniqueEmail(), password: 'x'.repeat(1025) }, 'password'],
      [{ email: uniqueEmail() }, 'password'],
      [{ email: uniqueEmail(), password: PASSWORD, role: 'admin' }, 'role'],
    ]
    for (const [body, field] of cases) {
      const response = await post('/api/auth/register', body)
      expect(response.status).toBe(400)
      const answer = (await response.json()) as any
      expect(answer.code).toBe('VALIDATION_ERROR')
      expect(answer.error).toContain(field)
      expect(response.headers.getSetCookie().length).toBe(0)
    }
    // Exactly 8 and exactly 1024 characters are accepted.
    expect((await post('/api/auth/register', { email: uniqueEmail(), password: '12345678' })).status).toBe(201)
    expect((await post('/api/auth/register', { email: uniqueEmail(), password: 'y'.repeat(1024) })).status).toBe(201)
  })

  test('403 SIGNUP_DISABLED with SVC_SIGNUP=closed; existing accounts still sign in', async () => {
    const email = uniqueEmail('closed')
    expect((await post('/api/auth/register', { email, password: PASSWORD })).status).toBe(201)
    await server.stop()
    const closed = await startTestServer({ dataDir: server.dataDir, env: { SVC_SIGNUP: 'closed' } })
    try {
      const refused = await fetch(`${closed.url}/api/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: uniqueEmail(), password: PASSWORD }),
      })
      expect(refused.status).toBe(403)
      expect(await refused.json()).toEqual({ error: expect.any(String), code: 'SIGNUP_DISABLED' })
      const login = await fetch(`${closed.url}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: PASSWORD }),
      })
      expect(login.status).toBe(200)
    } finally {
      await closed.stop()
      server = await startTestServer({ dataDir: server.dataDir })
    }
  })
})

describe('login', () => {
  test('200 with { user } and a fresh session cookie', async () => {
    const alice = await signUp(server.url)
    const response = await post('/api/auth/login', { email: alice.email, password: PASSWORD })
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ user: alice.user })
    const token = sessionCookie(response.headers)!
    expect(token).not.toBe(alice.credentials.cookie)
    const parts = flags(sessionSetCookie(response.headers))
    expect(parts).toEqual(expect.arrayContaining(['httponly', 'samesite=lax', 'path=/']))
    expect((await new Client(server.url, { cookie: token }).get('/api/auth/me')).body.user.id).toBe(alice.user.id)
  })

  test('401 INVALID_CREDENTIALS, the same answer for an unknown e-mail and a wrong password', async () => {
    const alice = await signUp(server.url)
    const wrong = await post('/api/auth/login', { email: alice.email, password: 'wrong password' })
    const unknown = await post('/api/auth/login', { email: uniqueEmail('nobody'), password: 'wrong password' })
    expect(wrong.status).toBe(401)
    expect(unknown.status).toBe(401)
    const [a, b] = [await wrong.text(), await unknown.text()]
    expect(JSON.parse(a)).toEqual({ error: expect.any(String), code: 'INVALID_CREDENTIALS' })
    expect(a).toBe(b)
    expect(wrong.headers.getSetCookie()).toEqual([])
    expect(unknown.headers.getSetCookie()).toEqual([])
  })

  test('400 on a malformed body or unknown field', async () => {
    const extra = await post('/api/auth/login', { email: 'a@b.co', password: PASSWORD, remember: true })
    expect(extra.status).toBe(400)
    expect(((await extra.json()) as any).error).toContain('remember')
    const broken = await post('/api/auth/login', '{"email":')
    expect(broken.status).toBe(400)
    expect(((await broken.json()) as any).code).toBe('INVALID_JSON')
  })
})

describe('sessions', () => {
  test('only the SHA-256 of the session token is stored', async () => {
    const alice = await signUp(server.url)
    await server.deps.store.accounts.settle()
    const token = alice.credentials.cookie!
    // As stored: the accounts file, or its rows in PostgreSQL.
    const accounts = (await durableDocument(server, ACCOUNTS)).text
    expect(accounts).not.toContain(token)
    expect(accounts).toContain(createHash('sha256').update(token).digest('hex'))
  })

  test('logout: 204, the session is deleted server-side and the cookie cleared', async () => {
    const alice = await signUp(server.url)
    const token = alice.credentials.cookie!
    const hash = createHash('sha256').update(token).digest('hex')
    const response = await fetch(`${server.url}/api/auth/logout`, { method: 'POST', headers: { cookie: `svc_session=${token}` } })
    expect(response.status).toBe(204)
    expect(await response.text()).toBe('')
    const cleared = sessionSetCookie(response.headers)
    expect(cleared).toMatch(/^svc_session=;/)
    expect(cleared.toLowerCase()).toMatch(/max-age=0|expires=thu, 01 jan 1970/)
    // The old token no longer works even if a client kept it.
    const me = await alice.get('/api/auth/me')
    expect(me.status).toBe(401)
    expect(me.body.code).toBe('AUTH_REQUIRED')
    await server.deps.store.accounts.settle()
    expect(JSON.stringify((await durableDocument(server, ACCOUNTS)).data)).not.toContain(hash)
  })

  test('logout with an access key: 403 SESSION_REQUIRED; without credentials: 401', async () => {
    const alice = await signUp(server.url)
    const keyed = await alice.keyClient(['categories:read'])
    const byKey = await keyed.post('/api/auth/logout')
    expect(byKey.status).toBe(403)
    expect(byKey.body).toEqual({ error: expect.any(String), code: 'SESSION_REQUIRED' })
    expect((await alice.get('/api/auth/me')).status).toBe(200)
    const anon = await alice.anonymous().post('/api/auth/logout')
    expect(anon.status).toBe(401)
    expect(anon.body.code).toBe('AUTH_REQUIRED')
  })

  test('me with an access key lists its scopes', async () => {
    const alice = await signUp(server.url)
    const keyed = await alice.keyClient(['stats:read', 'categories:read'])
    const me = await keyed.get('/api/auth/me')
    expect(me.status).toBe(200)
    expect(me.body).toEqual({ user: { ...alice.user, twoFactorEnabled: false }, auth: 'access-key', scopes: ['stats:read', 'categories:read'] })
  })

  test('an unknown or malformed session cookie is 401 AUTH_REQUIRED; no credentials too', async () => {
    for (const cookie of ['svc_session=' + 'A'.repeat(43), 'svc_session=', 'svc_session=x;']) {
      const response = await fetch(`${server.url}/api/auth/me`, { headers: { cookie } })
      expect(response.status).toBe(401)
      expect(await response.json()).toEqual({ error: expect.any(String), code: 'AUTH_REQUIRED' })
    }
    const none = await fetch(`${server.url}/api/categories`)
    expect(none.status).toBe(401)
    expect(((await none.json()) as any).code).toBe('AUTH_REQUIRED')
  })

  test('an invalid bearer key is 401 AUTH_INVALID_KEY, even with a valid session cookie beside it', async () => {
    const alice = await signUp(server.url)
    for (const key of ['svc_' + 'A'.repeat(43), 'not-a-key', 'svc_']) {
      const response = await fetch(`${server.url}/api/auth/me`, { headers: { authorization: `Bearer ${key}` } })
      expect(response.status).toBe(401)
      expect(await response.json()).toEqual({ error: expect.any(String), code: 'AUTH_INVALID_KEY' })
    }
    const both = await fetch(`${server.url}/api/auth/me`, {
      headers: { authorization: `Bearer svc_${'B'.repeat(43)}`, cookie: `svc_session=${alice.credentials.cookie}` },
    })
    expect(both.status).toBe(401)
  })
})

describe('CSRF origin check', () => {
  test('a cookie-authenticated write from a foreign Origin is 403 CSRF_REJECTED and changes nothing', async () => {
    const alice = await signUp(server.url)
    const category = { name: 'CSRF', keyType: 'simple', envVarName: 'CSRF_TOKEN' }
    for (const origin of ['https://evil.example', 'http://localhost:1', 'null']) {
      const refused = await alice.post('/api/categories', category, { origin })
      expect(refused.status).toBe(403)
      expect(refused.body).toEqual({ error: expect.any(String), code: 'CSRF_REJECTED' })
    }
    const created = await alice.post('/api/categories', category)
    expect(created.status).toBe(201)
    const id = created.body.id
    expect((await alice.put(`/api/categories/${id}`, { description: 'x' }, { origin: 'https://evil.example' })).body.code).toBe('CSRF_REJECTED')
    expect((await alice.delete(`/api/categories/${id}`, { origin: 'https://evil.example' })).body.code).toBe('CSRF_REJECTED')
    expect((await alice.post('/api/auth/logout', undefined, { origin: 'https://evil.example' })).body.code).toBe('CSRF_REJECTED')
    expect((await alice.post('/api/access-keys', { name: 'k', scopes: ['stats:read'] }, { origin: 'https://evil.example' })).status).toBe(403)
    expect((await alice.get('/api/categories')).body).toHaveLength(1)
    expect((await alice.get('/api/access-keys')).body).toHaveLength(0)
    expect((await alice.get('/api/auth/me')).status).toBe(200)
  })

  test('same origin (configured base URL or the address reached) and no Origin pass; reads are not checked', async () => {
    const alice = await signUp(server.url)
    const base = server.deps.config.origin
    expect((await alice.post('/api/categories', { name: 'A', keyType: 'group' }, { origin: base })).status).toBe(201)
    expect((await alice.post('/api/categories', { name: 'B', keyType: 'group' }, { origin: server.url })).status).toBe(201)
    expect((await alice.post('/api/categories', { name: 'C', keyType: 'group' })).status).toBe(201)
    expect((await alice.get('/api/categories', { origin: 'https://evil.example' })).status).toBe(200)
  })

  test('bearer requests are not subject to the origin check', async () => {
    const alice = await signUp(server.url)
    const keyed = await alice.keyClient(['categories:write'])
    const created = await keyed.post('/api/categories', { name: 'K', keyType: 'group' }, { origin: 'https://evil.example' })
    expect(created.status).toBe(201)
  })
})

describe('Secure cookies', () => {
  test('an https SVC_BASE_URL names the cookie __Host-svc_session with Secure, Path=/ and no Domain, also on its clearing', async () => {
    const secure = await startTestServer({ env: { SVC_BASE_URL: 'https://vault.example.com' } })
    try {
      const response = await fetch(`${secure.url}/api/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: uniqueEmail(), password: PASSWORD }),
      })
      expect(response.status).toBe(201)
      const line = response.headers.getSetCookie().find((l) => l.startsWith('__Host-svc_session='))!
      expect(line).toBeDefined()
      expect(flags(line)).toEqual(expect.arrayContaining(['secure', 'httponly', 'samesite=lax', 'path=/']))
      expect(line).not.toMatch(/domain=/i)
      expect(sessionCookie(response.headers)).toBeUndefined()
      const token = /^__Host-svc_session=([^;]*)/.exec(line)![1]
      // The configured https origin is the server's own: a write from it passes the CSRF check.
      const ok = await fetch(`${secure.url}/api/categories`, {
        method: 'POST',
        headers: { cookie: `__Host-svc_session=${token}`, origin: 'https://vault.example.com', 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'S', keyType: 'group' }),
      })
      expect(ok.status).toBe(201)
      // The unprefixed name means nothing over https (a sibling site could have planted it).
      const plain = await fetch(`${secure.url}/api/auth/me`, { headers: { cookie: `svc_session=${token}` } })
      expect(plain.status).toBe(401)
      // The OpenAPI document names the cookie the server reads.
      const doc = (await (await fetch(`${secure.url}/api/openapi`)).json()) as any
      expect(doc.components.securitySchemes.sessionCookie.name).toBe('__Host-svc_session')
      const logout = await fetch(`${secure.url}/api/auth/logout`, { method: 'POST', headers: { cookie: `__Host-svc_session=${token}` } })
      expect(logout.status).toBe(204)
      const cleared = logout.headers.getSetCookie().find((l) => l.startsWith('__Host-svc_session='))!
      expect(flags(cleared)).toEqual(expect.arrayContaining(['secure', 'path=/']))
    } finally {
      await secure.stop()
      removeDir(secure.dataDir)
    }
  })

  test('over plain http the cookie stays svc_session, without Secure', async () => {
    const response = await post('/api/auth/register', { email: uniqueEmail(), password: PASSWORD })
    expect(response.status).toBe(201)
    expect(flags(sessionSetCookie(response.headers))).not.toContain('secure')
    const doc = (await (await fetch(`${server.url}/api/openapi`)).json()) as any
    expect(doc.components.securitySchemes.sessionCookie.name).toBe('svc_session')
  })
})

describe('session lifetime', () => {
  test('SVC_SESSION_TTL ends a session: after it, the cookie answers 401 AUTH_REQUIRED', async () => {
    let clockOffset = 0
    const short = await startTestServer({ env: { SVC_SESSION_TTL: '1m' }, now: () => Date.now() + clockOffset })
    try {
      const alice = await signUp(short.url)
      expect((await alice.get('/api/auth/me')).status).toBe(200)
      // The server's clock moves on: a second before the end of the TTL the session works, after it not.
      clockOffset = 59_000
      expect((await alice.get('/api/auth/me')).status).toBe(200)
      clockOffset = 60_000
      const expired = await alice.get('/api/auth/me')
      expect(expired.status).toBe(401)
      expect(expired.body.code).toBe('AUTH_REQUIRED')
    } finally {
      await short.stop()
    }
  })
})
