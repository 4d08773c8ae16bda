import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { signUp, type Client } from '../support/client'
import { startTestServer, type TestServer } from '../support/server'

let server: TestServer
let alice: Awaited<ReturnType<typeof signUp>>
let bob: Client

beforeAll(async () => {
  server = await startTestServer()
  alice = await signUp(server.url)
  bob = await signUp(server.url)
})
afterAll(() => server.stop())

const simple = { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY', icon: 'openai', description: 'LLM' }

describe('categories', () => {
  test('create, get, list, update, delete', async () => {
    const created = await alice.post('/api/categories', simple)
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ ...simple, userId: alice.user.id })
    expect(created.body.id).toMatch(/^[0-9a-f-]{36}$/)
    const id = created.body.id

    expect((await alice.get(`/api/categories/${id}`)).body).toEqual(created.body)
    const list = await alice.get('/api/categories')
    expect(list.status).toBe(200)
    expect(list.body.map((c: any) => c.id)).toContain(id)

    const updated = await alice.put(`/api/categories/${id}`, { description: 'changed' })
    expect(updated.status).toBe(200)
    expect(updated.body).toMatchObject({ name: 'OpenAI', description: 'changed', envVarName: 'OPENAI_API_KEY' })

    const removed = await alice.delete(`/api/categories/${id}`)
    expect(removed.status).toBe(204)
    expect(removed.text).toBe('')
    expect((await alice.get(`/api/categories/${id}`)).body.code).toBe('CATEGORY_NOT_FOUND')
  })

  test('a simple category needs envVarName; keyType is simple or group', async () => {
    const missing = await alice.post('/api/categories', { name: 'X', keyType: 'simple' })
    expect(missing.status).toBe(400)
    expect(missing.body.code).toBe('CATEGORY_SIMPLE_REQUIRES_ENV_VAR')
    const ssh = await alice.post('/api/categories', { name: 'X', keyType: 'ssh' })
    expect(ssh.status).toBe(400)
    expect(ssh.body.code).toBe('VALIDATION_ERROR')
    expect(ssh.body.error).toContain('keyType')
    const group = await alice.post('/api/categories', { name: 'AWS', keyType: 'group', fieldDefinitions: ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'] })
    expect(group.status).toBe(201)
    expect(group.body.envVarName).toBeNull()
    expect(group.body.fieldDefinitions).toEqual(['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'])
  })

  test('bad input is 400 naming the field, and changes nothing', async () => {
    const before = (await alice.get('/api/categories')).body.length
    for (const [body, field] of [
      [{ ...simple, extra: 1 }, 'extra'],
      [{ ...simple, name: '' }, 'name'],
      [{ ...simple, name: 'x'.repeat(201) }, 'name'],
      [{ ...simple, icon: 'Not A Slug' }, 'icon'],
      [{ ...simple, envVarName: '1BAD' }, 'envVarName'],
      [{ ...simple, description: 'x'.repeat(2001) }, 'description'],
    ] as const) {
      const answer = await alice.post('/api/categories', body)
      expect(answer.status).toBe(400)
      expect(answer.body.code).toBe('VALIDATION_ERROR')
      expect(answer.body.error).toContain(field)
    }
    const malformed = await alice.post('/api/categories', '{"name":')
    expect(malformed.status).toBe(400)
    expect(malformed.body.code).toBe('INVALID_JSON')
    expect((await alice.get('/api/categories')).body.length).toBe(before)
  })

  test("another user's category answers exactly as a missing one", async () => {
    const { body } = await alice.post('/api/categories', simple)
    const missing = crypto.randomUUID()
    for (const id of [body.id, missing]) {
      for (const answer of [
        await bob.get(`/api/categories/${id}`),
        await bob.put(`/api/categories/${id}`, { name: 'stolen' }),
        await bob.delete(`/api/categories/${id}`),
      ]) {
        expect(answer.status).toBe(404)
        expect(answer.body).toEqual({ error: 'Category not found', code: 'CATEGORY_NOT_FOUND' })
      }
    }
    expect((await bob.get('/api/categories')).body).toEqual([])
    expect((await alice.get(`/api/categories/${body.id}`)).body.name).toBe('OpenAI')
  })

  test('scopes: read and write', async () => {
    const reader = await alice.keyClient(['categories:read'])
    expect((await reader.get('/api/categories')).status).toBe(200)
    const denied = await reader.post('/api/categories', simple)
    expect(denied.status).toBe(403)
    expect(denied.body.code).toBe('AUTH_SCOPE_REQUIRED')
    expect(denied.body.error).toContain('categories:write')
    const writer = await alice.keyClient(['categories:write'])
    expect((await writer.post('/api/categories', { ...simple, name: `${simple.name} (by a key)` })).status).toBe(201)
    expect((await writer.get('/api/categories')).status).toBe(403)
    expect((await alice.anonymous().get('/api/categories')).body.code).toBe('AUTH_REQUIRED')
  })
})
