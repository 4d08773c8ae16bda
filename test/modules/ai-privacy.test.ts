// Issue 14, "AI privacy" and "one request must not freeze the server", over HTTP: the server's
// model client talks to a fake Messages API on loopback that records every byte it receives.
// Generated .env / shell / YAML / JSON pastes with canary values: no canary (nor any piece of a
// value that looks like a key name) ever reaches the model, on import or on a later extract, and
// every value is stored exactly as pasted. A hostile paste does not hold up other requests.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { signUp, type Client } from '../support/client'
import { startFakeAnthropic, type FakeAnthropic } from '../support/fake-anthropic'
import { startTestServer, type TestServer } from '../support/server'
import { pastes } from './ai-pastes'

let fake: FakeAnthropic
let server: TestServer

beforeAll(async () => {
  fake = await startFakeAnthropic()
  server = await startTestServer({ env: { ANTHROPIC_API_KEY: 'sk-ant-privacy-test', ANTHROPIC_BASE_URL: fake.url, SVC_AI_TIMEOUT: '5s' } })
})
afterAll(async () => {
  await server.stop()
  await fake.stop()
})

/** The model files every name it was given into a category named after the key (as a model would). */
function fileEveryName() {
  fake.fallback = (request) => {
    const content: string = request.json?.messages?.[0]?.content ?? ''
    if (request.json?.tool_choice?.name === 'file_keys') {
      const names = JSON.parse(content.slice(content.indexOf('[')))
      return { tool: { keys: names.map((name: string) => ({ name, categoryName: `Cat ${name}`, keyType: 'simple' })) } }
    }
    return { tool: { entryIds: [] } }
  }
}
beforeEach(() => {
  fake.requests.length = 0
  fileEveryName()
})

/** The markers generated values are made of (`cv…`, `LEAK_…`, `cvfold…`): none may appear in a model request. */
const markers = (value: string) => value.match(/cv[0-9a-f]{10}|LEAK_[0-9A-F]{8}|LEAK_FOLDED|cvfold\w*/g) ?? []

async function reveal(client: Client, entryId: string): Promise<string> {
  const answer = await client.post(`/api/entries/${entryId}/reveal`)
  expect(answer.status).toBe(200)
  return answer.body.value
}

