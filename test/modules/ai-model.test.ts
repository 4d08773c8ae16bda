// /api/ai with a model: the SDK talks to a fake Messages API on loopback, which records every
// request. Only names ever reach it; its answers, however malformed or hostile, are checked.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { parse as dotenvParse } from 'dotenv'
import { DEFAULT_AI_MODEL } from '../../src/config'
import { signUp, type Client } from '../support/client'
import { startFakeAnthropic, type FakeAnthropic } from '../support/fake-anthropic'
import { startTestServer, type TestServer } from '../support/server'

let fake: FakeAnthropic
let server: TestServer
let alice: Client
let bob: Client

const API_KEY = 'sk-ant-test-fake-key'

beforeAll(async () => {
  fake = await startFakeAnthropic()
  server = await startTestServer({ env: { ANTHROPIC_API_KEY: API_KEY, ANTHROPIC_BASE_URL: fake.url, SVC_AI_TIMEOUT: '3s' } })
  alice = await signUp(server.url)
  bob = await signUp(server.url)
})
afterAll(async () => {
  await server.stop()
  await fake.stop()
})
beforeEach(() => {
  fake.requests.length = 0
  fake.fallback = () => ({ status: 500, message: 'no scripted reply' })
})

// Every value distinctive, so that finding it anywhere in a request means it leaked.
const PASTED = `# .env.local of the blog
OPENAI_API_KEY=sk-proj-LEAKCHECK-openai-0001
AWS_ACCESS_KEY_ID=AKIALEAKCHECK0002
AWS_SECRET_ACCESS_KEY="leakcheck/aws#secret'0003"
DATABASE_URL="postgresql://blog:leakcheck-pw-0004@db.internal:5432/blog"
SIGNING_KEY="-----BEGIN PRIVATE KEY-----
MIIleakcheck0005
-----END PRIVATE KEY-----"
`
const PASTED_VALUES = Object.values(dotenvParse(PASTED))
const PASTED_NAMES = Object.keys(dotenvParse(PASTED))

function expectNoValueSent(values: string[]) {
  const sent = fake.everything()
  for (const value of values) {
    expect(sent).not.toContain(value)
    expect(sent).not.toContain(JSON.stringify(value).slice(1, -1))
  }
  // Not the pasted text as a whole, nor any fragment of a value.
  for (const fragment of ['LEAKCHECK', 'leakcheck']) expect(sent).not.toContain(fragment)
}

const AI_FILING = {
  keys: [
    { name: 'OPENAI_API_KEY', categoryName: 'OpenAI', keyType: 'simple', icon: 'openai' },
    { name: 'AWS_ACCESS_KEY_ID', categoryName: 'Amazon Web Services', keyType: 'group', icon: 'amazonaws' },
    { name: 'AWS_SECRET_ACCESS_KEY', categoryName: 'Amazon Web Services', keyType: 'group' },
    { name: 'DATABASE_URL', categoryName: 'Blog database', keyType: 'simple', icon: 'postgresql' },
  ],
}

