// /api/ai without a model (no ANTHROPIC_API_KEY): the built-in classifier answers.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { parse as dotenvParse } from 'dotenv'
import { signUp, type Client } from '../support/client'
import { startTestServer, type TestServer } from '../support/server'

let server: TestServer
let alice: Client
let bob: Client

beforeAll(async () => {
  server = await startTestServer()
  alice = await signUp(server.url)
  bob = await signUp(server.url)
})
afterAll(() => server.stop())

const NEXT_APP = `# .env.local
OPENAI_API_KEY=sk-proj-builtin-openai-1
AWS_ACCESS_KEY_ID=AKIABUILTIN0001
AWS_SECRET_ACCESS_KEY="wJalr/builtin#secret"
RESEND_API_KEY=re_builtin_resend
PORT=3000
`

describe('POST /api/ai/import (built-in)', () => {
  test('suggests categories without storing anything; source is builtin', async () => {
    // A user of its own: an empty vault whatever the other tests (in any order) stored.
    const alice = await signUp(server.url)
    const answer = await alice.post('/api/ai/import', { text: NEXT_APP })
    expect(answer.status).toBe(200)
    expect(answer.body.data.source).toBe('builtin')
    expect(answer.body.data.created).toBeUndefined()
    expect(answer.body.data.keys).toEqual([
      { name: 'OPENAI_API_KEY', categoryName: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY', reuse: false },
      { name: 'AWS_ACCESS_KEY_ID', categoryName: 'AWS', keyType: 'group', envVarName: 'AWS_ACCESS_KEY_ID', field: 'AWS_ACCESS_KEY_ID', reuse: false },
      {
        name: 'AWS_SECRET_ACCESS_KEY',
        categoryName: 'AWS',
        keyType: 'group',
        envVarName: 'AWS_SECRET_ACCESS_KEY',
        field: 'AWS_SECRET_ACCESS_KEY',
        reuse: false,
      },
      { name: 'RESEND_API_KEY', categoryName: 'Resend', keyType: 'simple', envVarName: 'RESEND_API_KEY', icon: 'resend', reuse: false },
      { name: 'PORT', categoryName: 'Variables', keyType: 'group', envVarName: 'PORT', field: 'PORT', reuse: false },
    ])
    // Names only in the answer, never a value.
    for (const value of Object.values(dotenvParse(NEXT_APP))) if (value.length > 4) expect(answer.text).not.toContain(value)
    expect((await alice.get('/api/categories')).body).toEqual([])
  })

  test('JSON and YAML pastes', async () => {
    const json = await alice.post('/api/ai/import', { text: JSON.stringify({ stripe: { secret_key: 'sk_x', publishable_key: 'pk_x' } }) })
    expect(json.status).toBe(200)
    expect(json.body.data.keys.map((k: any) => [k.name, k.categoryName, k.keyType])).toEqual([
      ['STRIPE_SECRET_KEY', 'Stripe', 'group'],
      ['STRIPE_PUBLISHABLE_KEY', 'Stripe', 'group'],
    ])
    const yaml = await alice.post('/api/ai/import', { text: 'SENTRY_DSN: https://abc@sentry.io/1\nREDIS_URL: "redis://cache:6379"\n' })
    expect(yaml.body.data.keys.map((k: any) => [k.name, k.categoryName, k.icon])).toEqual([
      ['SENTRY_DSN', 'Sentry', 'sentry'],
      ['REDIS_URL', 'Redis', 'redis'],
    ])
  })

  test('apply files the keys: categories created or reused, one entry per category, in one write', async () => {
    const carol = await signUp(server.url)
    const existing = await carol.post('/api/categories', { name: 'My OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' })
    expect(existing.status).toBe(201)
    const applied = await carol.post('/api/ai/import', { text: NEXT_APP, apply: true, name: 'blog', environment: 'production' })
    expect(applied.status).toBe(200)
    const { created, keys, source } = applied.body.data
    expect(source).toBe('builtin')
    expect(keys).toHaveLength(5)
    // OpenAI reused (same envVarName); AWS, Resend and the plain variables' group (PORT) created.
    expect(created.categories).toHaveLength(3)
    expect(created.entries).toHaveLength(4)
    const categories = (await carol.get('/api/categories')).body as any[]
    expect(categories.map((c) => c.name).sort()).toEqual(['AWS', 'My OpenAI', 'Resend', 'Variables'])
    const aws = categories.find((c) => c.name === 'AWS')
    expect(aws).toMatchObject({ keyType: 'group', icon: null, envVarName: null, fieldDefinitions: ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'] })
    expect(created.categories).toContain(aws.id)
    expect(created.categories).not.toContain(existing.body.id)

    // The stored values come back exactly through extract (the export format).
    const extract = await carol.post('/api/ai/extract', { prompt: 'the blog with openai and aws, production' })
    expect(extract.status).toBe(200)
    expect(extract.headers.get('x-extraction-source')).toBe('builtin')
    expect(extract.headers.get('content-type')).toBe('text/plain; charset=utf-8')
    expect(extract.headers.get('cache-control')).toBe('no-store')
    expect(dotenvParse(extract.text)).toEqual({
      AWS_ACCESS_KEY_ID: 'AKIABUILTIN0001',
      AWS_SECRET_ACCESS_KEY: 'wJalr/builtin#secret',
      OPENAI_API_KEY: 'sk-proj-builtin-openai-1',
    })
    expect(extract.text).toContain('# AWS — blog (production)')

    // A second apply reuses every category (the group by its name) and adds entries.
    const again = await carol.post('/api/ai/import', { text: 'AWS_ACCESS_KEY_ID=AKIA2\nAWS_REGION=eu-west-1\n', apply: true, name: 'shop' })
    expect(again.status).toBe(200)
    expect(again.body.data.created.categories).toEqual([])
    expect(again.body.data.created.entries).toHaveLength(1)
    const widened = (await carol.get(`/api/categories/${aws.id}`)).body
    expect(widened.fieldDefinitions).toEqual(['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION'])
    const shop = await carol.post('/api/ai/extract', { prompt: 'shop aws' })
    expect(dotenvParse(shop.text)).toEqual({ AWS_ACCESS_KEY_ID: 'AKIA2', AWS_REGION: 'eu-west-1' })
  })

  test('values are sealed: no plaintext in the data folder', async () => {
    const dave = await signUp(server.url)
    const marker = 'sk-proj-plaintext-canary-7f3a9'
    expect((await dave.post('/api/ai/import', { text: `OPENAI_API_KEY=${marker}`, apply: true, name: 'p' })).status).toBe(200)
    const { Glob } = await import('bun')
    for await (const file of new Glob('**/*').scan({ cwd: server.dataDir, absolute: true })) {
      expect(await Bun.file(file).text()).not.toContain(marker)
    }
    expect(server.logs.join('\n')).not.toContain(marker)
  })

  test('bad input is 400 naming the field, and stores nothing', async () => {
    const erin = await signUp(server.url)
    const cases: [unknown, string, string][] = [
      [{ text: NEXT_APP, apply: true }, 'VALIDATION_ERROR', 'name'],
      [{ text: NEXT_APP, apply: true, name: '' }, 'VALIDATION_ERROR', 'name'],
      [{ text: '' }, 'VALIDATION_ERROR', 'text'],
      [{ text: 'just some words, no keys' }, 'VALIDATION_ERROR', 'text'],
      [{ text: '# only a comment\n\n' }, 'VALIDATION_ERROR', 'text'],
      [{ text: 'x'.repeat(256 * 1024 + 1) }, 'VALIDATION_ERROR', 'text'],
      [{ text: NEXT_APP, apply: true, name: 'p', environment: 'prod' }, 'VALIDATION_ERROR', 'environment'],
      [{ text: NEXT_APP, extra: 1 }, 'VALIDATION_ERROR', 'extra'],
      [{}, 'VALIDATION_ERROR', 'text'],
      [{ text: `BIG=${'v'.repeat(64 * 1024 + 1)}`, apply: true, name: 'p' }, 'INVALID_VALUE', 'BIG'],
    ]
    for (const [body, code, field] of cases) {
      const answer = await erin.post('/api/ai/import', body)
      expect(answer.status).toBe(400)
      expect(answer.body.code).toBe(code)
      expect(answer.body.error).toContain(field)
    }
    expect((await erin.post('/api/ai/import', '{"text":')).body.code).toBe('INVALID_JSON')
    expect((await erin.get('/api/categories')).body).toEqual([])
  })
})

describe('POST /api/ai/extract (built-in)', () => {
  test('only the caller’s own entries; no match gives an empty .env', async () => {
    await bob.post('/api/ai/import', { text: 'OPENAI_API_KEY=sk-bob-only-secret\n', apply: true, name: 'blog' })
    await alice.post('/api/ai/import', { text: 'OPENAI_API_KEY=sk-alice-own-secret\n', apply: true, name: 'blog' })
    const answer = await alice.post('/api/ai/extract', { prompt: 'blog with OpenAI' })
    expect(answer.status).toBe(200)
    expect(dotenvParse(answer.text)).toEqual({ OPENAI_API_KEY: 'sk-alice-own-secret' })
    expect(answer.text).not.toContain('sk-bob-only-secret')
    const none = await alice.post('/api/ai/extract', { prompt: 'a kubernetes operator' })
    expect(none.status).toBe(200)
    expect(none.text).toBe('')
    expect(none.headers.get('x-extraction-source')).toBe('builtin')
  })

  test('prompt limits', async () => {
    for (const body of [{ prompt: '' }, { prompt: 'x'.repeat(4001) }, {}, { prompt: 'ok', extra: true }]) {
      const answer = await alice.post('/api/ai/extract', body)
      expect(answer.status).toBe(400)
      expect(answer.body.code).toBe('VALIDATION_ERROR')
    }
    expect((await alice.post('/api/ai/extract', { prompt: 'x'.repeat(4000) })).status).toBe(200)
  })
})

describe('scopes', () => {
  test('both endpoints need ai:extract', async () => {
    const other = await alice.keyClient(['entries:read', 'export:read', 'categories:write'])
    for (const [path, body] of [
      ['/api/ai/extract', { prompt: 'blog' }],
      ['/api/ai/import', { text: 'A=1' }],
    ] as const) {
      const denied = await other.post(path, body)
      expect(denied.status).toBe(403)
      expect(denied.body.code).toBe('AUTH_SCOPE_REQUIRED')
      expect(denied.body.error).toContain('ai:extract')
      expect((await alice.anonymous().post(path, body)).body.code).toBe('AUTH_REQUIRED')
    }
  })

  // Issue 14: a key with ai:extract alone read every value by prompt and created entries by import.
  test('extract answers values only to a session or a key that also holds export:read', async () => {
    const frank = await signUp(server.url)
    await frank.post('/api/ai/import', { text: 'OPENAI_API_KEY=sk-frank-scope-secret\n', apply: true, name: 'blog' })
    const aiOnly = await frank.keyClient(['ai:extract'])
    const denied = await aiOnly.post('/api/ai/extract', { prompt: 'blog openai' })
    expect(denied.status).toBe(403)
    expect(denied.body).toEqual({ error: expect.stringContaining('export:read'), code: 'AUTH_SCOPE_REQUIRED' })
    expect(denied.text).not.toContain('sk-frank-scope-secret')
    // export:read alone is not enough either: ai:extract is named.
    const exportOnly = await frank.keyClient(['export:read'])
    expect((await exportOnly.post('/api/ai/extract', { prompt: 'blog openai' })).body.error).toContain('ai:extract')
    const both = await frank.keyClient(['ai:extract', 'export:read'])
    const allowed = await both.post('/api/ai/extract', { prompt: 'blog openai' })
    expect(allowed.status).toBe(200)
    expect(dotenvParse(allowed.text)).toEqual({ OPENAI_API_KEY: 'sk-frank-scope-secret' })
    expect(dotenvParse((await frank.post('/api/ai/extract', { prompt: 'blog openai' })).text)).toEqual({ OPENAI_API_KEY: 'sk-frank-scope-secret' })
  })

  test('import with apply needs categories:write and entries:write too; a suggestion alone needs ai:extract', async () => {
    const grace = await signUp(server.url)
    const aiOnly = await grace.keyClient(['ai:extract'])
    expect((await aiOnly.post('/api/ai/import', { text: 'GITHUB_TOKEN=ghp_x' })).status).toBe(200)
    for (const [scopes, missing] of [
      [['ai:extract'], 'categories:write'],
      [['ai:extract', 'categories:write'], 'entries:write'],
      [['ai:extract', 'entries:write'], 'categories:write'],
    ] as const) {
      const key = await grace.keyClient([...scopes])
      const denied = await key.post('/api/ai/import', { text: 'GITHUB_TOKEN=ghp_x', apply: true, name: 'ci' })
      expect(denied.status).toBe(403)
      expect(denied.body).toEqual({ error: expect.stringContaining(missing), code: 'AUTH_SCOPE_REQUIRED' })
    }
    expect((await grace.get('/api/categories')).body).toEqual([])
    expect((await grace.get('/api/entries')).body).toEqual([])
    const full = await grace.keyClient(['ai:extract', 'categories:write', 'entries:write'])
    const filed = await full.post('/api/ai/import', { text: 'GITHUB_TOKEN=ghp_x', apply: true, name: 'ci' })
    expect(filed.status).toBe(200)
    expect(filed.body.data.created.entries).toHaveLength(1)
  })
})
