// Issue 30: every format read back by the program that reads it, byte for byte. 22 values (a
// realistic production .env and the edge cases), then a fast-check property over arbitrary strings;
// each format's refusals are checked to be exactly the expected ones, and answered as 400.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { bunValue, dockerValue, dotenvValue, isRefusal, nodeValue, pythonValue, shellValue, systemdValue, yamlValue } from '../../src/modules/export/render'
import { signUp } from '../support/client'
import { createCategory, createEntry } from '../support/records'
import { describeNeeding, missingCommand } from '../support/requirements'
import { FORMAT_READERS, missingPythonDotenv, NODE, READERS, type Values } from '../support/env-readers'
import { startTestServer, type TestServer } from '../support/server'

/** A realistic production .env: 13 values. */
export const REALISTIC: Record<string, string> = {
  DATABASE_URL: 'postgres://app:s3cr3t@db.internal:5432/shop?sslmode=require',
  REDIS_URL: 'redis://default:p%40ss@cache.internal:6379/0',
  JWT_PRIVATE_KEY: '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\nq8Zt+Jx/1ZQ0YhJk3m2s==\n-----END PRIVATE KEY-----',
  DB_PASSWORD: 'pa$$w0rd "quoted" $HOME',
  ADMIN_PASSWORD: 'Sup3r$ecret!',
  STRIPE_SECRET_KEY: 'sk_live_51HxQ2eKf7Vb9TzYq0123456789abcdef',
  API_BASE_URL: 'https://api.example.com/v1?key=abc&mode=full',
  SENTRY_DSN: 'https://0123456789abcdef@o123456.ingest.sentry.io/7654321',
  SMTP_PASSWORD: 'p@ss word#1',
  APP_ENV: 'production',
  PORT: '8080',
  GOOGLE_SERVICE_ACCOUNT: '{"type":"service_account","project_id":"shop-prod","client_email":"svc@shop-prod.iam.gserviceaccount.com"}',
  CORS_ORIGINS: 'https://shop.example.com,https://admin.example.com',
}

/** 9 edge values. */
export const EDGE: Record<string, string> = {
  APOSTROPHE_LINES: `it's "both" quotes\nand a line`,
  LITERAL_BACKSLASH_N: 'C:\\new\\table and a literal \\n',
  TRAILING_BACKSLASH: 'ends with \\',
  DOLLAR_BRACES: '${HOME}/bin',
  CRLF: 'first line\r\nsecond line',
  UNICODE: 'ünïcødé ✓ 日本語 🔑',
  SURROUNDING_SPACES: '  padded value  ',
  EMPTY: '',
  HASH: '#not-a-comment # nor this',
}

const ALL = { ...REALISTIC, ...EDGE }
const NAMES = Object.keys(ALL)

/** What each format refuses of the 22, and nothing else (docs/export.md). */
const REFUSED: Record<string, string[]> = {
  dotenv: [],
  bun: [],
  node: ['CRLF'],
  python: ['DOLLAR_BRACES'],
  docker: ['JWT_PRIVATE_KEY', 'APOSTROPHE_LINES', 'CRLF'],
  systemd: [],
  shell: [],
  json: [],
  yaml: [],
}

const readersMissing =
  missingCommand('bash') ?? missingCommand('dash') ?? (NODE ? null : 'node is not installed (Debian package nodejs)') ?? missingPythonDotenv()

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

/** The values a reader got that are exactly the stored ones. */
function exact(got: Values, expected: Record<string, string>): string[] {
  return Object.keys(expected).filter((name) => got[name] === expected[name])
}

