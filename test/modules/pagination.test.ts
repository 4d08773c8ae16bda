// GET /api/entries and GET /api/2fa: optional limit and cursor (X-Next-Cursor and Link rel="next"),
// the whole list without them, and the filters categoryId, environment, name and q.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { signUp, type Answer, type Client } from '../support/client'
import { removeDir, startTestServer, type TestServer } from '../support/server'

let server: TestServer
let alice: Client
const categories: Record<string, string> = {}
const created: { id: string; name: string }[] = []

beforeAll(async () => {
  server = await startTestServer()
  alice = await signUp(server.url)
  for (const [name, envVarName] of [
    ['Stripe', 'STRIPE_KEY'],
    ['OpenAI', 'OPENAI_API_KEY'],
  ]) {
    categories[name] = (await alice.post('/api/categories', { name, keyType: 'simple', envVarName })).body.id
  }
  const environments = ['development', 'production', null]
  for (let i = 0; i < 7; i++) {
    const answer = await alice.post('/api/entries', {
      categoryId: i % 2 === 0 ? categories.Stripe : categories.OpenAI,
      name: i < 4 ? 'shop' : `blog-${i}`,
      environment: environments[i % 3],
      value: `v${i}`,
    })
    expect(answer.status).toBe(201)
    created.push({ id: answer.body.id, name: answer.body.name })
  }
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

/** Follows X-Next-Cursor (or Link) to the end; the ids of every page. */
async function allPages(path: string, viaLink = false): Promise<string[][]> {
  const pages: string[][] = []
  let next: string | null = path
  while (next) {
    const answer: Answer = await alice.get(next)
    expect(answer.status).toBe(200)
    pages.push(answer.body.map((item: { id: string }) => item.id))
    const cursor: string | null = answer.headers.get('x-next-cursor')
    const link: string | null = answer.headers.get('link')
    expect(Boolean(cursor)).toBe(Boolean(link))
    if (link) expect(link).toMatch(/^<\/api\/[^>]+>; rel="next"$/)
    next = viaLink ? (link ? /^<([^>]+)>/.exec(link)![1] : null) : cursor ? `${path}${path.includes('?') ? '&' : '?'}cursor=${cursor}` : null
    expect(pages.length).toBeLessThan(20)
  }
  return pages
}

describe('GET /api/entries', () => {
  test('without limit or cursor: the whole array, no paging headers', async () => {
    const answer = await alice.get('/api/entries')
    expect(answer.body.map((e: { id: string }) => e.id)).toEqual(created.map((e) => e.id))
    expect(answer.headers.get('x-next-cursor')).toBeNull()
    expect(answer.headers.get('link')).toBeNull()
  })

  test('limit pages through every entry once, in order, by cursor and by Link', async () => {
    const ids = created.map((e) => e.id)
    expect(await allPages('/api/entries?limit=3')).toEqual([ids.slice(0, 3), ids.slice(3, 6), ids.slice(6)])
    expect((await allPages('/api/entries?limit=3', true)).flat()).toEqual(ids)
    expect(await allPages('/api/entries?limit=7')).toEqual([ids])
  })

  test('a page continues after its last item even when that item or earlier ones were deleted', async () => {
    const first = await alice.get('/api/entries?limit=2')
    const cursor = first.headers.get('x-next-cursor')!
    const extra = await alice.post('/api/entries', { categoryId: categories.Stripe, name: 'temp', value: 'x' })
    expect((await alice.delete(`/api/entries/${created[0].id}`)).status).toBe(204)
    const second = await alice.get(`/api/entries?limit=2&cursor=${cursor}`)
    expect(second.body.map((e: { id: string }) => e.id)).toEqual([created[2].id, created[3].id])
    // The cursor's own item gone: the next page starts where it stood.
    expect((await alice.delete(`/api/entries/${created[1].id}`)).status).toBe(204)
    const third = await alice.get(`/api/entries?limit=2&cursor=${cursor}`)
    expect(third.body.map((e: { id: string }) => e.id)).toEqual([created[2].id, created[3].id])
    // Put back what this test changed.
    expect((await alice.delete(`/api/entries/${extra.body.id}`)).status).toBe(204)
    for (const index of [0, 1]) {
      const i = index
      const again = await alice.post('/api/entries', {
        categoryId: i % 2 === 0 ? categories.Stripe : categories.OpenAI,
        name: 'shop',
        environment: ['development', 'production'][i],
        value: `v${i}`,
      })
      created.push({ id: again.body.id, name: 'shop' })
    }
    created.splice(0, 2)
  })

  test('filters: categoryId, environment, name (exact), q (any case, category and variable names too)', async () => {
    const names = async (query: string) =>
      (await alice.get(`/api/entries?${query}`)).body.map((e: { name: string; environment: string | null; category: { name: string } }) => [
        e.category.name,
        e.name,
        e.environment,
      ])
    expect((await names(`categoryId=${categories.OpenAI}`)).every(([category]: string[]) => category === 'OpenAI')).toBe(true)
    expect((await names('environment=production')).every(([, , environment]: string[]) => environment === 'production')).toBe(true)
    expect((await names('name=shop')).every(([, name]: string[]) => name === 'shop')).toBe(true)
    expect((await names('name=sho')).length).toBe(0)
    expect((await names('q=BLOG')).map(([, name]: string[]) => name).sort()).toEqual(['blog-4', 'blog-5', 'blog-6'])
    expect((await names('q=openai_api')).every(([category]: string[]) => category === 'OpenAI')).toBe(true)
    expect((await names('q=openai_api')).length).toBeGreaterThan(0)
    // Filters and pages together.
    const pages = await allPages(`/api/entries?categoryId=${categories.Stripe}&limit=1`)
    expect(pages.flat().length).toBe((await names(`categoryId=${categories.Stripe}`)).length)
  })

  test('bad paging input: 400 VALIDATION_ERROR, never a 500', async () => {
    for (const query of ['limit=0', 'limit=1001', 'limit=abc', 'cursor=%%%', 'cursor=bm9wZQ', 'environment=prod']) {
      const answer = await alice.get(`/api/entries?${query}`)
      expect(answer.status).toBe(400)
      expect(answer.body.code).toBe('VALIDATION_ERROR')
    }
  })
})

describe('GET /api/2fa', () => {
  test('pages and filters like the entries', async () => {
    const ids: string[] = []
    for (const [service, accountName] of [
      ['GitHub', 'alice'],
      ['GitLab', 'alice'],
      ['AWS', 'root'],
      ['GitHub', 'work'],
    ]) {
      const answer = await alice.post('/api/2fa', { service, accountName, secret: 'JBSWY3DPEHPK3PXP' })
      expect(answer.status).toBe(201)
      ids.push(answer.body.id)
    }
    const whole = await alice.get('/api/2fa')
    expect(whole.body.map((t: { id: string }) => t.id)).toEqual(ids)
    expect(whole.headers.get('x-next-cursor')).toBeNull()
    expect(await allPages('/api/2fa?limit=3')).toEqual([ids.slice(0, 3), ids.slice(3)])
    expect((await alice.get('/api/2fa?name=GitHub')).body.map((t: { id: string }) => t.id)).toEqual([ids[0], ids[3]])
    expect((await alice.get('/api/2fa?q=git')).body.length).toBe(3)
    expect((await alice.get('/api/2fa?q=ROOT')).body.map((t: { id: string }) => t.id)).toEqual([ids[2]])
    expect((await alice.get('/api/2fa?limit=2000')).status).toBe(400)
  })
})