describe('only names reach the model', () => {
  test('generated pastes with canary values (fast-check): no value reaches the model; every value is stored exactly', async () => {
    const user = await signUp(server.url)
    let run = 0
    await fc.assert(
      fc.asyncProperty(pastes(['env', 'shell', 'yaml', 'json', 'json-nested']), async ({ rendered }) => {
        const { text, expected } = rendered!
        fake.requests.length = 0
        const answer = await user.post('/api/ai/import', { text, apply: true, name: `paste ${++run}`, environment: 'production' })
        expect(answer.status).toBe(200)
        expect(answer.body.data.source).toBe('ai')
        // The model was asked, with the names only.
        expect(fake.requests.length).toBeGreaterThan(0)
        const sent = fake.everything()
        for (const value of Object.values(expected)) for (const marker of markers(value)) expect(sent).not.toContain(marker)
        expect(answer.body.data.keys.map((k: { name: string }) => k.name).sort()).toEqual(Object.keys(expected).sort())
        // Each key its own simple category (as filed): one entry each, holding the value as pasted.
        const byCategory = new Map<string, string>()
        for (const id of answer.body.data.created.entries) {
          const entry = (await user.get(`/api/entries/${id}`)).body
          byCategory.set(entry.categoryId, await reveal(user, id))
        }
        const categories = (await user.get('/api/categories')).body as { id: string; envVarName: string }[]
        const stored = Object.fromEntries(categories.filter((c) => byCategory.has(c.id)).map((c) => [c.envVarName, byCategory.get(c.id)]))
        expect(stored).toEqual(expected)
        // A later extract sends the model entry and category names: still no value.
        fake.requests.length = 0
        expect((await user.post('/api/ai/extract', { prompt: 'everything for production' })).status).toBe(200)
        const later = fake.everything()
        for (const value of Object.values(expected)) for (const marker of markers(value)) expect(later).not.toContain(marker)
      }),
      // Each run is a few requests; a failure is reported as found (shrinking would redo them all).
      { numRuns: 30, endOnFailure: true },
    )
  }, 120_000)

  test('a multi-line quoted YAML value: its inner text is not sent as a key name, and it is stored whole', async () => {
    const user = await signUp(server.url)
    const text = 'DB_PASSWORD: "cv0123456789\n  LEAK_ABCDEF01: cv9876543210"\nREDIS_URL: redis://x\n'
    const answer = await user.post('/api/ai/import', { text, apply: true, name: 'yaml' })
    expect(answer.status).toBe(200)
    expect(answer.body.data.keys.map((k: { name: string }) => k.name)).toEqual(['DB_PASSWORD', 'REDIS_URL'])
    const sent = fake.everything()
    for (const marker of ['LEAK_ABCDEF01', 'cv0123456789', 'cv9876543210', 'redis://']) expect(sent).not.toContain(marker)
    const values = await Promise.all(answer.body.data.created.entries.map((id: string) => reveal(user, id)))
    expect(values).toContain('cv0123456789 LEAK_ABCDEF01: cv9876543210')
  })

  test('the built-in classifier names no category from a value (a mongodb+srv:// URL), so extract sends none to the model', async () => {
    const user = await signUp(server.url)
    // The model fails for the import: the built-in classifier files the key.
    fake.fallback = () => ({ status: 500, message: 'down' })
    const answer = await user.post('/api/ai/import', {
      text: 'DB_URL=mongodb+srv://cvuser:cvpass@cluster0.cvhost.mongodb.net/app\n',
      apply: true,
      name: 'atlas',
    })
    expect(answer.status).toBe(200)
    expect(answer.body.data.source).toBe('builtin')
    expect(answer.body.data.keys).toEqual([
      { name: 'DB_URL', categoryName: 'Variables', keyType: 'group', envVarName: 'DB_URL', field: 'DB_URL', reuse: false },
    ])
    fileEveryName()
    fake.requests.length = 0
    await user.post('/api/ai/extract', { prompt: 'the atlas app' })
    const sent = fake.everything()
    expect(sent).toContain('DB_URL')
    for (const leak of ['MongoDB', 'mongodb', 'cvuser', 'cvpass', 'cvhost']) expect(sent).not.toContain(leak)
  })

  test('bidirectional controls in a category name from the model are removed', async () => {
    const user = await signUp(server.url)
    fake.script({ tool: { keys: [{ name: 'STRIPE_KEY', categoryName: '\u202eepirtS\u202c Pay\u2066ments\u2069\u200f\u061c', keyType: 'simple' }] } })
    const answer = await user.post('/api/ai/import', { text: 'STRIPE_KEY=sk_x', apply: true, name: 'shop' })
    expect(answer.status).toBe(200)
    expect(answer.body.data.keys[0].categoryName).toBe('epirtS Payments')
    const stored = (await user.get('/api/categories')).body.map((c: { name: string }) => c.name)
    expect(stored).toEqual(['epirtS Payments'])
  })
})

describe('a hostile paste does not hold up the server', () => {
  test('"k: a" + 250,000 spaces + "b" and 40,000-deep JSON: each answers quickly, and so does a request sent meanwhile', async () => {
    const user = await signUp(server.url)
    fake.fallback = () => ({ status: 500, message: 'down' })
    const cases = [
      { text: `k: a${' '.repeat(250_000)}b`, status: 200 },
      { text: `${'{"a":'.repeat(40_000)}1${'}'.repeat(40_000)}`, status: 400 },
      { text: `K=${'['.repeat(200_000)}`, status: 200 },
    ]
    for (const { text, status } of cases) {
      const started = performance.now()
      const [hostile, other] = await Promise.all([user.post('/api/ai/import', { text }), Bun.sleep(5).then(() => user.get('/api/auth/me'))])
      const ms = performance.now() - started
      expect(hostile.status).toBe(status)
      if (status === 400) expect(hostile.body).toEqual({ error: expect.stringContaining('text'), code: 'VALIDATION_ERROR' })
      expect(other.status).toBe(200)
      // Old code: 18 s and 4 s. The margin is for a busy machine, far below either.
      expect(ms).toBeLessThan(2000)
    }
  }, 60_000)
})
