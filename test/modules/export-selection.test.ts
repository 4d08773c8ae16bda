// Issue 23 (per-environment exports: shared entries, one value per variable) and issue 14
// (formats safe to source: shell and JSON), plus the export's ETag.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse } from 'dotenv'
import fc from 'fast-check'
import { shellLine, shellQuote } from '../../src/modules/export/render'
import { signUp } from '../support/client'
import { createCategory, createEntry } from '../support/records'
import { startTestServer, type TestServer } from '../support/server'

let server: TestServer

beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

describe('per-environment exports (issue 23)', () => {
  test('an environment includes the shared entries; its own entry wins per variable; all environments unchanged', async () => {
    const alice = await signUp(server.url)
    const openai = await createCategory(alice, { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' })
    const sentry = await createCategory(alice, { name: 'Sentry', keyType: 'simple', envVarName: 'SENTRY_DSN' })
    const db = await createCategory(alice, { name: 'Database', keyType: 'group', fieldDefinitions: ['DB_HOST', 'DB_PASSWORD'] })
    await createEntry(alice, { categoryId: openai.id, name: 'blog', value: 'sk-shared' })
    await createEntry(alice, { categoryId: openai.id, name: 'blog', value: 'sk-prod', environment: 'production' })
    await createEntry(alice, { categoryId: sentry.id, name: 'blog', value: 'https://sentry.example/1' })
    await createEntry(alice, { categoryId: db.id, name: 'blog', value: JSON.stringify({ DB_HOST: 'db.local', DB_PASSWORD: 'shared-pw' }) })
    await createEntry(alice, { categoryId: db.id, name: 'blog', value: JSON.stringify({ DB_PASSWORD: 'prod-pw' }), environment: 'production' })

    const production = await alice.get('/api/export?environment=production')
    expect(production.status).toBe(200)
    expect(parse(production.text)).toEqual({
      OPENAI_API_KEY: 'sk-prod',
      SENTRY_DSN: 'https://sentry.example/1',
      DB_HOST: 'db.local',
      DB_PASSWORD: 'prod-pw',
    })
    // Each variable once: the shared entries' lines the environment overrides are not written.
    expect(production.text.match(/^OPENAI_API_KEY=/gm)).toHaveLength(1)
    expect(production.text.match(/^DB_PASSWORD=/gm)).toHaveLength(1)
    expect(production.text).not.toContain('sk-shared')
    expect(production.text).not.toContain('shared-pw')
    // An environment without entries of its own: the shared ones (not an empty export).
    expect(parse((await alice.get('/api/export?environment=staging')).text)).toEqual({
      OPENAI_API_KEY: 'sk-shared',
      SENTRY_DSN: 'https://sentry.example/1',
      DB_HOST: 'db.local',
      DB_PASSWORD: 'shared-pw',
    })
    // Without environment, two entries write DB_PASSWORD and OPENAI_API_KEY: a reader would keep one of them (issue 30).
    const all = await alice.get('/api/export')
    expect(all.status).toBe(409)
    expect(all.body).toMatchObject({ code: 'AMBIGUOUS_EXPORT', variable: 'DB_PASSWORD', projects: ['blog'] })
  })

  test('a variable two entries would still write: 409 AMBIGUOUS_EXPORT naming it and the projects; name narrows', async () => {
    const bob = await signUp(server.url)
    const openai = await createCategory(bob, { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' })
    const resend = await createCategory(bob, { name: 'Resend', keyType: 'simple', envVarName: 'RESEND_API_KEY' })
    for (const project of ['blog', 'shop', 'wiki']) {
      await createEntry(bob, { categoryId: openai.id, name: project, value: `sk-${project}`, environment: 'production' })
    }
    await createEntry(bob, { categoryId: resend.id, name: 'shop', value: 're-shop' })

    const ambiguous = await bob.get('/api/export?environment=production')
    expect(ambiguous.status).toBe(409)
    expect(ambiguous.headers.get('content-type')).toContain('application/json')
    expect(ambiguous.headers.get('content-disposition')).toBeNull()
    expect(ambiguous.body).toEqual({
      error: expect.stringContaining('OPENAI_API_KEY'),
      code: 'AMBIGUOUS_EXPORT',
      variable: 'OPENAI_API_KEY',
      projects: ['blog', 'shop', 'wiki'],
    })
    for (const project of ['blog', 'shop', 'wiki']) expect(ambiguous.body.error).toContain(project)
    // No value in the error.
    expect(ambiguous.text).not.toContain('sk-')

    expect(parse((await bob.get('/api/export?environment=production&name=shop')).text)).toEqual({ OPENAI_API_KEY: 'sk-shop', RESEND_API_KEY: 're-shop' })
    expect(parse((await bob.get('/api/export?environment=production&name=wiki')).text)).toEqual({ OPENAI_API_KEY: 'sk-wiki' })
    // Without environment the same rule, in every format (issue 30).
    for (const format of ['dotenv', 'bun', 'node', 'python', 'docker', 'systemd', 'shell', 'json', 'yaml']) {
      const all = await bob.get(`/api/export?format=${format}`)
      expect(all.status).toBe(409)
      expect(all.body).toMatchObject({ code: 'AMBIGUOUS_EXPORT', variable: 'OPENAI_API_KEY', projects: ['blog', 'shop', 'wiki'] })
    }
    expect(parse((await bob.get('/api/export?name=wiki')).text)).toEqual({ OPENAI_API_KEY: 'sk-wiki' })
    // Two shared entries of one variable are ambiguous for any environment.
    const carol = await signUp(server.url)
    const c = await createCategory(carol, { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' })
    await createEntry(carol, { categoryId: c.id, name: 'a', value: 'sk-a' })
    await createEntry(carol, { categoryId: c.id, name: 'b', value: 'sk-b' })
    expect((await carol.get('/api/export?environment=development')).body).toMatchObject({
      code: 'AMBIGUOUS_EXPORT',
      variable: 'OPENAI_API_KEY',
      projects: ['a', 'b'],
    })
    // ... until one environment has its own, which then wins over both.
    await createEntry(carol, { categoryId: c.id, name: 'a', value: 'sk-dev', environment: 'development' })
    expect(parse((await carol.get('/api/export?environment=development')).text)).toEqual({ OPENAI_API_KEY: 'sk-dev' })
  })

  test('the 409 is documented in OpenAPI with variable and projects, and the format, ETag and 304 too', async () => {
    const doc = (await fetch(`${server.url}/api/openapi`).then((r) => r.json())) as any
    const operation = doc.paths['/api/export'].get ?? doc.paths['/api/export/'].get
    const ref = operation.responses['409'].content['application/json'].schema.$ref.replace('#/components/schemas/', '')
    const conflict = JSON.stringify(doc.components.schemas[ref])
    expect(conflict).toContain('variable')
    expect(conflict).toContain('projects')
    expect(operation.responses['304'].headers.ETag).toBeDefined()
    expect(operation.responses['304'].headers.Location).toBeUndefined()
    expect(operation.responses['304'].content).toBeUndefined()
    expect(operation.responses['200'].headers.ETag).toBeDefined()
    expect(Object.keys(operation.responses['200'].content).sort()).toEqual(['application/json', 'application/yaml', 'text/plain'])
    // The 400 names the refused variables (issue 30).
    const refusedRef = operation.responses['400'].content['application/json'].schema.$ref.replace('#/components/schemas/', '')
    expect(JSON.stringify(doc.components.schemas[refusedRef])).toContain('variables')
    expect(JSON.stringify(operation.parameters)).toContain('format')
    expect(JSON.stringify(operation)).toContain('ETag')
  })
})

// Values a shell would run or mangle if it interpreted them.
const PWNED = '__PWNED_DIR__'
const HOSTILE: Record<string, string> = {
  BACKTICKS: `\`touch ${PWNED}/backticks\``,
  SUBSTITUTION: `$(touch ${PWNED}/substitution)`,
  SEMICOLON: `x; touch ${PWNED}/semicolon`,
  AND: `x && touch ${PWNED}/and`,
  PIPE: `x | touch ${PWNED}/pipe`,
  NEWLINE_COMMAND: `x\ntouch ${PWNED}/newline\n`,
  SINGLE_QUOTE_BREAKOUT: `'; touch ${PWNED}/single; '`,
  ESCAPED_BREAKOUT: `'\\''; touch ${PWNED}/escaped; echo '`,
  DOUBLE_QUOTES: `"; touch ${PWNED}/double; "`,
  DOLLARS: '$HOME ${PATH} $$ $0 $1 $@ ${X:-default} $((1+1))',
  BACKSLASHES: 'C:\\new\\table\\ \\\\ ends with \\',
  UNICODE: 'ünïcødé ✓ 日本語 🔑 \u00a0nbsp \u2028 \u2029',
  LINES: '-----BEGIN KEY-----\nline two\n\n-----END KEY-----\n',
  CRLF: 'windows\r\nline\rbreaks',
  TABS: '\tTabbed\t',
  GLOB: '* ? [a-z] ~ ~root',
  HISTORY: '!! !$ !-1',
  EMPTY: '',
  DASHES: '-n -e --',
  REDIRECT: `> ${PWNED}/redirect < /etc/passwd`,
  HEREDOC: `<<EOF\ntouch ${PWNED}/heredoc\nEOF`,
  BRACES: `{ touch ${PWNED}/braces; }`,
  TRAILING_SPACES: '  spaces  ',
}

/** Sources `file` in `shell` (bash or dash) and answers each variable's value exactly (NUL-separated). */
function sourceIn(shell: 'bash' | 'sh', file: string, names: string[], cwd: string): Record<string, string> {
  // The names are our own identifiers; values never reach this command line.
  const script = `set -a; . "$1"; for name in ${names.join(' ')}; do eval "printf '%s\\\\0' \\"\\$$name\\""; done`
  const run = Bun.spawnSync([shell, '-c', script, shell, file], { cwd, env: { PATH: process.env.PATH! } })
  if (run.exitCode !== 0) throw new Error(`${shell} failed (${run.exitCode}): ${run.stderr.toString()}`)
  const parts = run.stdout.toString().split('\0')
  expect(parts.pop()).toBe('')
  return Object.fromEntries(names.map((name, i) => [name, parts[i]]))
}

describe('format=shell (issue 14)', () => {
  test('sourced in bash and in sh (dash), hostile values run nothing and arrive exact', async () => {
    const dave = await signUp(server.url)
    const workDir = mkdtempSync(join(tmpdir(), 'svc-shell-'))
    const pwnedDir = join(workDir, 'pwned')
    require('node:fs').mkdirSync(pwnedDir)
    try {
      const values = Object.fromEntries(Object.entries(HOSTILE).map(([name, value]) => [name, value.replaceAll(PWNED, pwnedDir)]))
      const group = await createCategory(dave, { name: 'Hostile', keyType: 'group', fieldDefinitions: Object.keys(values) })
      await createEntry(dave, { categoryId: group.id, name: 'app', value: JSON.stringify(values), environment: 'production' })
      // A hostile category and entry name too: they go into comment lines.
      const simple = await createCategory(dave, { name: `x\n$(touch ${pwnedDir}/category)`, keyType: 'simple', envVarName: 'SIMPLE_ONE' })
      await createEntry(dave, { categoryId: simple.id, name: `\`touch ${pwnedDir}/entry\`\ny`, value: "it's `here` $(x)" })
      const expected = { ...values, SIMPLE_ONE: "it's `here` $(x)" }

      const answer = await dave.get('/api/export?format=shell&environment=production')
      expect(answer.status).toBe(200)
      expect(answer.headers.get('content-type')).toBe('text/plain; charset=utf-8')
      expect(answer.headers.get('cache-control')).toBe('no-store')
      expect(answer.headers.get('content-disposition')).toContain('attachment')
      for (const line of answer.text.split('\n')) {
        // Every line is a comment, blank, or an export line (whose value may span lines).
        expect(line === '' || line.startsWith('#') || line.startsWith('export ') || !line.startsWith('export')).toBe(true)
      }
      const file = join(workDir, 'export.sh')
      writeFileSync(file, answer.text)
      for (const shell of ['bash', 'sh'] as const) {
        expect(sourceIn(shell, file, Object.keys(expected), workDir)).toEqual(expected)
      }
      // Nothing ran.
      expect(readdirSync(pwnedDir)).toEqual([])
      expect(existsSync(join(workDir, 'redirect'))).toBe(false)
    } finally {
      rmSync(workDir, { recursive: true, force: true })
    }
  })

  test('shellQuote round-trips any string without NUL through sh', () => {
    const workDir = mkdtempSync(join(tmpdir(), 'svc-shell-prop-'))
    try {
      const values: string[] = []
      fc.assert(
        fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (value) => {
          if (!value.includes('\0')) values.push(value)
        }),
        { numRuns: 300 },
      )
      values.push("'", "''", "'\\''", '\\', '\n', '$', '`')
      const names = values.map((_, i) => `V${i}`)
      const file = join(workDir, 'values.sh')
      writeFileSync(file, values.map((value, i) => shellLine(names[i], value)).join('\n') + '\n')
      const back = sourceIn('sh', file, names, workDir)
      expect(names.map((name) => back[name])).toEqual(values)
    } finally {
      rmSync(workDir, { recursive: true, force: true })
    }
  })

  test('a NUL in a value or a name that is not an identifier is left out with a comment', () => {
    expect(shellLine('A', 'x\0y')).toStartWith('# A left out')
    expect(shellLine('$(x)', 'v')).toStartWith('#')
    expect(shellLine('A B', 'v')).toStartWith('#')
    expect(shellQuote("a'b")).toBe("'a'\\''b'")
  })
})

describe('format=json (issue 14)', () => {
  test('one object, variable name to value, with the same selection and ambiguity rules', async () => {
    const erin = await signUp(server.url)
    const openai = await createCategory(erin, { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' })
    const db = await createCategory(erin, { name: 'Database', keyType: 'group', fieldDefinitions: ['DB_HOST', '__proto__'] })
    await createEntry(erin, { categoryId: openai.id, name: 'blog', value: 'sk-shared' })
    await createEntry(erin, { categoryId: openai.id, name: 'blog', value: 'sk "prod"\n', environment: 'production' })
    await createEntry(erin, { categoryId: db.id, name: 'blog', value: JSON.stringify({ DB_HOST: 'db', ['__proto__']: 'p' }) })

    const answer = await erin.get('/api/export?format=json&environment=production')
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(answer.headers.get('cache-control')).toBe('no-store')
    const expected: Record<string, string> = { OPENAI_API_KEY: 'sk "prod"\n', DB_HOST: 'db' }
    Object.defineProperty(expected, '__proto__', { value: 'p', enumerable: true })
    expect(JSON.parse(answer.text)).toEqual(expected)
    expect(Object.keys(JSON.parse(answer.text)).sort()).toEqual(['DB_HOST', 'OPENAI_API_KEY', '__proto__'])
    expect(JSON.parse((await erin.get('/api/export?format=json&environment=staging')).text).OPENAI_API_KEY).toBe('sk-shared')
    // Without environment two entries write OPENAI_API_KEY; an object can hold one: 409.
    const all = await erin.get('/api/export?format=json')
    expect(all.status).toBe(409)
    expect(all.body).toMatchObject({ code: 'AMBIGUOUS_EXPORT', variable: 'OPENAI_API_KEY', projects: ['blog'] })
    expect(all.text).not.toContain('sk-')
    expect((await erin.get('/api/export?format=json&name=nothing')).text).toBe('{}')
    // dotenv stays the default, and the name says which.
    expect((await erin.get('/api/export?format=dotenv&environment=production')).text).toBe((await erin.get('/api/export?environment=production')).text)
    const bad = await erin.get('/api/export?format=toml')
    expect(bad.status).toBe(400)
    expect(bad.body.code).toBe('VALIDATION_ERROR')
    expect(bad.body.error).toContain('format')
  })
})

describe('ETag on GET /api/export', () => {
  test('every format carries one; a matching If-None-Match is 304 without a body; a change changes it', async () => {
    const frank = await signUp(server.url)
    const openai = await createCategory(frank, { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' })
    const created = await createEntry(frank, { categoryId: openai.id, name: 'blog', value: 'sk-one', environment: 'production' })
    for (const query of ['', '?format=shell', '?format=json', '?environment=production', '?format=dotenv']) {
      const first = await frank.get(`/api/export${query}`)
      const tag = first.headers.get('etag')
      expect(tag).toMatch(/^"[A-Za-z0-9_-]{16,}"$/)
      expect((await frank.get(`/api/export${query}`)).headers.get('etag')).toBe(tag)
      for (const ifNoneMatch of [tag!, `W/${tag}`, `"other", ${tag}`, '*']) {
        const again = await frank.get(`/api/export${query}`, { 'if-none-match': ifNoneMatch })
        expect({ query, ifNoneMatch, status: again.status, text: again.text }).toEqual({ query, ifNoneMatch, status: 304, text: '' })
        expect(again.headers.get('etag')).toBe(tag)
        expect(again.headers.get('cache-control')).toBe('no-store')
      }
      expect((await frank.get(`/api/export${query}`, { 'if-none-match': '"stale"' })).status).toBe(200)
    }
    const formats = await Promise.all(['', '?format=shell', '?format=json'].map(async (q) => (await frank.get(`/api/export${q}`)).headers.get('etag')))
    expect(new Set(formats).size).toBe(3)

    const before = (await frank.get('/api/export')).headers.get('etag')!
    await frank.put(`/api/entries/${created.id}`, { value: 'sk-two' })
    const after = await frank.get('/api/export', { 'if-none-match': before })
    expect(after.status).toBe(200)
    expect(after.text).toContain('sk-two')
    expect(after.headers.get('etag')).not.toBe(before)
  })

  test('a 304 writes no export.read event (svc run --watch polls every 10 s); a 200 writes one', async () => {
    const heidi = await signUp(server.url)
    const c = await createCategory(heidi, { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })
    await createEntry(heidi, { categoryId: c.id, name: 'shop', value: 'sk-live' })
    const exports = async () => ((await heidi.get('/api/audit?limit=500')).body.items as { action: string }[]).filter((e) => e.action === 'export.read').length
    const first = await heidi.get('/api/export?format=json')
    expect(first.status).toBe(200)
    expect(await exports()).toBe(1)
    for (let i = 0; i < 5; i++) expect((await heidi.get('/api/export?format=json', { 'if-none-match': first.headers.get('etag')! })).status).toBe(304)
    expect(await exports()).toBe(1)
    expect((await heidi.get('/api/export?format=json', { 'if-none-match': '"stale"' })).status).toBe(200)
    expect(await exports()).toBe(2)
  })

  test('the tag reveals nothing of the content: no plain hash of it, and another user with the same content gets another tag', async () => {
    const make = async () => {
      const user = await signUp(server.url)
      const c = await createCategory(user, { name: 'Tiny', keyType: 'simple', envVarName: 'PIN' })
      await createEntry(user, { categoryId: c.id, name: 'x', value: '1234' })
      return user
    }
    const [one, two] = [await make(), await make()]
    const a = await one.get('/api/export')
    const b = await two.get('/api/export')
    expect(a.text).toBe(b.text)
    const tagA = a.headers.get('etag')!.replaceAll('"', '')
    expect(tagA).not.toBe(b.headers.get('etag')!.replaceAll('"', ''))
    for (const algorithm of ['md5', 'sha1', 'sha256', 'sha512']) {
      for (const encoding of ['hex', 'base64', 'base64url'] as const) {
        const digest = createHash(algorithm).update(a.text).digest(encoding)
        expect(digest.startsWith(tagA) || tagA.startsWith(digest.slice(0, 16))).toBe(false)
      }
    }
    // A 304 needs the credentials: another user's tag does not match.
    expect((await two.get('/api/export', { 'if-none-match': a.headers.get('etag')! })).status).toBe(200)
  })
})
