// Issue 23, "Import duplicates instead of reusing": import reuses a category that has the variable
// (simple) or all the fields (group), updates the entry of the same category, name and
// environment, and marks each suggested category reuse: true (existing) or false (new).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { signUp, type Client } from '../support/client'
import { startTestServer, type TestServer } from '../support/server'

let server: TestServer

beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

async function created(answer: Promise<{ status: number; body: any; text: string }>) {
  const done = await answer
  if (done.status !== 201) throw new Error(`not created: ${done.status} ${done.text}`)
  return done.body
}

const importText = (client: Client, text: string, extra: Record<string, unknown> = {}) => client.post('/api/ai/import', { text, ...extra })
const keyNamed = (answer: any, name: string) => answer.body.data.keys.find((k: any) => k.name === name)

async function reveal(client: Client, id: string) {
  return (await client.post(`/api/entries/${id}/reveal`)).body.value
}

describe('import reuses categories and entries', () => {
  test('a simple category holding the variable is reused, whatever the suggestion said', async () => {
    const alice = await signUp(server.url)
    const openai = await created(alice.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' }))
    const text = 'OPENAI_API_KEY=sk-new\nOPENAI_ORG_ID=org-1\nRESEND_API_KEY=re_1\n'
    const suggestion = await importText(alice, text)
    expect(suggestion.status).toBe(200)
    expect(keyNamed(suggestion, 'OPENAI_API_KEY')).toMatchObject({ categoryName: 'OpenAI', keyType: 'simple', reuse: true, categoryId: openai.id })
    expect(keyNamed(suggestion, 'RESEND_API_KEY')).toMatchObject({ reuse: false })
    expect(keyNamed(suggestion, 'RESEND_API_KEY').categoryId).toBeUndefined()
    for (const key of suggestion.body.data.keys) expect(typeof key.reuse).toBe('boolean')
    // Nothing stored by a suggestion.
    expect((await alice.get('/api/categories')).body).toHaveLength(1)

    const applied = await importText(alice, text, { apply: true, name: 'blog', environment: 'production' })
    expect(applied.status).toBe(200)
    expect(applied.body.data.created.categories).not.toContain(openai.id)
    const categories = (await alice.get('/api/categories')).body
    // One category of each name and key type; only one writes OPENAI_API_KEY.
    const writers = categories.filter((c: any) => c.envVarName === 'OPENAI_API_KEY' || (c.fieldDefinitions ?? []).includes('OPENAI_API_KEY'))
    expect(writers.map((c: any) => c.id)).toEqual([openai.id])
    const entries = (await alice.get('/api/entries')).body
    const openaiEntry = entries.find((e: any) => e.categoryId === openai.id)
    expect(openaiEntry).toMatchObject({ name: 'blog', environment: 'production' })
    expect(await reveal(alice, openaiEntry.id)).toBe('sk-new')
    const exported = await alice.get('/api/export?environment=production&format=json')
    expect(exported.status).toBe(200)
    expect(JSON.parse(exported.text)).toEqual({ OPENAI_API_KEY: 'sk-new', OPENAI_ORG_ID: 'org-1', RESEND_API_KEY: 're_1' })
  })

  test('a group category with all the fields is reused (declared fields, or the fields its entries hold)', async () => {
    const bob = await signUp(server.url)
    const declared = await created(bob.post('/api/categories', { name: 'Database', keyType: 'group', fieldDefinitions: ['DB_HOST', 'DB_PASSWORD', 'DB_PORT'] }))
    const suggestion = await importText(bob, 'DB_HOST=db.local\nDB_PASSWORD=pw\n')
    for (const name of ['DB_HOST', 'DB_PASSWORD']) {
      expect(keyNamed(suggestion, name)).toMatchObject({ categoryName: 'Database', keyType: 'group', field: name, reuse: true, categoryId: declared.id })
    }
    const applied = await importText(bob, 'DB_HOST=db.local\nDB_PASSWORD=pw\n', { apply: true, name: 'blog' })
    expect(applied.body.data.created.categories).toEqual([])
    expect((await bob.get('/api/categories')).body.map((c: any) => c.name)).toEqual(['Database'])

    // Undeclared fields: the ones its entries hold count.
    const carol = await signUp(server.url)
    const loose = await created(carol.post('/api/categories', { name: 'Cache', keyType: 'group' }))
    await created(carol.post('/api/entries', { categoryId: loose.id, name: 'shop', value: JSON.stringify({ KV_URL: 'redis://x', KV_TOKEN: 't' }) }))
    const looseSuggestion = await importText(carol, 'KV_URL=redis://y\nKV_TOKEN=t2\n')
    expect(keyNamed(looseSuggestion, 'KV_URL')).toMatchObject({ categoryName: 'Cache', reuse: true, categoryId: loose.id })
    expect(keyNamed(looseSuggestion, 'KV_TOKEN')).toMatchObject({ categoryName: 'Cache', reuse: true, categoryId: loose.id })
  })

  test('importing again updates the entry of the same category, name and environment instead of adding one', async () => {
    const dave = await signUp(server.url)
    const text = 'AWS_ACCESS_KEY_ID=AKIA1\nAWS_SECRET_ACCESS_KEY=secret1\nSTRIPE_SECRET_KEY=sk_1\n'
    const first = await importText(dave, text, { apply: true, name: 'shop', environment: 'production' })
    expect(first.status).toBe(200)
    const before = (await dave.get('/api/entries')).body
    const again = await importText(dave, 'AWS_ACCESS_KEY_ID=AKIA2\nSTRIPE_SECRET_KEY=sk_2\n', { apply: true, name: 'shop', environment: 'production' })
    expect(again.status).toBe(200)
    expect(again.body.data.created).toEqual({ categories: [], entries: [] })
    expect(again.body.data.updated.entries.sort()).toEqual(before.map((e: any) => e.id).sort())
    for (const key of again.body.data.keys) expect(key.reuse).toBe(true)
    const after = (await dave.get('/api/entries')).body
    expect(after.map((e: any) => e.id).sort()).toEqual(before.map((e: any) => e.id).sort())
    // The new values, and a group's field left out of the second paste is kept.
    const exported = JSON.parse((await dave.get('/api/export?environment=production&format=json')).text)
    expect(exported).toEqual({ AWS_ACCESS_KEY_ID: 'AKIA2', AWS_SECRET_ACCESS_KEY: 'secret1', STRIPE_SECRET_KEY: 'sk_2' })
    // Another environment or name is another entry.
    const staging = await importText(dave, 'STRIPE_SECRET_KEY=sk_s\n', { apply: true, name: 'shop', environment: 'staging' })
    expect(staging.body.data.created.entries).toHaveLength(1)
    expect((await dave.get('/api/entries')).body).toHaveLength(before.length + 1)
  })

  test('a new category never clashes with an existing one of the same name and key type', async () => {
    const erin = await signUp(server.url)
    // A simple "OpenAI" for another variable: OPENAI_ORG_ID then needs its own simple category.
    await created(erin.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_PROJECT' }))
    const applied = await importText(erin, 'OPENAI_ORG_ID=org-1\n', { apply: true, name: 'blog' })
    expect(applied.status).toBe(200)
    const names = (await erin.get('/api/categories')).body.map((c: any) => `${c.keyType}:${c.name.toLowerCase()}`)
    expect(new Set(names).size).toBe(names.length)
  })

  test('the suggestion answer documents reuse in OpenAPI', async () => {
    const doc = (await fetch(`${server.url}/api/openapi`).then((r) => r.json())) as any
    expect(JSON.stringify(doc.paths['/api/ai/import'].post.responses['200'])).toContain('reuse')
  })
})
