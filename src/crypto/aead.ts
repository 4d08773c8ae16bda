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

/** Returns the plaintext, or null when the sealed text is malformed, tampered with or bound to other data. */
export function open(key: Uint8Array, sealed: string, aad: string): Buffer | null {
  if (typeof sealed !== 'string' || !sealed.startsWith(`${VERSION}.`)) return null
  // indexOf/slice rather than split: this runs once per entry of every export.
  const second = sealed.indexOf('.', VERSION.length + 1)
  if (second < 0 || sealed.indexOf('.', second + 1) >= 0) return null
  let iv: Uint8Array
  let body: Uint8Array
  try {
    iv = Uint8Array.fromBase64(sealed.slice(VERSION.length + 1, second), { alphabet: 'base64url' })
    body = Uint8Array.fromBase64(sealed.slice(second + 1), { alphabet: 'base64url' })
  } catch {
    return null
  }
  if (iv.length !== IV_BYTES || body.length < TAG_BYTES) return null
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv)
    decipher.setAAD(utf8.encode(aad))
    decipher.setAuthTag(body.subarray(body.length - TAG_BYTES))
    const plaintext = decipher.update(body.subarray(0, body.length - TAG_BYTES))
    decipher.final() // throws when the tag does not match; GCM returns no further bytes
    return plaintext
  } catch {
    return null
  }
}
