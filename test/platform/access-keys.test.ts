// Access keys over real HTTP: create, list, revoke, scopes, expiry, lastUsedAt, the scope macro.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { signUp, type Client } from '../support/client'
import { ACCOUNTS, durableDocument, removeDir, startTestServer, type TestServer } from '../support/server'

let server: TestServer
let alice: Client
let bob: Client

// The server's clock: real time plus what a test moves it on (expiry without waiting).
let clockOffset = 0
beforeAll(async () => {
  server = await startTestServer({ now: () => Date.now() + clockOffset })
  alice = await signUp(server.url)
  bob = await signUp(server.url)
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

const ALL_SCOPES = [
  'categories:read',
  'categories:write',
  'entries:read',
  'entries:write',
  'entries:reveal',
  '2fa:read',
  '2fa:write',
  '2fa:reveal',
  'stats:read',
  'export:read',
  'ai:extract',
  'envs:read',
  'envs:write',
  'envs:reveal',
  'audit:read',
]

describe('create and list', () => {
  test('201 with the key shown once: svc_ + 43 base64url characters, keyPrefix its first 12', async () => {
    const created = await alice.post('/api/access-keys', { name: 'ci', scopes: ['categories:read'] })
    expect(created.status).toBe(201)
    const key: string = created.body.key
    expect(key).toMatch(/^svc_[A-Za-z0-9_-]{43}$/)
    expect(created.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'ci',
      keyPrefix: key.slice(0, 12),
      scopes: ['categories:read'],
      expiresAt: null,
      lastUsedAt: null,
      createdAt: expect.any(String),
      key,
    })

    const list = await alice.get('/api/access-keys')
    expect(list.status).toBe(200)
    const item = list.body.find((k: any) => k.id === created.body.id)
    const { key: _shownOnce, ...rest } = created.body
    expect(item).toEqual(rest)
    const hash = createHash('sha256').update(key).digest('hex')
    expect(list.text).not.toContain(key)
    expect(list.text).not.toContain(hash)
    expect(list.text).not.toContain('keyHash')
    // Stored as its SHA-256 only.
    await server.deps.store.accounts.settle()
    const accounts = (await durableDocument(server, ACCOUNTS)).text
    expect(accounts).not.toContain(key)
    expect(accounts).toContain(hash)
  })

  test('duplicate scopes are removed; all 15 scopes (audit:read included) are accepted; envs scopes too', async () => {
    const dup = await alice.post('/api/access-keys', { name: 'dup', scopes: ['stats:read', 'stats:read', 'export:read', 'stats:read'] })
    expect(dup.status).toBe(201)
    expect(dup.body.scopes).toEqual(['stats:read', 'export:read'])
    const all = await alice.post('/api/access-keys', { name: 'all', scopes: ALL_SCOPES })
    expect(all.status).toBe(201)
    expect(all.body.scopes).toEqual(ALL_SCOPES)
  })

  test('400 for an unknown scope, 0 or over 64 listed scopes, a past or malformed expiresAt, a bad name or unknown field', async () => {
    const before = (await alice.get('/api/access-keys')).body.length
    const cases: [Record<string, unknown>, string][] = [
      [{ name: 'k', scopes: ['categories:read', 'admin'] }, 'scopes'],
      [{ name: 'k', scopes: ['envs:delete'] }, 'scopes'],
      [{ name: 'k', scopes: [] }, 'scopes'],
      [{ name: 'k', scopes: Array(65).fill('stats:read') }, 'scopes'],
      [{ name: 'k' }, 'scopes'],
      [{ name: 'k', scopes: 'stats:read' }, 'scopes'],
      [{ name: 'k', scopes: ['stats:read'], expiresAt: new Date(Date.now() - 60_000).toISOString() }, 'expiresAt'],
      [{ name: 'k', scopes: ['stats:read'], expiresAt: 'tomorrow' }, 'expiresAt'],
      [{ name: '', scopes: ['stats:read'] }, 'name'],
      [{ scopes: ['stats:read'] }, 'name'],
      [{ name: 'k', scopes: ['stats:read'], admin: true }, 'admin'],
    ]
    for (const [body, field] of cases) {
      const answer = await alice.post('/api/access-keys', body)
      expect(answer.status).toBe(400)
      expect(answer.body.code).toBe('VALIDATION_ERROR')
      expect(answer.body.error).toContain(field)
    }
    expect((await alice.get('/api/access-keys')).body.length).toBe(before)
    // 15 listed, 14 distinct: duplicates are removed, not refused.
    const all = await alice.post('/api/access-keys', { name: 'all', scopes: [...ALL_SCOPES, 'categories:read'] })
    expect(all.status).toBe(201)
    expect([...all.body.scopes].sort()).toEqual([...ALL_SCOPES].sort())
  })

  test('a future expiresAt is kept; lists are per user', async () => {
    const at = new Date(Date.now() + 86_400_000).toISOString()
    const created = await alice.post('/api/access-keys', { name: 'expiring', scopes: ['stats:read'], expiresAt: at })
    expect(created.status).toBe(201)
    expect(created.body.expiresAt).toBe(at)
    expect((await bob.get('/api/access-keys')).body.map((k: any) => k.id)).not.toContain(created.body.id)
  })
})

describe('using keys', () => {
  test('lastUsedAt is null until the key is used, then set', async () => {
    const created = await alice.post('/api/access-keys', { name: 'used', scopes: ['categories:read'] })
    const find = async () => (await alice.get('/api/access-keys')).body.find((k: any) => k.id === created.body.id)
    expect((await find()).lastUsedAt).toBeNull()
    const keyed = alice.withKey(created.body.key)
    expect((await keyed.get('/api/categories')).status).toBe(200)
    const used = (await find()).lastUsedAt
    expect(used).not.toBeNull()
    expect(Date.parse(used)).toBeGreaterThanOrEqual(Date.parse(created.body.createdAt))
  })

  test('the scope macro: 403 AUTH_SCOPE_REQUIRED naming the missing scope; the scope it holds works', async () => {
    const reader = await alice.keyClient(['categories:read'])
    expect((await reader.get('/api/categories')).status).toBe(200)
    const write = await reader.post('/api/categories', { name: 'X', keyType: 'group' })
    expect(write.status).toBe(403)
    expect(write.body.code).toBe('AUTH_SCOPE_REQUIRED')
    expect(write.body.error).toContain('categories:write')
    // A session bypasses scopes.
    expect((await alice.post('/api/categories', { name: 'X', keyType: 'group' })).status).toBe(201)
  })

  test('a bearer key on /api/access-keys is 403 SESSION_REQUIRED, whatever its scopes', async () => {
    const keyed = await alice.keyClient(ALL_SCOPES)
    const listed = await alice.get('/api/access-keys')
    for (const answer of [
      await keyed.get('/api/access-keys'),
      await keyed.post('/api/access-keys', { name: 'minted', scopes: ['stats:read'] }),
      await keyed.delete(`/api/access-keys/${listed.body[0].id}`),
    ]) {
      expect(answer.status).toBe(403)
      expect(answer.body).toEqual({ error: expect.any(String), code: 'SESSION_REQUIRED' })
    }
    expect((await alice.get('/api/access-keys')).body).toEqual(listed.body)
  })

  test('an expired key is 401 AUTH_INVALID_KEY', async () => {
    const expiresAt = new Date(Date.now() + clockOffset + 60_000).toISOString()
    const created = await alice.post('/api/access-keys', { name: 'short', scopes: ['categories:read'], expiresAt })
    expect(created.status).toBe(201)
    const keyed = alice.withKey(created.body.key)
    expect((await keyed.get('/api/categories')).status).toBe(200)
    // A second before its expiry it works; at its expiry it does not.
    clockOffset = Date.parse(expiresAt) - Date.now() - 1_000
    expect((await keyed.get('/api/categories')).status).toBe(200)
    clockOffset = Date.parse(expiresAt) - Date.now()
    const expired = await keyed.get('/api/categories')
    expect(expired.status).toBe(401)
    expect(expired.body).toEqual({ error: expect.any(String), code: 'AUTH_INVALID_KEY' })
    expect((await keyed.get('/api/auth/me')).body.code).toBe('AUTH_INVALID_KEY')
  })
})

describe('revoke', () => {
  test('204, then the key is 401 AUTH_INVALID_KEY at once and gone from the list', async () => {
    const created = await alice.post('/api/access-keys', { name: 'revoke me', scopes: ['categories:read'] })
    const keyed = alice.withKey(created.body.key)
    expect((await keyed.get('/api/categories')).status).toBe(200)
    const removed = await alice.delete(`/api/access-keys/${created.body.id}`)
    expect(removed.status).toBe(204)
    expect(removed.text).toBe('')
    const after = await keyed.get('/api/categories')
    expect(after.status).toBe(401)
    expect(after.body.code).toBe('AUTH_INVALID_KEY')
    expect((await alice.get('/api/access-keys')).body.map((k: any) => k.id)).not.toContain(created.body.id)
    // Revoking it again answers as a missing key.
    expect((await alice.delete(`/api/access-keys/${created.body.id}`)).body.code).toBe('ACCESS_KEY_NOT_FOUND')
  })

  test("another user's key and a missing one answer the same 404 ACCESS_KEY_NOT_FOUND, and the key keeps working", async () => {
    const created = await alice.post('/api/access-keys', { name: 'mine', scopes: ['categories:read'] })
    const foreign = await bob.delete(`/api/access-keys/${created.body.id}`)
    const missing = await bob.delete(`/api/access-keys/${crypto.randomUUID()}`)
    const notUuid = await bob.delete('/api/access-keys/nope')
    for (const answer of [foreign, missing, notUuid]) {
      expect(answer.status).toBe(404)
      expect(answer.body.code).toBe('ACCESS_KEY_NOT_FOUND')
    }
    expect(foreign.text).toBe(missing.text)
    expect((await alice.withKey(created.body.key).get('/api/categories')).status).toBe(200)
  })
})
