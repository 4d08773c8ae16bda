// Generated pastes for the AI import tests: `.env`, shell `export` lines, YAML and JSON, whose
// values are made of canaries (`cv` + hex), key-like words (`LEAK_` + hex) and hostile pieces
// (line breaks, `key: ` and `KEY=` inside values, quotes, `#`, backslashes), each rendered so that
// a correct reader gets the value back exactly, and the values it must get (by name).
import fc from 'fast-check'

const hex = (length: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${length}}$`))
/** A canary: a marker that cannot occur by chance in a key name or a prompt. */
const canary = hex(10).map((h) => `cv${h}`)
/** Looks like a key name, but is part of a value. */
const keyLike = hex(8).map((h) => `LEAK_${h.toUpperCase()}`)
const hostile = fc.constantFrom(': ', '=', ' ', '\n', '\t', '"', "'", '\\', '#', ' #', '- ', '{', '}', '[', ']', ',', 'export ', '---', '\\n', '$(', '`')
const valueOf = (pieces: fc.Arbitrary<string>) =>
  fc
    .array(
      fc.oneof(
        canary,
        keyLike,
        pieces,
        keyLike.map((k) => `\n${k}: `),
        keyLike.map((k) => `\n${k}=`),
      ),
      { minLength: 1, maxLength: 8 },
    )
    .map((parts) => parts.join(''))
const names = fc.uniqueArray(fc.stringMatching(/^[A-Z][A-Z0-9_]{2,12}$/), { minLength: 1, maxLength: 6 })

/** `.env` quoting that dotenv reads back exactly: a quote character the value does not hold. */
function envLine(name: string, value: string, exported: boolean): string | null {
  const quote = ["'", '`', '"'].find((q) => !value.includes(q))
  if (!quote || value.endsWith('\\') || value.includes('\r')) return null
  // Inside double quotes dotenv turns \n and \r into line breaks.
  if (quote === '"' && /\\[nr]/.test(value)) return null
  return `${exported ? 'export ' : ''}${name}=${quote}${value}${quote}`
}

/** A YAML scalar for the value: single-quoted, double-quoted (JSON escapes), or double-quoted over two lines. */
function yamlScalar(value: string, style: number): { text: string; value: string } {
  if (style === 0 && !value.includes('\n')) return { text: `'${value.replace(/'/g, "''")}'`, value }
  const escaped = (part: string) => JSON.stringify(part).slice(1, -1)
  if (style === 2) {
    // Folded over two lines: the line break reads as one space.
    const first = value.replace(/^[ \t]+|[ \t]+$/g, '') || 'cvfold'
    const second = 'LEAK_FOLDED: cvfoldtail'
    return { text: `"${escaped(first)}\n    ${second}"`, value: `${first} ${second}` }
  }
  return { text: JSON.stringify(value), value }
}

export type Format = 'env' | 'shell' | 'yaml' | 'json' | 'json-nested'

/** A pasted config of these pairs, and the values a correct reader gets back (by name). */
function render(format: Format, pairs: [string, string][], style: number): { text: string; expected: Record<string, string> } | null {
  const expected: Record<string, string> = {}
  if (format === 'json' || format === 'json-nested') {
    const object = Object.fromEntries(pairs)
    for (const [name, value] of pairs) expected[format === 'json' ? name : `SVC_${name}`] = value
    return { text: JSON.stringify(format === 'json' ? object : { svc: object }, null, 2), expected }
  }
  const lines: string[] = ['# pasted']
  for (const [name, value] of pairs) {
    if (format === 'yaml') {
      const scalar = yamlScalar(value, style)
      lines.push(`${name}: ${scalar.text}`)
      expected[name] = scalar.value
    } else {
      const line = envLine(name, value, format === 'shell')
      if (line === null) return null
      lines.push(line)
      expected[name] = value
    }
  }
  return { text: lines.join('\n') + '\n', expected }
}

export const pastes = (formats: Format[]) =>
  fc
    .record({
      format: fc.constantFrom(...formats),
      style: fc.integer({ min: 0, max: 2 }),
      pairs: names.chain((list) => fc.tuple(...list.map((name) => valueOf(hostile).map((value) => [name, value] as [string, string])))),
    })
    .map(({ format, style, pairs }) => ({ format, pairs, rendered: render(format, pairs, style) }))
    .filter((paste) => paste.rendered !== null)
