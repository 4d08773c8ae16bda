import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { signUp, type Client } from '../support/client'
import { startTestServer, type TestServer } from '../support/server'

let server: TestServer
let alice: Client & { user: any }
let bob: Client & { user: any }

const CANARY = 'canary-stats-51d0e2-do-not-leak'
const ZERO = {
  totalCategories: 0,
  totalEntries: 0,
  total2fa: 0,
  byKeyType: { simple: 0, group: 0, ssh: 0, json: 0 },
  byEnvironment: { development: 0, staging: 0, production: 0 },
}

beforeAll(async () => {
  server = await startTestServer()
  alice = await signUp(server.url)
  bob = await signUp(server.url)
})
afterAll(() => server.stop())

describe('stats', () => {
  test('a new user gets every count, zero-filled', async () => {
    const answer = await alice.get('/api/stats')
    expect(answer.status).toBe(200)
    expect(answer.body).toEqual(ZERO)
  })

  test('counts categories, entries by key type and environment, and 2FA tokens; only your own', async () => {
    const simple = (await alice.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' })).body
    const group = (await alice.post('/api/categories', { name: 'AWS', keyType: 'group' })).body
    await alice.post('/api/categories', { name: 'Empty', keyType: 'simple', envVarName: 'EMPTY' })
    const entries = [
      { categoryId: simple.id, name: 'a', value: `${CANARY}-1`, environment: 'production' },
      { categoryId: simple.id, name: 'b', value: `${CANARY}-2`, environment: 'production' },
      { categoryId: simple.id, name: 'c', value: `${CANARY}-3`, environment: 'development' },
      { categoryId: simple.id, name: 'd', value: `${CANARY}-4` },
      { categoryId: group.id, name: 'e', value: JSON.stringify({ KEY: `${CANARY}-5` }), environment: 'staging' },
    ]
    for (const entry of entries) expect((await alice.post('/api/entries', entry)).status).toBe(201)
    const token = await alice.post('/api/2fa', { service: 'GitHub', accountName: 'alice', secret: 'JBSWY3DPEHPK3PXPJBSWY3DP' })
    expect(token.status).toBe(201)

    // Key types the API does not create (ssh, json) still count, as stored data may hold them.
    const { doc } = await server.deps.vaults.open(alice.user.id)
    const at = new Date().toISOString()
    await doc.update((_, write) => {
      const ssh = {
        id: crypto.randomUUID(),
        userId: alice.user.id,
        name: 'Deploy key',
        keyType: 'ssh' as const,
        envVarName: null,
        icon: null,
        description: null,
        fieldDefinitions: null,
        createdAt: at,
        updatedAt: at,
      }
      write.categories.push(ssh)
      write.entries.push({
        id: crypto.randomUUID(),
        categoryId: ssh.id,
        name: 'server',
        environment: 'production',
        notes: null,
        encryptedValue: 'x',
        createdAt: at,
        updatedAt: at,
      })
    })

    const answer = await alice.get('/api/stats')
    expect(answer.status).toBe(200)
    expect(answer.body).toEqual({
      totalCategories: 4,
      totalEntries: 6,
      total2fa: 1,
      byKeyType: { simple: 4, group: 1, ssh: 1, json: 0 },
      byEnvironment: { development: 1, staging: 1, production: 3 },
    })
    expect(answer.text).not.toContain(CANARY)
    expect((await bob.get('/api/stats')).body).toEqual(ZERO)

    // Deleting a category takes its entries out of the counts.
    expect((await alice.delete(`/api/categories/${simple.id}`)).status).toBe(204)
    expect((await alice.get('/api/stats')).body).toMatchObject({ totalCategories: 3, totalEntries: 2, byKeyType: { simple: 0, group: 1, ssh: 1, json: 0 } })
  })

  test('scope stats:read', async () => {
    const reader = await alice.keyClient(['stats:read'])
    expect((await reader.get('/api/stats')).status).toBe(200)
    const other = await alice.keyClient(['entries:read', 'export:read'])
    const denied = await other.get('/api/stats')
    expect(denied.status).toBe(403)
    expect(denied.body.code).toBe('AUTH_SCOPE_REQUIRED')
    expect(denied.body.error).toContain('stats:read')
    const anonymous = await alice.anonymous().get('/api/stats')
    expect(anonymous.status).toBe(401)
    expect(anonymous.body.code).toBe('AUTH_REQUIRED')
  })
})
