// AES-256-GCM with a fresh random 96-bit IV per message and additional authenticated data
// that names what the ciphertext belongs to. Sealed form: "v1.<iv b64url>.<ciphertext+tag b64url>".
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'

const VERSION = 'v1'
const utf8 = new TextEncoder()
const IV_BYTES = 12
const TAG_BYTES = 16

export function seal(key: Uint8Array, plaintext: Uint8Array | string, aad: string): string {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(Buffer.from(aad))
  const body = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()])
  return `${VERSION}.${iv.toString('base64url')}.${body.toString('base64url')}`
}

// Opening decodes into this scratch space rather than into new arrays: a fresh array's buffer is
// made on first use (subarray, .buffer), and with two of them per value that measured about a
// quarter of an export's decryption. It only ever holds IVs, ciphertexts and tags, never
// plaintext, and open() is synchronous, so one space serves every call. Longer ciphertexts take
// the allocating path.
const SCRATCH_BYTES = 4096
const scratch = new ArrayBuffer(SCRATCH_BYTES)
const ivScratch = new Uint8Array(scratch, 0, IV_BYTES)
const bodyScratch = new Uint8Array(scratch, IV_BYTES)

/** Returns the plaintext, or null when the sealed text is malformed, tampered with or bound to other data. */
export function open(key: Uint8Array, sealed: string, aad: string): Buffer | null {
  if (typeof sealed !== 'string' || !sealed.startsWith(`${VERSION}.`)) return null
  // indexOf/slice rather than split: this runs once per entry of every export.
  const second = sealed.indexOf('.', VERSION.length + 1)
  if (second < 0 || sealed.indexOf('.', second + 1) >= 0) return null
  const ivText = sealed.slice(VERSION.length + 1, second)
  const bodyText = sealed.slice(second + 1)
  let iv: Uint8Array
  let ciphertext: Uint8Array
  let tag: Uint8Array
  try {
    const ivRead = ivScratch.setFromBase64(ivText, { alphabet: 'base64url' })
    const bodyRead = bodyScratch.setFromBase64(bodyText, { alphabet: 'base64url' })
    if (ivRead.read === ivText.length && ivRead.written === IV_BYTES && bodyRead.read === bodyText.length) {
      if (bodyRead.written < TAG_BYTES) return null
      const length = bodyRead.written - TAG_BYTES
      iv = ivScratch
      ciphertext = new Uint8Array(scratch, IV_BYTES, length)
      tag = new Uint8Array(scratch, IV_BYTES + length, TAG_BYTES)
    } else {
      // Longer than the scratch space (or an IV of the wrong size, refused below).
      iv = Uint8Array.fromBase64(ivText, { alphabet: 'base64url' })
      const body = Uint8Array.fromBase64(bodyText, { alphabet: 'base64url' })
      if (iv.length !== IV_BYTES || body.length < TAG_BYTES) return null
      ciphertext = body.subarray(0, body.length - TAG_BYTES)
      tag = body.subarray(body.length - TAG_BYTES)
    }
  } catch {
    return null
  }
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv)
    decipher.setAAD(utf8.encode(aad))
    decipher.setAuthTag(tag)
    const plaintext = decipher.update(ciphertext)
    decipher.final() // throws when the tag does not match; GCM returns no further bytes
    return plaintext
  } catch {
    return null
  }
}