describeNeeding(readersMissing)('reader matrix (issue 30)', () => {
  test('the 22 values in each format, read back by the real reader; refusals are 400 naming every variable', async () => {
    const alice = await signUp(server.url)
    const category = await createCategory(alice, { name: 'App', keyType: 'group' })
    await createEntry(alice, { categoryId: category.id, name: 'all', value: JSON.stringify(ALL), environment: 'production' })
    const table: string[] = ['| format | reader | exact of 22 | refused (400) |', '|---|---|---|---|']
    for (const [format, readers] of Object.entries(FORMAT_READERS)) {
      const answer = await alice.get(`/api/export?format=${format}&environment=production&name=all`)
      let text: string
      const refused = REFUSED[format]
      if (refused.length === 0) {
        expect(answer.status, `${format}: ${answer.text.slice(0, 300)}`).toBe(200)
        text = answer.text
      } else {
        expect(answer.status).toBe(400)
        expect(answer.body.code).toBe('EXPORT_FORMAT_REFUSED')
        expect(answer.body.format).toBe(format)
        expect(answer.body.variables.map((v: { variable: string }) => v.variable)).toEqual(refused)
        for (const item of answer.body.variables) {
          expect(answer.body.error).toContain(item.variable)
          expect(item.reason.length).toBeGreaterThan(5)
          expect(item.formats.length).toBeGreaterThan(0)
          // The formats it suggests do carry the value.
          for (const other of item.formats) {
            const again = await alice.get(`/api/export?format=${other}&environment=production&name=all`)
            if (again.status === 400) expect(again.body.variables.map((v: { variable: string }) => v.variable)).not.toContain(item.variable)
          }
        }
        // Never a value in the refusal.
        for (const value of Object.values(ALL)) if (value.length > 3) expect(answer.text).not.toContain(JSON.stringify(value).slice(1, -1))
        // The rest, carried, in an entry of their own.
        const carried = Object.fromEntries(Object.entries(ALL).filter(([name]) => !refused.includes(name)))
        await createEntry(alice, { categoryId: category.id, name: `for-${format}`, value: JSON.stringify(carried), environment: 'production' })
        const rest = await alice.get(`/api/export?format=${format}&environment=production&name=for-${format}`)
        expect(rest.status).toBe(200)
        text = rest.text
      }
      const expected = Object.fromEntries(Object.entries(ALL).filter(([name]) => !refused.includes(name)))
      for (const reader of readers) {
        const got = await READERS[reader](text, NAMES)
        const good = exact(got, expected)
        const realistic = good.filter((name) => name in REALISTIC).length
        table.push(`| ${format} | ${reader} | ${good.length} (realistic ${realistic}/13) | ${refused.join(', ') || '—'} |`)
        // Byte for byte, for every value the format carries; refused ones are not written at all.
        expect({ format, reader, got: Object.fromEntries(Object.keys(expected).map((n) => [n, got[n]])) }).toEqual({ format, reader, got: expected })
        for (const name of refused) expect(got[name] ?? null).toBeNull()
      }
    }
    console.log(table.join('\n'))
  }, 60_000)

  test('comment lines (category and entry names) never reach a reader as a variable, in any format', async () => {
    const erin = await signUp(server.url)
    // A trailing backslash would continue a systemd comment onto the variable's line; a control
    // character is not allowed in a YAML stream, comments included.
    const c = await createCategory(erin, { name: 'Evil\x01 \u2028 $HOME ${X} \\', keyType: 'simple', envVarName: 'REAL' })
    await createEntry(erin, { categoryId: c.id, name: 'x=1 \'"` \\', value: 'v a$l' })
    const d = await createCategory(erin, { name: 'Next', keyType: 'simple', envVarName: 'NEXT' })
    await createEntry(erin, { categoryId: d.id, name: '\\', value: 'w' })
    for (const [format, readers] of Object.entries(FORMAT_READERS)) {
      const answer = await erin.get(`/api/export?format=${format}`)
      expect(answer.status).toBe(200)
      for (const reader of readers) {
        const got = await READERS[reader](answer.text, ['REAL', 'NEXT'])
        expect({ format, reader, got: { REAL: got.REAL, NEXT: got.NEXT } }).toEqual({ format, reader, got: { REAL: 'v a$l', NEXT: 'w' } })
        if (!reader.startsWith('bun') && !reader.startsWith('node') && reader !== 'bash' && reader !== 'dash') {
          // The readers that answer every variable they found: nothing else.
          expect(Object.keys(got).sort()).toEqual(['NEXT', 'REAL'])
        }
      }
    }
  }, 30_000)

  // Arbitrary strings (characters that matter to some reader, and any Unicode), 80 a file, each
  // format's writer deciding what it carries; the real readers must read back every carried one.
  test('fast-check: arbitrary values, each format read back exactly by its readers, or refused', async () => {
    const chars = [
      'a',
      'Z',
      '0',
      ' ',
      '\t',
      '#',
      '=',
      "'",
      '"',
      '`',
      '\\',
      'n',
      'r',
      '$',
      '{',
      '}',
      ':',
      '-',
      '\n',
      '\r',
      '\u2028',
      'é',
      '🔑',
      '\u00a0',
      'à',
      '\ufeff',
      '\x0b',
      '\x1c',
      '\x7f',
      '\x85',
    ]
    const value = fc.oneof(
      fc.string({ unit: fc.constantFrom(...chars), maxLength: 16 }),
      fc.string({ unit: 'grapheme', maxLength: 10 }),
      fc.string({ unit: 'binary', maxLength: 8 }),
    )
    const writers: Record<string, (value: string, name: string) => string | { refused: string }> = {
      dotenv: dotenvValue,
      bun: bunValue,
      node: nodeValue,
      python: pythonValue,
      docker: dockerValue,
      systemd: systemdValue,
      shell: shellValue,
    }
    await fc.assert(
      fc.asyncProperty(fc.array(value, { minLength: 80, maxLength: 80 }), async (values) => {
        for (const [format, write] of Object.entries(writers)) {
          const expected: Record<string, string> = {}
          let text = '# Test — property (production)\n'
          values.forEach((v, i) => {
            const name = `V${i}`
            const written = write(v, name)
            if (isRefusal(written)) return
            expected[name] = v
            text += `${format === 'shell' ? 'export ' : ''}${name}=${written}\n`
          })
          for (const reader of FORMAT_READERS[format]) {
            const got = await READERS[reader](text, Object.keys(expected))
            const wrong = Object.keys(expected).filter((name) => got[name] !== expected[name])
            if (wrong.length)
              throw new Error(`${format} / ${reader}: ${wrong.map((n) => `${JSON.stringify(expected[n])} -> ${JSON.stringify(got[n])}`).join(', ')}`)
          }
        }
        // JSON and YAML carry everything that is text.
        const json: Record<string, string> = Object.fromEntries(values.map((v, i) => [`V${i}`, v]))
        expect(await READERS['JSON.parse'](JSON.stringify(json), [])).toEqual(json)
        const yamlCarried = Object.fromEntries(Object.entries(json).filter(([, v]) => !isRefusal(yamlValue(v))))
        const yaml = `kind: Secret\nstringData:\n${Object.entries(yamlCarried)
          .map(([n, v]) => `  ${n}: ${yamlValue(v)}`)
          .join('\n')}\n`
        expect(await READERS['Bun.YAML (Secret stringData)'](yaml, [])).toEqual(yamlCarried)
      }),
      { numRuns: 3 },
    )
  }, 60_000)

  test('a value ending in a backslash never runs on into the next variable (fast-check found it: "\\" before a line of U+2028)', async () => {
    const values = ['\\', '\u2028', 'C:\\temp\\', 'a b\\', '\\ ', 'x']
    let text = ''
    const expected: Record<string, string> = {}
    values.forEach((value, i) => {
      const written = dotenvValue(value)
      if (isRefusal(written)) return
      expected[`V${i}`] = value
      text += `V${i}=${written}\n`
    })
    expect(Object.keys(expected)).toContain('V0')
    expect(await READERS['npm dotenv'](text, Object.keys(expected))).toEqual(expected)
  })

  test('Bun: a backslash before a last $ stays (fast-check found "\\$" read back as "$")', async () => {
    const values = ['\\$', 'a\\\\$', '\\$x', '$']
    let text = ''
    const expected: Record<string, string> = {}
    values.forEach((value, i) => {
      const written = bunValue(value)
      if (isRefusal(written)) throw new Error(`refused ${value}`)
      expected[`V${i}`] = value
      text += `V${i}=${written}\n`
    })
    expect(await READERS['bun --env-file'](text, Object.keys(expected))).toEqual(expected)
  })
})
