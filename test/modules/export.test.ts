import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { parse } from 'dotenv'
import fc from 'fast-check'
import { quoteEnvValue } from '../../src/modules/export/render'
import { signUp } from '../support/client'
import { createCategory, createEntry } from '../support/records'
import { startTestServer, type TestServer } from '../support/server'
import { setStoredFields } from '../support/stored'

let server: TestServer

beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

/** Values that need care in a .env file; every one must come back exactly. */
const TRICKY: Record<string, string> = {
  SPACES: 'with spaces inside',
  EDGE_SPACES: '  leading and trailing  ',
  TABS: '\tTabbed\t',
  HASH: 'value # not a comment',
  HASH_FIRST: '#starts-with-hash',
  EQUALS: 'a=b==c=',
  SINGLE: "it's here",
  DOUBLE: 'say "hello"',
  BACKTICK: 'run `cmd`',
  SINGLE_WHOLE: "'quoted whole'",
  DOUBLE_WHOLE: '"quoted whole"',
  ALL_QUOTES: `'single' "double" \`back\``,
  ALL_QUOTES_LINES: `'single'\n"double"\n\`back\``,
  BACKSLASHES: 'C:\\new\\table\\r\\n\\\\',
  TRAILING_BACKSLASH: 'ends with \\',
  DOLLARS: '$HOME ${VAR} $(whoami) $$',
  UNICODE: 'ünïcødé ✓ 日本語 🔑 \u00a0nbsp',
  LINES: 'line one\nline two\n\nline four',
  PEM: '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----\n',
  CRLF: 'windows\r\nline\rbreaks',
  JSON_TEXT: '{"a": "b", "c": [1, 2]}',
  EMPTY: '',
  PLAIN: 'sk-proj_ABC.def/ghi:jkl@mno+pqr,stu-vwx',
}