describe('import through the model', () => {
  test('the model files the names; only names were sent, by a forced tool call', async () => {
    fake.script({ tool: AI_FILING })
    const answer = await alice.post('/api/ai/import', { text: PASTED })
    expect(answer.status).toBe(200)
    expect(answer.body.data.source).toBe('ai')
    expect(answer.body.data.keys).toEqual([
      { name: 'OPENAI_API_KEY', categoryName: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY', reuse: false },
      {
        name: 'AWS_ACCESS_KEY_ID',
        categoryName: 'Amazon Web Services',
        keyType: 'group',
        envVarName: 'AWS_ACCESS_KEY_ID',
        field: 'AWS_ACCESS_KEY_ID',
        reuse: false,
      },
      {
        name: 'AWS_SECRET_ACCESS_KEY',
        categoryName: 'Amazon Web Services',
        keyType: 'group',
        envVarName: 'AWS_SECRET_ACCESS_KEY',
        field: 'AWS_SECRET_ACCESS_KEY',
        reuse: false,
      },
      { name: 'DATABASE_URL', categoryName: 'Blog database', keyType: 'simple', envVarName: 'DATABASE_URL', icon: 'postgresql', reuse: false },
      // Left out by the model: filed by the built-in classifier.
      { name: 'SIGNING_KEY', categoryName: 'Variables', keyType: 'group', envVarName: 'SIGNING_KEY', field: 'SIGNING_KEY', reuse: false },
    ])

    expect(fake.requests).toHaveLength(1)
    const [request] = fake.requests
    expect(request.method).toBe('POST')
    expect(request.path).toBe('/v1/messages')
    expect(request.headers.authorization ?? request.headers['x-api-key']).toContain(API_KEY)
    expect(request.json.model).toBe(DEFAULT_AI_MODEL)
    expect(request.json.tool_choice).toEqual({ type: 'tool', name: 'file_keys' })
    expect(request.json.tools.map((t: any) => t.name)).toEqual(['file_keys'])
    expect(request.json.tools[0].input_schema.properties.keys.type).toBe('array')
    for (const name of PASTED_NAMES) expect(request.body).toContain(name)
    expectNoValueSent(PASTED_VALUES)
  })

  test('apply stores the values the server parsed, filed as the model said', async () => {
    const carol = await signUp(server.url)
    fake.script({ tool: AI_FILING })
    const applied = await carol.post('/api/ai/import', { text: PASTED, apply: true, name: 'blog', environment: 'production' })
    expect(applied.status).toBe(200)
    expect(applied.body.data.created.categories).toHaveLength(4)
    expect(applied.body.data.created.entries).toHaveLength(4)
    const names = ((await carol.get('/api/categories')).body as any[]).map((c) => c.name).sort()
    expect(names).toEqual(['Amazon Web Services', 'Blog database', 'OpenAI', 'Variables'])

    // Extract: the model sees entry names and variable names, picks ids, the server decrypts.
    fake.fallback = (request) => {
      const ids = [...String(request.json.messages[0].content).matchAll(/"id":"([0-9a-f-]{36})"/g)].map((m) => m[1])
      return { tool: { entryIds: ids } }
    }
    const extract = await carol.post('/api/ai/extract', { prompt: 'the blog in production' })
    expect(extract.status).toBe(200)
    expect(extract.headers.get('x-extraction-source')).toBe('ai')
    expect(extract.headers.get('cache-control')).toBe('no-store')
    expect(dotenvParse(extract.text)).toEqual(dotenvParse(PASTED))
    const request = fake.requests.at(-1)!
    expect(request.json.tool_choice).toEqual({ type: 'tool', name: 'select_entries' })
    for (const name of [...PASTED_NAMES, 'Amazon Web Services', 'Blog database', 'blog', 'production', 'the blog in production']) {
      expect(request.body).toContain(name)
    }
    expectNoValueSent(PASTED_VALUES)
  })
})

describe('hostile or broken model answers', () => {
  let aliceIds: string[]
  let bobIds: string[]
  const ALICE_VALUE = 'sk-alice-LEAKCHECK-own-9001'
  const BOB_VALUE = 'sk-bob-foreign-secret-9002'

  beforeAll(async () => {
    fake.fallback = () => ({ status: 503 })
    const a = await alice.post('/api/ai/import', { text: `OPENAI_API_KEY=${ALICE_VALUE}\nRESEND_API_KEY=re_alice_LEAKCHECK`, apply: true, name: 'blog' })
    const b = await bob.post('/api/ai/import', { text: `OPENAI_API_KEY=${BOB_VALUE}`, apply: true, name: 'blog' })
    aliceIds = a.body.data.created.entries
    bobIds = b.body.data.created.entries
    expect(aliceIds).toHaveLength(2)
    expect(bobIds).toHaveLength(1)
  })

  test("another user's ids, unknown ids and junk are dropped", async () => {
    fake.script({ tool: { entryIds: [bobIds[0], crypto.randomUUID(), '../../etc/passwd', 42, null, { id: aliceIds[0] }, aliceIds[0], aliceIds[0]] } })
    const answer = await alice.post('/api/ai/extract', { prompt: 'blog openai' })
    expect(answer.status).toBe(200)
    expect(answer.headers.get('x-extraction-source')).toBe('ai')
    expect(dotenvParse(answer.text)).toEqual({ OPENAI_API_KEY: ALICE_VALUE })
    expect(answer.text).not.toContain(BOB_VALUE)
    // Bob's entry was never offered to the model either.
    expect(fake.requests[0].body).not.toContain(bobIds[0])
    expect(fake.requests[0].body).toContain(aliceIds[0])
    expectNoValueSent([ALICE_VALUE, BOB_VALUE])
  })

  test('an answer without the tool call, malformed input, invalid JSON, an API error, a hang: the built-in classifier answers', async () => {
    const replies = [
      { text: 'Sure! Here are the entries: all of them.' },
      { tool: { entryIds: 'all' } },
      { tool: 'not an object' },
      { tool: [aliceIds[0]] },
      { tool: { entryIds: [aliceIds[0]] }, toolName: 'some_other_tool' },
      { raw: '{"id": "msg_1", "content": [ {"type": "tool_use", ' },
      { raw: 'not json at all', contentType: 'text/plain' },
      { raw: '' },
      { status: 500 },
      { status: 429 },
      { status: 401, message: 'invalid x-api-key' },
      { hang: true as const },
    ]
    for (const reply of replies) {
      fake.requests.length = 0
      fake.script(reply)
      const answer = await alice.post('/api/ai/extract', { prompt: 'blog openai' })
      expect(answer.status).toBe(200)
      expect(answer.headers.get('x-extraction-source')).toBe('builtin')
      expect(dotenvParse(answer.text)).toEqual({ OPENAI_API_KEY: ALICE_VALUE })
      expect(answer.text).not.toContain(BOB_VALUE)
      // One attempt each: no retry stacks on a failure or a timeout.
      expect(fake.requests).toHaveLength(1)
    }
    expect(server.logs.join('\n')).not.toContain(ALICE_VALUE)
    expect(server.logs.join('\n')).not.toContain('INTERNAL')
  })

  test('a key revoked while the model thinks gets 401, not the .env text', async () => {
    const created = await alice.post('/api/access-keys', { name: 'ai extract', scopes: ['ai:extract', 'export:read'] })
    expect(created.status).toBe(201)
    const keyClient = alice.withKey(created.body.key)
    fake.script({ hang: true })
    const pending = keyClient.post('/api/ai/extract', { prompt: 'blog openai' })
    while (fake.requests.length === 0) await Bun.sleep(5)
    expect((await alice.delete(`/api/access-keys/${created.body.id}`)).status).toBe(204)
    const answer = await pending
    expect(answer.status).toBe(401)
    expect(answer.body.code).toBe('AUTH_INVALID_KEY')
    expect(answer.text).not.toContain(ALICE_VALUE)
  })

  test('import: unknown names and invalid filings are dropped; nothing valid means builtin', async () => {
    fake.script({
      tool: {
        keys: [
          { name: 'EVIL_INJECTED_KEY', categoryName: 'Evil', keyType: 'simple' },
          { name: 'OPENAI_API_KEY', categoryName: 'x'.repeat(500), keyType: 'simple' },
          { name: 'OPENAI_API_KEY', categoryName: 'LLM', keyType: 'ssh', icon: 'openai' },
          { name: 'OPENAI_API_KEY', categoryName: 'LLM', keyType: 'simple', icon: '../../etc/passwd', envVarName: 'PATH' },
          { name: 'RESEND_API_KEY', categoryName: '\n\t', keyType: 'simple' },
          'junk',
          null,
        ],
      },
    })
    // A user without categories: every key goes to a new one.
    const fresh = await signUp(server.url)
    const answer = await fresh.post('/api/ai/import', { text: 'OPENAI_API_KEY=sk-LEAKCHECK-a\nRESEND_API_KEY=re_LEAKCHECK_b' })
    expect(answer.status).toBe(200)
    expect(answer.body.data.source).toBe('ai')
    expect(answer.body.data.keys).toEqual([
      { name: 'OPENAI_API_KEY', categoryName: 'LLM', keyType: 'simple', envVarName: 'OPENAI_API_KEY', reuse: false },
      { name: 'RESEND_API_KEY', categoryName: 'Resend', keyType: 'simple', envVarName: 'RESEND_API_KEY', icon: 'resend', reuse: false },
    ])

    for (const reply of [
      { tool: { keys: [{ name: 'NOT_PASTED', categoryName: 'X', keyType: 'simple' }] } },
      { tool: { keys: 'all' } },
      { raw: '{' },
      { hang: true as const },
    ]) {
      fake.script(reply)
      const fallback = await fresh.post('/api/ai/import', { text: 'OPENAI_API_KEY=sk-LEAKCHECK-a' })
      expect(fallback.status).toBe(200)
      expect(fallback.body.data).toEqual({
        source: 'builtin',
        keys: [{ name: 'OPENAI_API_KEY', categoryName: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY', reuse: false }],
      })
    }
    expectNoValueSent([])
  })

  test('apply with a hostile filing still files only the pasted keys and values', async () => {
    const dave = await signUp(server.url)
    fake.script({
      tool: {
        keys: [
          { name: 'OPENAI_API_KEY', categoryName: 'Shared', keyType: 'simple' },
          { name: 'RESEND_API_KEY', categoryName: 'Shared', keyType: 'simple' },
        ],
      },
    })
    const applied = await dave.post('/api/ai/import', { text: 'OPENAI_API_KEY=sk-dave-1\nRESEND_API_KEY=re_dave_2', apply: true, name: 'app' })
    expect(applied.status).toBe(200)
    // Two keys under one category name make a group, whatever each item said.
    expect(applied.body.data.keys.map((k: any) => k.keyType)).toEqual(['group', 'group'])
    expect(applied.body.data.created.categories).toHaveLength(1)
    expect(applied.body.data.created.entries).toHaveLength(1)
    fake.script({ tool: { entryIds: applied.body.data.created.entries } })
    const extract = await dave.post('/api/ai/extract', { prompt: 'app' })
    expect(dotenvParse(extract.text)).toEqual({ OPENAI_API_KEY: 'sk-dave-1', RESEND_API_KEY: 're_dave_2' })
  })
})
