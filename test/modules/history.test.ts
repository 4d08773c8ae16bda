// Issue 20, version history: entries, env files and 2FA tokens keep their previous values, sealed
// under an AAD naming the version; listed without values, revealed and restored through their owner.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { signUp, type Client } from '../support/client'
import { durableDocument, removeDir, startTestServer, type TestServer } from '../support/server'

let server: TestServer
let alice: Client & { user: any }
let bob: Client & { user: any }
let simple: any
let group: any
// The server's clock: real time, unless a test holds it (a 2FA code compared across requests).
let heldAt: number | undefined

beforeAll(async () => {
  server = await startTestServer({ env: { SVC_HISTORY_VERSIONS: '3' }, now: () => heldAt ?? Date.now() })
  alice = await signUp(server.url)
  bob = await signUp(server.url)
  simple = (await alice.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' })).body
  group = (await alice.post('/api/categories', { name: 'AWS', keyType: 'group', fieldDefinitions: ['ID', 'SECRET'] })).body
})
afterEach(() => {
  heldAt = undefined
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

async function entry(value: string, name = `e-${crypto.randomUUID()}`) {
  const answer = await alice.post('/api/entries', { categoryId: simple.id, name, value })
  expect(answer.status).toBe(201)
  return answer.body
}

describe('entry versions', () => {
  test('an update keeps the previous value; list shows version, createdAt, actor and never a value', async () => {
    const e = await entry('value-one-canary')
    expect((await alice.get(`/api/entries/${e.id}/versions`)).body).toEqual([])
    expect((await alice.put(`/api/entries/${e.id}`, { value: 'value-two-canary' })).status).toBe(200)
    const list = await alice.get(`/api/entries/${e.id}/versions`)
    expect(list.status).toBe(200)
    expect(list.body).toEqual([{ version: 1, createdAt: e.createdAt, actor: 'session' }])
    expect(list.text).not.toContain('canary')
    // A change of name or notes is no new version.
    await alice.put(`/api/entries/${e.id}`, { notes: 'n' })
    expect((await alice.get(`/api/entries/${e.id}/versions`)).body).toHaveLength(1)

    const revealed = await alice.post(`/api/entries/${e.id}/versions/1/reveal`)
    expect(revealed.status).toBe(200)
    expect(revealed.headers.get('cache-control')).toBe('no-store')
    expect(revealed.body).toMatchObject({ id: e.id, version: 1, value: 'value-one-canary', actor: 'session' })
    // The current value is no version of its own.
    expect((await alice.post(`/api/entries/${e.id}/versions/2/reveal`)).body.code).toBe('VERSION_NOT_FOUND')
  })

  test('restore makes the old value current, as a new version; the replaced value is kept', async () => {
    const e = await entry('first')
    await alice.put(`/api/entries/${e.id}`, { value: 'second' })
    const restored = await alice.post(`/api/entries/${e.id}/versions/1/restore`)
    expect(restored.status).toBe(200)
    expect(restored.body.rotatedAt).not.toBeNull()
    expect((await alice.post(`/api/entries/${e.id}/reveal`)).body.value).toBe('first')
    const versions = (await alice.get(`/api/entries/${e.id}/versions`)).body
    expect(versions.map((v: any) => v.version)).toEqual([2, 1])
    expect((await alice.post(`/api/entries/${e.id}/versions/2/reveal`)).body.value).toBe('second')
  })

  test('only the last SVC_HISTORY_VERSIONS are kept', async () => {
    const e = await entry('v1')
    for (const value of ['v2', 'v3', 'v4', 'v5']) await alice.put(`/api/entries/${e.id}`, { value })
    const versions = (await alice.get(`/api/entries/${e.id}/versions`)).body
    expect(versions.map((v: any) => v.version)).toEqual([4, 3, 2])
    expect((await alice.post(`/api/entries/${e.id}/versions/1/reveal`)).status).toBe(404)
    expect((await alice.post(`/api/entries/${e.id}/versions/2/reveal`)).body.value).toBe('v2')
  })

  test('a group value comes back as its object', async () => {
    const created = await alice.post('/api/entries', { categoryId: group.id, name: 'g', value: JSON.stringify({ ID: 'a', SECRET: 'b' }) })
    await alice.put(`/api/entries/${created.body.id}`, { value: JSON.stringify({ ID: 'c', SECRET: 'd' }) })
    expect((await alice.post(`/api/entries/${created.body.id}/versions/1/reveal`)).body.value).toEqual({ ID: 'a', SECRET: 'b' })
  })

  test('the actor names the access key; scopes read, reveal and write', async () => {
    const e = await entry('by-session')
    const writer = await alice.keyClient(['entries:write', 'entries:read'])
    await writer.put(`/api/entries/${e.id}`, { value: 'by-key' })
    await alice.put(`/api/entries/${e.id}`, { value: 'third' })
    const versions = (await writer.get(`/api/entries/${e.id}/versions`)).body
    expect(versions[0].actor).toMatch(/^key:/)
    expect(versions[1].actor).toBe('session')
    expect((await writer.post(`/api/entries/${e.id}/versions/1/reveal`)).body.code).toBe('AUTH_SCOPE_REQUIRED')
    const reader = await alice.keyClient(['entries:read', 'entries:reveal'])
    expect((await reader.post(`/api/entries/${e.id}/versions/1/reveal`)).body.value).toBe('by-session')
    expect((await reader.post(`/api/entries/${e.id}/versions/1/restore`)).body.code).toBe('AUTH_SCOPE_REQUIRED')
    expect((await writer.post(`/api/entries/${e.id}/versions/1/restore`)).status).toBe(200)
  })

  test("another user's entry answers 404 exactly as a missing one", async () => {
    const e = await entry('private')
    await alice.put(`/api/entries/${e.id}`, { value: 'private-2' })
    const missing = await bob.get(`/api/entries/${crypto.randomUUID()}/versions`)
    for (const answer of [
      await bob.get(`/api/entries/${e.id}/versions`),
      await bob.post(`/api/entries/${e.id}/versions/1/reveal`),
      await bob.post(`/api/entries/${e.id}/versions/1/restore`),
    ]) {
      expect(answer.status).toBe(404)
      expect(answer.body).toEqual(missing.body)
    }
    expect((await alice.post(`/api/entries/${e.id}/reveal`)).body.value).toBe('private-2')
  })

  test('versions are sealed on disk under an AAD naming the version, never in plaintext', async () => {
    const e = await entry('disk-canary-old')
    await alice.put(`/api/entries/${e.id}`, { value: 'disk-canary-new' })
    await alice.put(`/api/entries/${e.id}`, { value: 'disk-canary-newer' })
    const { data, cipher } = await server.deps.vaults.open(alice.user.id)
    const v1 = data.versions.find((v) => v.recordId === e.id && v.version === 1)!
    expect(cipher.openVersion('entry', e.id, 1, v1.encryptedValue)).toBe('disk-canary-old')
    // Bound to its version and record: not the current value's AAD, not another version's.
    expect(cipher.open('entry', e.id, v1.encryptedValue)).toBeNull()
    expect(cipher.openVersion('entry', e.id, 2, v1.encryptedValue)).toBeNull()
    // As stored: the vault's file, or its rows in PostgreSQL.
    const { text } = await durableDocument(server, alice.user.id)
    expect(text).not.toContain('disk-canary')
    expect(text).toContain(v1.encryptedValue)
  })

  test('lists, stats and export ignore old versions', async () => {
    const fresh = await signUp(server.url)
    const cat = (await fresh.post('/api/categories', { name: 'S', keyType: 'simple', envVarName: 'S_KEY' })).body
    const e = (await fresh.post('/api/entries', { categoryId: cat.id, name: 'p', value: 'old-value' })).body
    await fresh.put(`/api/entries/${e.id}`, { value: 'new-value' })
    expect((await fresh.get('/api/entries')).body).toHaveLength(1)
    expect((await fresh.get('/api/stats')).body.totalEntries).toBe(1)
    const exported = await fresh.get('/api/export?format=dotenv')
    expect(exported.text).toContain('new-value')
    expect(exported.text).not.toContain('old-value')
  })
})

describe('env file versions', () => {
  test('saving a file again keeps the old content; list, reveal, restore; scopes; foreign 404', async () => {
    const project = (await alice.post('/api/envs', { name: `p-${crypto.randomUUID()}` })).body.data
    const first = await alice.post(`/api/envs/${project.id}/files`, { fileType: 'env', content: 'A=1\nB=old\n' })
    const fileId = first.body.data.id
    await alice.post(`/api/envs/${project.id}/files`, { fileType: 'env', content: 'A=1\nB=new\nC=3\n' })
    const base = `/api/envs/${project.id}/files/${fileId}/versions`
    const list = await alice.get(base)
    expect(list.status).toBe(200)
    expect(list.body.data).toEqual([{ version: 1, createdAt: first.body.data.createdAt, actor: 'session' }])
    const revealed = await alice.post(`${base}/1/reveal`)
    expect(revealed.headers.get('cache-control')).toBe('no-store')
    expect(revealed.body.data).toMatchObject({ id: fileId, version: 1, content: 'A=1\nB=old\n' })
    const reader = await alice.keyClient(['envs:read'])
    expect((await reader.post(`${base}/1/reveal`)).status).toBe(403)
    expect((await reader.post(`${base}/1/restore`)).status).toBe(403)
    expect((await bob.get(base)).body.code).toBe('ENV_PROJECT_NOT_FOUND')
    expect((await bob.post(`${base}/1/restore`)).status).toBe(404)
    const restored = await alice.post(`${base}/1/restore`)
    expect(restored.status).toBe(200)
    expect((await alice.post(`/api/envs/${project.id}/files/${fileId}/reveal`)).body.data.content).toBe('A=1\nB=old\n')
    expect((await alice.get(base)).body.data.map((v: any) => v.version)).toEqual([2, 1])
  })
})

describe('2FA token versions', () => {
  test('a new secret keeps the old one; reveal gives its code, never the secret; restore brings its parameters back', async () => {
    const OLD = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP'
    // One instant for both codes compared below (a 60 s step may begin between two requests).
    heldAt = Date.now()
    const created = (await alice.post('/api/2fa', { service: 'GitHub', accountName: 'a', secret: `otpauth://totp/x?secret=${OLD}&digits=8&period=60` })).body
    await alice.put(`/api/2fa/${created.id}`, { secret: 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ' })
    const list = await alice.get(`/api/2fa/${created.id}/versions`)
    expect(list.body).toEqual([{ version: 1, createdAt: created.createdAt, actor: 'session' }])
    const revealed = await alice.post(`/api/2fa/${created.id}/versions/1/reveal`)
    expect(revealed.headers.get('cache-control')).toBe('no-store')
    expect(revealed.body.code).toMatch(/^\d{8}$/)
    expect(revealed.text).not.toContain(OLD)
    expect((await bob.get(`/api/2fa/${created.id}/versions`)).body.code).toBe('TWO_FACTOR_NOT_FOUND')
    const restored = await alice.post(`/api/2fa/${created.id}/versions/1/restore`)
    expect(restored.status).toBe(200)
    expect(restored.body).toMatchObject({ digits: 8, period: 60 })
    const code = (await alice.post(`/api/2fa/${created.id}/reveal`)).body.code
    expect(code).toBe(revealed.body.code)
  })
})

describe('import', () => {
  test('an import that updates an entry keeps its old value as a version', async () => {
    const e = await entry('before-import', 'imported')
    const answer = await alice.post('/api/ai/import', { text: 'OPENAI_API_KEY=after-import', name: 'imported', apply: true })
    expect(answer.status).toBe(200)
    expect((await alice.post(`/api/entries/${e.id}/reveal`)).body.value).toBe('after-import')
    expect((await alice.post(`/api/entries/${e.id}/versions/1/reveal`)).body.value).toBe('before-import')
  })
})
