// The key check at start-up: the current HMAC one, and the old AES-GCM one that opens through the
// same open() as every other sealed value (there is no second way to open).
import { describe, expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import { open, seal } from '../../src/crypto/aead'
import { Keyring, keyCheckIsCurrent, MasterKeyMismatchError } from '../../src/crypto/keyring'
import { startTestServer, TEST_MASTER_KEY } from '../support/server'

const key = crypto.getRandomValues(new Uint8Array(32))
const otherKey = crypto.getRandomValues(new Uint8Array(32))
const answer = (plaintext: Buffer | null) => (plaintext === null ? null : plaintext.toString('hex'))

describe('open', () => {
  test('sealed texts open to their plaintext; another key, another AAD or a changed character do not', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.nat(), (plaintext, aad, at) => {
        const sealed = seal(key, plaintext, aad)
        expect(answer(open(key, sealed, aad))).toBe(Buffer.from(plaintext).toString('hex'))
        expect(open(otherKey, sealed, aad)).toBeNull()
        expect(open(key, sealed, aad + 'x')).toBeNull()
        const i = 3 + (at % (sealed.length - 3))
        const changed = sealed.slice(0, i) + (sealed[i] === 'A' ? 'B' : 'A') + sealed.slice(i + 1)
        // A changed character either fails the tag or decodes to the same bytes (a base64 tail's spare bits).
        expect([null, Buffer.from(plaintext).toString('hex')]).toContain(answer(open(key, changed, aad)))
      }),
      { numRuns: 200 },
    )
  })

  test('malformed texts and keys of the wrong length answer null', () => {
    const sealed = seal(key, 'secret', 'aad')
    for (const text of ['', 'v1.', 'v2' + sealed.slice(2), sealed + '.x', 'v1.AAAA.AAAA', 'v1.!!!!.????', sealed.slice(0, 30)]) {
      expect(open(key, text, 'aad')).toBeNull()
    }
    expect(open(key.subarray(0, 16), sealed, 'aad')).toBeNull()
  })
})

/** The key check as data folders stored it before the HMAC one: the label sealed with AES-GCM. */
const oldFormatKeyCheck = (master: Uint8Array) => seal(master, 'svc-vault master key check', 'svc-vault:key-check')

describe('key check', () => {
  test('passes with the master key that made it and fails with any other; holds no key material in clear', async () => {
    const check = new Keyring(key).createKeyCheck()
    expect(keyCheckIsCurrent(check)).toBe(true)
    expect(check).not.toContain(Buffer.from(key).toString('hex'))
    expect(check).not.toContain(Buffer.from(key).toString('base64'))
    expect(new Keyring(key).createKeyCheck()).toBe(check)
    await new Keyring(key).assertKeyCheck(check)
    await expect(new Keyring(otherKey).assertKeyCheck(check)).rejects.toBeInstanceOf(MasterKeyMismatchError)
    for (const broken of [check.slice(0, -1), check.slice(0, -1) + (check.endsWith('0') ? '1' : '0'), 'hmac-sha256.', '']) {
      await expect(new Keyring(key).assertKeyCheck(broken)).rejects.toBeInstanceOf(MasterKeyMismatchError)
    }
  })

  test('the old AES-GCM key check still passes with its key and fails with any other', async () => {
    const check = oldFormatKeyCheck(key)
    expect(keyCheckIsCurrent(check)).toBe(false)
    await new Keyring(key).assertKeyCheck(check)
    await expect(new Keyring(otherKey).assertKeyCheck(check)).rejects.toBeInstanceOf(MasterKeyMismatchError)
  })

  test('a server started on a data folder with the old key check replaces it, and starts again after', async () => {
    const first = await startTestServer()
    await first.stop()
    const accountsPath = join(first.dataDir, 'accounts.json')
    const master = Buffer.from(TEST_MASTER_KEY, 'base64')
    writeFileSync(accountsPath, JSON.stringify({ ...JSON.parse(readFileSync(accountsPath, 'utf8')), keyCheck: oldFormatKeyCheck(master) }))

    const upgraded = await startTestServer({ dataDir: first.dataDir })
    await upgraded.stop()
    const stored = JSON.parse(readFileSync(accountsPath, 'utf8')).keyCheck
    expect(stored).toBe(new Keyring(master).createKeyCheck())

    const again = await startTestServer({ dataDir: first.dataDir })
    await again.stop()
    await expect(startTestServer({ dataDir: first.dataDir, env: { SVC_MASTER_KEY: Buffer.from(otherKey).toString('base64') } })).rejects.toBeInstanceOf(
      MasterKeyMismatchError,
    )
  })
})
