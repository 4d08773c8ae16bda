// svc run --mask's scanner on its own: every value of 6 bytes or more becomes ***, however the
// output is cut into chunks, and nothing else changes.
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { MASK, Masker } from '../../src/cli/svc/mask'

/** The masker's output for `text` fed in the given chunks (cut points in bytes). */
function masked(values: string[], bytes: Buffer, cuts: number[]): string {
  const masker = new Masker(values)
  const parts: Buffer[] = []
  let from = 0
  for (const cut of [...new Set(cuts)].filter((c) => c > 0 && c < bytes.length).sort((a, b) => a - b)) {
    parts.push(masker.push(bytes.subarray(from, cut)))
    from = cut
  }
  parts.push(masker.push(bytes.subarray(from)), masker.end())
  return Buffer.concat(parts).toString('utf8')
}

/** The reference: longest value first at each position, scanning left to right. */
function reference(values: string[], text: string): string {
  const long = [...new Set(values.filter((v) => Buffer.byteLength(v) >= 6))].sort((a, b) => b.length - a.length)
  let out = ''
  for (let i = 0; i < text.length; ) {
    const hit = long.find((v) => text.startsWith(v, i))
    if (hit) {
      out += MASK
      i += hit.length
    } else out += text[i++]
  }
  return out
}

describe('the output masker', () => {
  test('a value whole, split across writes, at a chunk boundary and inside a longer line', () => {
    const value = 'pa$$w0rd-secret'
    const line = `connecting with password=${value}; retry\n`
    expect(masked([value], Buffer.from(line), [])).toBe('connecting with password=***; retry\n')
    for (let cut = 1; cut < line.length; cut++) expect(masked([value], Buffer.from(line), [cut])).toBe('connecting with password=***; retry\n')
    const filler = 'x'.repeat(65_536 - 4)
    expect(masked([value], Buffer.from(filler + value + '\n'), [65_536])).toBe(`${filler}***\n`)
  })

  test('short values stay, the longest value wins, UTF-8 split inside a character', () => {
    expect(masked(['12345', 'abcdef'], Buffer.from('12345 abcdef'), [])).toBe('12345 ***')
    expect(masked(['secret', 'secret-longer'], Buffer.from('a secret-longer b secret c'), [9])).toBe('a *** b *** c')
    const unicode = 'pässwörd✓'
    const bytes = Buffer.from(`>${unicode}<`)
    for (let cut = 1; cut < bytes.length; cut++) expect(masked([unicode], bytes, [cut])).toBe('>***<')
  })

  test('output that only looks like the start of a value is held until it is not, then passes whole', () => {
    const masker = new Masker(['hunter22'])
    expect(masker.push(Buffer.from('say hun')).toString()).toBe('say ')
    expect(masker.push(Buffer.from('gry\n')).toString()).toBe('hungry\n')
    expect(masker.push(Buffer.from('hunt')).toString()).toBe('')
    expect(masker.end().toString()).toBe('hunt')
  })

  test('property: any values, any text, any chunking: the same as masking the whole text at once', () => {
    const alphabet = fc.constantFrom('a', 'b', 'c', '\n', 'é', '$')
    const word = fc.array(alphabet, { minLength: 1, maxLength: 12 }).map((chars) => chars.join(''))
    fc.assert(
      fc.property(
        fc.array(word, { minLength: 1, maxLength: 5 }),
        fc.array(fc.oneof(word, alphabet), { maxLength: 30 }),
        fc.array(fc.nat(400), { maxLength: 6 }),
        (values, pieces, cuts) => {
          const text = pieces.join('')
          const expected = reference(values, text)
          expect(masked(values, Buffer.from(text), cuts)).toBe(expected)
          for (const value of values) if (Buffer.byteLength(value) >= 6 && expected.includes(value)) throw new Error('a value passed unmasked')
        },
      ),
      { numRuns: 500 },
    )
  })
})
