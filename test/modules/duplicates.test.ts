// Issue 23, "Duplicates everywhere": two categories of one name and key type, two entries of one
// category, name and environment, two env projects of one name are 409, on create, update and rename.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { signUp, type Client } from '../support/client'
import { startTestServer, type TestServer } from '../support/server'

let server: TestServer
let alice: Client

beforeAll(async () => {
  server = await startTestServer()
  alice = await signUp(server.url)
})
afterAll(() => server.stop())

async function created(answer: Promise<{ status: number; body: any; text: string }>) {
  const done = await answer
  if (done.status !== 201) throw new Error(`not created: ${done.status} ${done.text}`)
  return done.body
}

describe('duplicates are 409', () => {
  test('categories: same name (trimmed, any case) and key type: CATEGORY_EXISTS on create and on update', async () => {
    const openai = await created(alice.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' }))
    for (const name of ['OpenAI', 'openai', ' OPENAI ']) {
      const twin = await alice.post('/api/categories', { name, keyType: 'simple', envVarName: 'OTHER_KEY' })
      expect({ name, status: twin.status, code: twin.body.code }).toEqual({ name, status: 409, code: 'CATEGORY_EXISTS' })
      expect(twin.body.error).toContain('OpenAI')
    }
    // Another key type may share the name.
    const group = await created(alice.post('/api/categories', { name: 'OpenAI', keyType: 'group' }))
    const other = await created(alice.post('/api/categories', { name: 'Anthropic', keyType: 'simple', envVarName: 'ANTHROPIC_API_KEY' }))
    const renamed = await alice.put(`/api/categories/${other.id}`, { name: 'openai' })
    expect(renamed.status).toBe(409)
    expect(renamed.body.code).toBe('CATEGORY_EXISTS')
    // Changing the key type into a twin, too.
    const retyped = await alice.put(`/api/categories/${group.id}`, { keyType: 'simple', envVarName: 'X_KEY' })
    expect(retyped.status).toBe(409)
    expect(retyped.body.code).toBe('CATEGORY_EXISTS')
    // Renaming a category to itself (another case) is fine.
    expect((await alice.put(`/api/categories/${openai.id}`, { name: 'OPENAI', description: 'kept' })).status).toBe(200)
    expect((await alice.put(`/api/categories/${openai.id}`, { name: 'OpenAI' })).status).toBe(200)
    const names = (await alice.get('/api/categories')).body.filter((c: any) => c.name.toLowerCase() === 'openai')
    expect(names.map((c: any) => c.keyType).sort()).toEqual(['group', 'simple'])
  })

  test('entries: same category, name and environment: ENTRY_EXISTS on create and on update', async () => {
    const c = await created(alice.post('/api/categories', { name: 'Resend', keyType: 'simple', envVarName: 'RESEND_API_KEY' }))
    const c2 = await created(alice.post('/api/categories', { name: 'Resend EU', keyType: 'simple', envVarName: 'RESEND_API_KEY' }))
    const prod = await created(alice.post('/api/entries', { categoryId: c.id, name: 'blog', value: 'v1', environment: 'production' }))
    const twin = await alice.post('/api/entries', { categoryId: c.id, name: 'blog', value: 'v2', environment: 'production' })
    expect(twin.status).toBe(409)
    expect(twin.body.code).toBe('ENTRY_EXISTS')
    expect(twin.text).not.toContain('v2')
    // Another environment, none, another name or another category: all fine.
    const shared = await created(alice.post('/api/entries', { categoryId: c.id, name: 'blog', value: 'v' }))
    expect((await alice.post('/api/entries', { categoryId: c.id, name: 'blog', value: 'v' })).body.code).toBe('ENTRY_EXISTS')
    const dev = await created(alice.post('/api/entries', { categoryId: c.id, name: 'blog', value: 'v', environment: 'development' }))
    await created(alice.post('/api/entries', { categoryId: c.id, name: 'shop', value: 'v', environment: 'production' }))
    const elsewhere = await created(alice.post('/api/entries', { categoryId: c2.id, name: 'blog', value: 'v', environment: 'production' }))
    // Update into a twin: environment, name, category.
    for (const [id, change] of [
      [dev.id, { environment: 'production' }],
      [shared.id, { environment: 'production' }],
      [prod.id, { environment: null }],
      [elsewhere.id, { categoryId: c.id }],
    ] as [string, Record<string, unknown>][]) {
      const answer = await alice.put(`/api/entries/${id}`, change)
      expect({ change, status: answer.status, code: answer.body.code }).toEqual({ change, status: 409, code: 'ENTRY_EXISTS' })
    }
    const shop = (await alice.get('/api/entries')).body.find((e: any) => e.name === 'shop')
    expect((await alice.put(`/api/entries/${shop.id}`, { name: 'blog' })).body.code).toBe('ENTRY_EXISTS')
    // Nothing changed; updates that keep the identity still work.
    expect((await alice.get(`/api/entries/${dev.id}`)).body.environment).toBe('development')
    expect((await alice.put(`/api/entries/${prod.id}`, { value: 'v3', notes: 'n', environment: 'production' })).status).toBe(200)
  })

  test('env projects: same name (trimmed, any case): ENV_PROJECT_EXISTS on create and on rename', async () => {
    const blog = await alice.post('/api/envs', { name: 'Blog' })
    expect(blog.status).toBe(201)
    for (const name of ['Blog', 'blog', ' BLOG ']) {
      const twin = await alice.post('/api/envs', { name })
      expect({ name, status: twin.status, code: twin.body.code }).toEqual({ name, status: 409, code: 'ENV_PROJECT_EXISTS' })
    }
    const shop = await alice.post('/api/envs', { name: 'Shop' })
    const renamed = await alice.put(`/api/envs/${shop.body.data.id}`, { name: 'blog' })
    expect(renamed.status).toBe(409)
    expect(renamed.body.code).toBe('ENV_PROJECT_EXISTS')
    expect((await alice.put(`/api/envs/${blog.body.data.id}`, { name: 'BLOG', description: 'd' })).status).toBe(200)
    expect((await alice.get('/api/envs')).body.data.map((p: any) => p.name).sort()).toEqual(['BLOG', 'Shop'])
  })

  test('another user may use the same names', async () => {
    const bob = await signUp(server.url)
    expect((await bob.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' })).status).toBe(201)
    expect((await bob.post('/api/envs', { name: 'Blog' })).status).toBe(201)
  })

  test('parallel creates of one category: exactly one succeeds', async () => {
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => alice.post('/api/categories', { name: 'Racing', keyType: 'simple', envVarName: 'RACE_KEY' })),
    )
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409])
  })

  test('the 409 answers are documented', async () => {
    const doc = (await fetch(`${server.url}/api/openapi`).then((r) => r.json())) as any
    const op = (path: string, method: string) => (doc.paths[path] ?? doc.paths[`${path}/`])[method]
    expect(op('/api/categories', 'post').responses['409']).toBeDefined()
    expect(op('/api/entries', 'post').responses['409']).toBeDefined()
    expect(op('/api/entries/{id}', 'put').responses['409']).toBeDefined()
    expect(op('/api/envs', 'post').responses['409']).toBeDefined()
    expect(op('/api/envs/{id}', 'put').responses['409']).toBeDefined()
    expect(op('/api/categories/{id}', 'put').responses['409']).toBeDefined()
  })
})