describe('export', () => {
  test('the .env text: headers, order, comment lines, group fields in declared order, quoting', async () => {
    const alice = await signUp(server.url)
    // A group without declared fields: each entry its own variable, so no variable is written twice (issue 30).
    const openai = await createCategory(alice, { name: 'OpenAI', keyType: 'group' })
    const aws = await createCategory(alice, { name: 'AWS', keyType: 'group', fieldDefinitions: ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION'] })
    const anthropic = await createCategory(alice, { name: 'Anthropic', keyType: 'simple', envVarName: 'ANTHROPIC_API_KEY' })
    const smtp = await createCategory(alice, { name: 'smtp', keyType: 'group' })
    await createEntry(alice, { categoryId: openai.id, name: 'shop', value: JSON.stringify({ OPENAI_SHOP_KEY: 'sk-shop-prod' }), environment: 'production' })
    await createEntry(alice, { categoryId: openai.id, name: 'blog', value: JSON.stringify({ OPENAI_BLOG_PROD: 'sk blog prod' }), environment: 'production' })
    await createEntry(alice, { categoryId: openai.id, name: 'blog', value: JSON.stringify({ OPENAI_BLOG_DEV: 'sk-blog-dev' }), environment: 'development' })
    await createEntry(alice, { categoryId: openai.id, name: 'blog', value: JSON.stringify({ OPENAI_BLOG_KEY: 'sk-blog-none' }) })
    await createEntry(alice, { categoryId: anthropic.id, name: 'blog', value: 'sk-ant', environment: 'staging' })
    // Fields sent out of the declared order come out in the declared order.
    await createEntry(alice, { categoryId: aws.id, name: 'infra', value: JSON.stringify({ AWS_REGION: 'eu-west-1', AWS_ACCESS_KEY_ID: 'AKIA1' }) })
    await createEntry(alice, {
      categoryId: smtp.id,
      name: 'mail',
      value: JSON.stringify({ SMTP_USER: 'me', SMTP_HOST: 'mail.example' }),
      environment: 'production',
    })

    const answer = await alice.get('/api/export')
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toBe('text/plain; charset=utf-8')
    expect(answer.headers.get('content-disposition')).toBe('attachment; filename="svc-export.env"')
    expect(answer.headers.get('cache-control')).toBe('no-store')
    expect(answer.text).toBe(
      [
        '# Anthropic — blog (staging)',
        'ANTHROPIC_API_KEY=sk-ant',
        '',
        '# AWS — infra',
        'AWS_ACCESS_KEY_ID=AKIA1',
        'AWS_REGION=eu-west-1',
        '',
        '# OpenAI — blog',
        'OPENAI_BLOG_KEY=sk-blog-none',
        '',
        '# OpenAI — blog (development)',
        'OPENAI_BLOG_DEV=sk-blog-dev',
        '',
        '# OpenAI — blog (production)',
        "OPENAI_BLOG_PROD='sk blog prod'",
        '',
        '# OpenAI — shop (production)',
        'OPENAI_SHOP_KEY=sk-shop-prod',
        '',
        '# smtp — mail (production)',
        'SMTP_USER=me',
        'SMTP_HOST=mail.example',
        '',
      ].join('\n'),
    )
  })

  test('filters: environment (with shared entries, issue 23) and name, exact match; a bad environment is 400', async () => {
    const bob = await signUp(server.url)
    const github = await createCategory(bob, { name: 'GitHub', keyType: 'simple', envVarName: 'GITHUB_TOKEN' })
    await createEntry(bob, { categoryId: github.id, name: 'api', value: 'ghp-api-prod', environment: 'production' })
    await createEntry(bob, { categoryId: github.id, name: 'api', value: 'ghp-api-dev', environment: 'development' })
    await createEntry(bob, { categoryId: github.id, name: 'api-2', value: 'ghp-api2-prod', environment: 'production' })
    await createEntry(bob, { categoryId: github.id, name: 'web', value: 'ghp-web' })

    const values = async (query: string) => {
      const answer = await bob.get(`/api/export${query}`)
      expect(answer.status).toBe(200)
      return answer.text
        .split('\n')
        .filter((line) => line.startsWith('GITHUB_TOKEN='))
        .map((line) => line.slice('GITHUB_TOKEN='.length))
    }
    // Every entry writes GITHUB_TOKEN: without a selection a reader would keep one of them (issue 30).
    expect((await bob.get('/api/export')).body).toMatchObject({ code: 'AMBIGUOUS_EXPORT', variable: 'GITHUB_TOKEN' })
    // Two production entries write GITHUB_TOKEN: a program would get one of them at random.
    const ambiguous = await bob.get('/api/export?environment=production')
    expect(ambiguous.status).toBe(409)
    expect(ambiguous.body).toMatchObject({ code: 'AMBIGUOUS_EXPORT', variable: 'GITHUB_TOKEN', projects: ['api', 'api-2'] })
    expect(await values('?environment=production&name=api-2')).toEqual(['ghp-api2-prod'])
    expect((await bob.get('/api/export?name=api')).body).toMatchObject({ code: 'AMBIGUOUS_EXPORT', variable: 'GITHUB_TOKEN', projects: ['api'] })
    expect(await values('?name=api&environment=development')).toEqual(['ghp-api-dev'])
    expect(await values('?name=API')).toEqual([])
    // Staging has no entry of its own: the shared one.
    expect(await values('?environment=staging')).toEqual(['ghp-web'])
    expect(await values('?environment=staging&name=api')).toEqual([])
    expect((await bob.get('/api/export?environment=staging&name=api')).text).toBe('')

    const bad = await bob.get('/api/export?environment=prod')
    expect(bad.status).toBe(400)
    expect(bad.body.code).toBe('VALIDATION_ERROR')
    expect(bad.body.error).toContain('environment')
  })

  test('dotenv reads every stored value back exactly', async () => {
    const carol = await signUp(server.url)
    const tricky = await createCategory(carol, { name: 'Tricky', keyType: 'group', fieldDefinitions: Object.keys(TRICKY) })
    await createEntry(carol, { categoryId: tricky.id, name: 'all', value: JSON.stringify(TRICKY), environment: 'production' })
    const simpleValues: Record<string, string> = { SIMPLE_MULTI: 'a \'b\'\n"c" `d`', SIMPLE_HASH: ' # ' }
    for (const [envVarName, value] of Object.entries(simpleValues)) {
      const c = await createCategory(carol, { name: envVarName, keyType: 'simple', envVarName })
      await createEntry(carol, { categoryId: c.id, name: 'all', value })
    }
    const text = (await carol.get('/api/export')).text
    expect(parse(text)).toEqual({ ...TRICKY, ...simpleValues })
    // The fast parser of dotenv agrees.
    expect(parse(text, { fast: true } as never)).toEqual({ ...TRICKY, ...simpleValues })
    // Not plain means quoted.
    expect(text).toContain("SPACES='with spaces inside'")
    expect(text).toContain("SINGLE=`it's here`")
    expect(text).toContain('PLAIN=sk-proj_ABC.def/ghi:jkl@mno+pqr,stu-vwx\n')
  })

  test('a value no dotenv quoting can carry is refused: 400 naming only the variable and formats that can (issue 30)', async () => {
    const dave = await signUp(server.url)
    const impossible = `it's "quoted" \`all\` # ways`
    const c = await createCategory(dave, { name: 'Odd', keyType: 'group' })
    await createEntry(dave, { categoryId: c.id, name: 'odd', value: JSON.stringify({ FINE: 'ok', ODD: impossible }) })
    const refused = await dave.get('/api/export')
    expect(refused.status).toBe(400)
    expect(refused.text).not.toContain('ways')
    expect(refused.body).toMatchObject({ code: 'EXPORT_FORMAT_REFUSED', format: 'dotenv', variables: [{ variable: 'ODD' }] })
    expect(refused.body.error).toContain('ODD')
    expect(refused.body.variables[0].formats).toContain('shell')
    expect((await dave.get('/api/export?format=systemd')).status).toBe(200)
    // Reveal still gives it.
    const id = (await dave.get('/api/entries')).body[0].id
    expect((await dave.post(`/api/entries/${id}/reveal`)).body.value.ODD).toBe(impossible)
  })

  test('quoting round-trips through dotenv for arbitrary values, or says it cannot', () => {
    const chars = ['a', 'Z', '0', ' ', '\t', '#', '=', "'", '"', '`', '\\', 'n', 'r', '$', '\n', '\r', '\u2028', '\u2029', 'é', '🔑', '\u00a0', '\ufeff', ':']
    const value = fc.oneof(fc.string({ unit: fc.constantFrom(...chars), maxLength: 14 }), fc.string({ unit: 'binary', maxLength: 12 }))
    fc.assert(
      fc.property(value, (v) => {
        const quoted = quoteEnvValue(v)
        if (quoted === null) {
          // Only values holding ' and ` (or a carriage return) and something double quotes cannot
          // carry, or ending in a backslash that no quoting may close (then unquoted or refused).
          expect(v.endsWith('\\') || ((v.includes("'") || v.includes('\r')) && (v.includes('`') || v.includes('\r')))).toBe(true)
          return
        }
        const text = `# x — y (production)\nBEFORE=1\nKEY=${quoted}\n# z — w\nAFTER='z'\n`
        expect(parse(text)).toEqual({ BEFORE: '1', KEY: v, AFTER: 'z' })
      }),
      { numRuns: 4000 },
    )
  })

  test('names cannot break out of their comment line', async () => {
    const erin = await signUp(server.url)
    const c = await createCategory(erin, { name: 'Evil\nINJECTED_CAT=1', keyType: 'simple', envVarName: 'REAL' })
    await createEntry(erin, { categoryId: c.id, name: 'x\r\nINJECTED=1\u2028INJECTED_LS=1', value: 'real' })
    const text = (await erin.get('/api/export')).text
    expect(text.split('\n')[0]).toBe('# Evil INJECTED_CAT=1 — x  INJECTED=1 INJECTED_LS=1')
    expect(parse(text)).toEqual({ REAL: 'real' })
  })

  test('categories of the same name sort as one: their entries interleave by entry name', async () => {
    const gina = await signUp(server.url)
    const first = await createCategory(gina, { name: 'AWS', keyType: 'simple', envVarName: 'AWS_A' })
    // Same name, other key type (two of one key type are 409 CATEGORY_EXISTS).
    const second = await createCategory(gina, { name: 'AWS', keyType: 'group', fieldDefinitions: ['AWS_B', 'AWS_C'] })
    const earlier = await createCategory(gina, { name: 'Anthropic', keyType: 'simple', envVarName: 'ANTHROPIC_API_KEY' })
    await createEntry(gina, { categoryId: second.id, name: 'zeta', value: JSON.stringify({ AWS_C: 'z' }) })
    await createEntry(gina, { categoryId: first.id, name: 'beta', value: 'b' })
    await createEntry(gina, { categoryId: second.id, name: 'alpha', value: JSON.stringify({ AWS_B: 'a' }) })
    await createEntry(gina, { categoryId: earlier.id, name: 'main', value: 'm' })
    const comments = (await gina.get('/api/export')).text.split('\n').filter((line) => line.startsWith('#'))
    expect(comments).toEqual(['# Anthropic — main', '# AWS — alpha', '# AWS — beta', '# AWS — zeta'])
  })

  test('ssh and json entries, and entries that do not decrypt, are skipped', async () => {
    const frank = await signUp(server.url)
    const c = await createCategory(frank, { name: 'Main', keyType: 'simple', envVarName: 'MAIN_KEY' })
    const good = await createEntry(frank, { categoryId: c.id, name: 'good', value: 'good-value' })
    const broken = await createEntry(frank, { categoryId: c.id, name: 'broken', value: 'broken-value' })
    const { doc } = await server.deps.vaults.open(frank.user.id)
    const at = new Date().toISOString()
    await doc.update((data, write) => {
      setStoredFields(write.entries, data.entries, broken.id, { encryptedValue: data.entries.find((e) => e.id === good.id)!.encryptedValue })
      for (const keyType of ['ssh', 'json'] as const) {
        const id = crypto.randomUUID()
        write.categories.push({
          id,
          userId: frank.user.id,
          name: keyType,
          keyType,
          envVarName: 'SKIPPED',
          icon: null,
          description: null,
          fieldDefinitions: null,
          createdAt: at,
          updatedAt: at,
        })
        write.entries.push({
          id: crypto.randomUUID(),
          categoryId: id,
          name: keyType,
          environment: null,
          notes: null,
          encryptedValue: 'x',
          createdAt: at,
          updatedAt: at,
        })
      }
    })
    expect((await frank.get('/api/export')).text).toBe('# Main — good\nMAIN_KEY=good-value\n')
  })

  test('scope export:read; only your own entries', async () => {
    const grace = await signUp(server.url)
    const c = await createCategory(grace, { name: 'Mine', keyType: 'simple', envVarName: 'MINE' })
    await createEntry(grace, { categoryId: c.id, name: 'mine', value: 'grace-only' })
    const exporter = await grace.keyClient(['export:read'])
    const answer = await exporter.get('/api/export')
    expect(answer.status).toBe(200)
    expect(answer.headers.get('cache-control')).toBe('no-store')
    expect(parse(answer.text)).toEqual({ MINE: 'grace-only' })
    const denied = await (await grace.keyClient(['entries:reveal', 'entries:read'])).get('/api/export')
    expect(denied.status).toBe(403)
    expect(denied.body.code).toBe('AUTH_SCOPE_REQUIRED')
    expect(denied.body.error).toContain('export:read')
    expect((await grace.anonymous().get('/api/export')).body.code).toBe('AUTH_REQUIRED')
    const stranger = await signUp(server.url)
    const theirs = await stranger.get('/api/export')
    expect(theirs.status).toBe(200)
    expect(theirs.text).toBe('')
  })
})
