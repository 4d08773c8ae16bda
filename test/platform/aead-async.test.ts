// The start-up key check opens through Web Crypto (openAsync), everything else through node:crypto
// (open): both must give the same answer for any sealed text, tampered or not.
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { open, openAsync, seal } from '../../src/crypto/aead'
import { Keyring, MasterKeyMismatchError } from '../../src/crypto/keyring'

const key = crypto.getRandomValues(new Uint8Array(32))
const otherKey = crypto.getRandomValues(new Uint8Array(32))
const answer = (plaintext: Buffer | null) => (plaintext === null ? null : plaintext.toString('hex'))

async function expectSameAnswer(key: Uint8Array, sealed: string, aad: string) {
  const sync = answer(open(key, sealed, aad))
  expect(answer(await openAsync(key, sealed, aad))).toBe(sync)
  return sync
}

describe('openAsync agrees with open', () => {
  test('sealed texts open to their plaintext; another key, another AAD or a changed character do not', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string(), fc.string(), fc.nat(), async (plaintext, aad, at) => {
        const sealed = seal(key, plaintext, aad)
        expect(await expectSameAnswer(key, sealed, aad)).toBe(Buffer.from(plaintext).toString('hex'))
        expect(await expectSameAnswer(otherKey, sealed, aad)).toBeNull()
        expect(await expectSameAnswer(key, sealed, aad + 'x')).toBeNull()
        const i = 3 + (at % (sealed.length - 3))
        const changed = sealed.slice(0, i) + (sealed[i] === 'A' ? 'B' : 'A') + sealed.slice(i + 1)
        await expectSameAnswer(key, changed, aad)
      }),
      { numRuns: 200 },
    )
  })

  test('malformed texts and keys of the wrong length answer null', async () => {
    const sealed = seal(key, 'secret', 'aad')
    for (const text of ['', 'v1.', 'v2' + sealed.slice(2), sealed + '.x', 'v1.AAAA.AAAA', 'v1.!!!!.????', sealed.slice(0, 30)]) {
      expect(await expectSameAnswer(key, text, 'aad')).toBeNull()
    }
    expect(await expectSameAnswer(key.subarray(0, 16), sealed, 'aad')).toBeNull()
  })
})

describe('key check', () => {
  test('passes with the master key that made it and fails with any other', async () => {
    const check = new Keyring(key).createKeyCheck()
    await new Keyring(key).assertKeyCheck(check)
    await expect(new Keyring(otherKey).assertKeyCheck(check)).rejects.toBeInstanceOf(MasterKeyMismatchError)
  })
})
