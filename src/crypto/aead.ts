// AES-256-GCM with a fresh random 96-bit IV per message and additional authenticated data
// that names what the ciphertext belongs to. Sealed form: "v1.<iv b64url>.<ciphertext+tag b64url>".
// One way to open: decode into fresh arrays, decipher, check the tag (docs/performance.md, export).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'

const VERSION = 'v1'
const IV_BYTES = 12
const TAG_BYTES = 16
const utf8 = new TextEncoder()

export function seal(key: Uint8Array, plaintext: Uint8Array | string, aad: string): string {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(Buffer.from(aad))
  const body = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()])
  return `${VERSION}.${iv.toString('base64url')}.${body.toString('base64url')}`
}

/** Returns the plaintext, or null when the sealed text is malformed, tampered with or bound to other data. */
export function open(key: Uint8Array, sealed: string, aad: string): Buffer | null {
  if (typeof sealed !== 'string') return null
  const parts = sealed.split('.')
  if (parts.length !== 3 || parts[0] !== VERSION) return null
  try {
    const iv = Uint8Array.fromBase64(parts[1], { alphabet: 'base64url' })
    const body = Uint8Array.fromBase64(parts[2], { alphabet: 'base64url' })
    if (iv.length !== IV_BYTES || body.length < TAG_BYTES) return null
    const decipher = createDecipheriv('aes-256-gcm', key, iv)
    decipher.setAAD(utf8.encode(aad))
    decipher.setAuthTag(body.subarray(body.length - TAG_BYTES))
    const plaintext = decipher.update(body.subarray(0, body.length - TAG_BYTES))
    decipher.final() // throws when the tag does not match; GCM returns no further bytes
    return plaintext
  } catch {
    // Bad base64, a key of the wrong length, or a tag that does not match.
    return null
  }
}

/** open() for each value: `sealed[i]` under `aads[i]`. */
export function openAll(key: Uint8Array, sealed: readonly string[], aads: readonly string[]): (Buffer | null)[] {
  return sealed.map((value, i) => open(key, value, aads[i]))
}
