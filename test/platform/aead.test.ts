// open() at every size, malformed and tampered input, and openAll() giving what open() gives for
// each value: nothing of one value may show in the next.
import { describe, expect, test } from 'bun:test'
import { open, openAll, seal } from '../../src/crypto/aead'

const key = crypto.getRandomValues(new Uint8Array(32))
const otherKey = crypto.getRandomValues(new Uint8Array(32))
const AAD = 'svc-vault:user:entry:record'

const text = (sealed: string, aad = AAD, withKey = key) => open(withKey, sealed, aad)?.toString('utf8') ?? null
/** Flips one base64url character of the part at `index` (1: IV, 2: ciphertext and tag). */
function tamper(sealed: string, index: number, at: number): string {
  const parts = sealed.split('.')
  const part = parts[index]
  parts[index] = part.slice(0, at) + (part[at] === 'A' ? 'B' : 'A') + part.slice(at + 1)
  return parts.join('.')
}

describe('aead', () => {
  const sizes = [0, 1, 2, 3, 15, 16, 17, 100, 3000, 4000, 4100, 70_000]

  test('seal and open agree for small and large values, in any order', () => {
    const values = sizes.map((size) => 'x'.repeat(size) + 'ü✓'.repeat(size % 7))
    const sealed = values.map((value) => seal(key, value, AAD))
    for (const [i, value] of values.entries()) expect(text(sealed[i])).toBe(value)
    for (const [i, value] of [...values.entries()].reverse()) expect(text(sealed[i])).toBe(value)
  })

  test('a wrong key, AAD or tampered IV, ciphertext or tag does not open, at every size', () => {
    for (const size of sizes) {
      const sealed = seal(key, 's'.repeat(size), AAD)
      expect(text(sealed, AAD + 'x')).toBeNull()
      expect(text(sealed, AAD, otherKey)).toBeNull()
      expect(text(tamper(sealed, 1, 0))).toBeNull()
      const body = sealed.split('.')[2]
      expect(text(tamper(sealed, 2, 0))).toBeNull()
      expect(text(tamper(sealed, 2, body.length - 2))).toBeNull()
      // The value after a failed one still opens (no state left behind).
      expect(text(sealed)).toBe('s'.repeat(size))
    }
  })

  test('malformed sealed text does not open', () => {
    const sealed = seal(key, 'value', AAD)
    const [, iv, body] = sealed.split('.')
    const malformed = [
      '',
      'v1',
      'v1.',
      `v2.${iv}.${body}`,
      `v1.${iv}`,
      `v1.${iv}.${body}.`,
      `v1.${iv}${body}`,
      `v1.${iv.slice(4)}.${body}`, // a 9-byte IV
      `v1.${iv}AAAA.${body}`, // a 15-byte IV
      `v1.${iv}.${body.slice(0, 20)}`, // shorter than a tag
      `v1.${iv}.${body.slice(0, -1)}!`,
      `v1.${iv.slice(0, -1)}*.${body}`,
      `v1.${iv}.${'A'.repeat(8000)}`, // long, wrong tag
    ]
    for (const text of malformed) expect(open(key, text, AAD)).toBeNull()
    expect(open(key, 42 as never, AAD)).toBeNull()
  })

  test('the plaintext is a copy: opening another value does not change an earlier result', () => {
    const first = open(key, seal(key, 'first value', AAD), AAD)!
    open(key, seal(key, 'second, longer value', AAD), AAD)
    expect(first.toString('utf8')).toBe('first value')
  })

  test('openAll gives what open gives for each value, malformed ones among them', () => {
    const good = sizes.map((size, i) => ({ sealed: seal(key, `v${i}:` + 'y'.repeat(size), `aad-${i}`), aad: `aad-${i}` }))
    const [, iv, body] = good[3].sealed.split('.')
    const odd = [
      { sealed: good[0].sealed, aad: 'another record' },
      { sealed: `v1.${iv}.${body.slice(0, -1)}`, aad: 'aad-3' }, // a lone last character (length % 4 = 1) or a cut tag
      { sealed: `v1.${iv}.${body.slice(0, 10)}`, aad: 'aad-3' },
      { sealed: `v1.${iv}.${body}=`, aad: 'aad-3' },
      { sealed: `v1.${iv.slice(0, 8)}.${body}`, aad: 'aad-3' },
      { sealed: `v2.${iv}.${body}`, aad: 'aad-3' },
      { sealed: 42 as never, aad: 'aad-3' },
      { sealed: seal(key, 'ünïcødé ✓', 'ä-aad'), aad: 'ä-aad' },
      { sealed: seal(otherKey, 'other key', 'aad-x'), aad: 'aad-x' },
    ]
    const batches = [good, [...good, ...odd], [...odd, ...good].reverse(), odd, []]
    for (const batch of batches) {
      const opened = openAll(
        key,
        batch.map((item) => item.sealed),
        batch.map((item) => item.aad),
      )
      expect(opened.map((plaintext) => plaintext?.toString('utf8') ?? null)).toEqual(batch.map((item) => text(item.sealed, item.aad)))
    }
    expect(
      openAll(
        key,
        good.map((item) => item.sealed),
        good.map((item) => item.aad),
      ).every((plaintext) => plaintext !== null),
    ).toBe(true)
  })

  test('openAll: text the joined decoding would misread opens as open() reads it', () => {
    const a = seal(key, 'first', 'a')
    const b = seal(key, 'second value', 'b')
    const [, ivB, bodyB] = b.split('.')
    // A space, padding or a bad character makes the joined text decode to other lengths or fail;
    // every value then opens one by one, each as open() reads it.
    for (const odd of [`v1.${ivB}.${bodyB.slice(0, 5)} ${bodyB.slice(5)}`, `v1.${ivB}.${bodyB}==`, `v1.${ivB}.${bodyB.slice(0, -2)}*A`]) {
      const opened = openAll(key, [a, odd, b], ['a', 'b', 'b']).map((plaintext) => plaintext?.toString('utf8') ?? null)
      expect(opened).toEqual([text(a, 'a'), text(odd, 'b'), 'second value'])
    }
  })
})
