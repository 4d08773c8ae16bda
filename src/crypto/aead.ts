// AES-256-GCM with a fresh random 96-bit IV per message and additional authenticated data
// that names what the ciphertext belongs to. Sealed form: "v1.<iv b64url>.<ciphertext+tag b64url>".
//
// node:crypto (the only synchronous AES-GCM in Bun; Web Crypto's measured 2 to 40 times slower a
// call) costs about 2 MB of memory once loaded, so it loads on the first seal or open. Start-up
// opens nothing (the key check is an HMAC, keyring.ts), except the old-format key check of a data
// folder made before that, once, through openAsync (Web Crypto, a fraction of node:crypto's cost).
import type * as NodeCrypto from 'node:crypto'

const VERSION = 'v1'
const utf8 = new TextEncoder()
const IV_BYTES = 12
const TAG_BYTES = 16

let nodeCrypto: typeof NodeCrypto | undefined
const cipherModule = () => (nodeCrypto ??= process.getBuiltinModule('node:crypto'))

export function seal(key: Uint8Array, plaintext: Uint8Array | string, aad: string): string {
  const { createCipheriv, randomBytes } = cipherModule()
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(Buffer.from(aad))
  const body = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()])
  return `${VERSION}.${iv.toString('base64url')}.${body.toString('base64url')}`
}

// Opening decodes into this scratch space rather than into new arrays: a fresh array's buffer is
// made on first use (subarray, .buffer), a fifth of opening a value. It only ever holds IVs,
// ciphertexts and tags, never plaintext, and open() is synchronous, so one space serves every
// call. Longer ciphertexts take the allocating path.
const SCRATCH_BYTES = 4096
const scratch = new ArrayBuffer(SCRATCH_BYTES)
const ivScratch = new Uint8Array(scratch, 0, IV_BYTES)
const bodyScratch = new Uint8Array(scratch, IV_BYTES)

/** The base64 texts of a sealed text's IV and body (ciphertext+tag), or null when it has not that shape. */
function sealedParts(sealed: string): { ivText: string; bodyText: string } | null {
  if (typeof sealed !== 'string' || !sealed.startsWith(`${VERSION}.`)) return null
  // indexOf/slice rather than split: this runs once per entry of every export.
  const second = sealed.indexOf('.', VERSION.length + 1)
  if (second < 0 || sealed.indexOf('.', second + 1) >= 0) return null
  return { ivText: sealed.slice(VERSION.length + 1, second), bodyText: sealed.slice(second + 1) }
}

/** Returns the plaintext, or null when the sealed text is malformed, tampered with or bound to other data. */
export function open(key: Uint8Array, sealed: string, aad: string): Buffer | null {
  const parts = sealedParts(sealed)
  if (!parts) return null
  const { ivText, bodyText } = parts
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
      const decoded = decodeParts(ivText, bodyText)
      if (!decoded) return null
      iv = decoded.iv
      ciphertext = decoded.body.subarray(0, decoded.body.length - TAG_BYTES)
      tag = decoded.body.subarray(decoded.body.length - TAG_BYTES)
    }
  } catch {
    return null
  }
  return decipher(key, iv, ciphertext, tag, aad)
}

/** The IV and ciphertext+tag decoded into new arrays, or null when they are not valid ones. */
function decodeParts(ivText: string, bodyText: string): { iv: Uint8Array<ArrayBuffer>; body: Uint8Array<ArrayBuffer> } | null {
  let iv: Uint8Array<ArrayBuffer>
  let body: Uint8Array<ArrayBuffer>
  try {
    iv = Uint8Array.fromBase64(ivText, { alphabet: 'base64url' })
    body = Uint8Array.fromBase64(bodyText, { alphabet: 'base64url' })
  } catch {
    return null
  }
  if (iv.length !== IV_BYTES || body.length < TAG_BYTES) return null
  return { iv, body }
}

/** open() through Web Crypto, for the old-format key check at start-up: same answers, no node:crypto. */
export async function openAsync(key: Uint8Array, sealed: string, aad: string): Promise<Buffer | null> {
  const texts = sealedParts(sealed)
  const parts = texts && decodeParts(texts.ivText, texts.bodyText)
  if (!parts || key.length !== 32) return null
  try {
    const cryptoKey = await crypto.subtle.importKey('raw', new Uint8Array(key), 'AES-GCM', false, ['decrypt'])
    const plaintext = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv: parts.iv, additionalData: utf8.encode(aad), tagLength: TAG_BYTES * 8 },
      cryptoKey,
      parts.body,
    )
    return Buffer.from(plaintext)
  } catch {
    return null
  }
}

/** The plaintext when the tag matches this key, IV and AAD; null otherwise. */
function decipher(key: Uint8Array, iv: Uint8Array, ciphertext: Uint8Array, tag: Uint8Array, aad: string): Buffer | null {
  try {
    const decipher = cipherModule().createDecipheriv('aes-256-gcm', key, iv)
    decipher.setAAD(utf8.encode(aad))
    decipher.setAuthTag(tag)
    const plaintext = decipher.update(ciphertext)
    decipher.final() // throws when the tag does not match; GCM returns no further bytes
    return plaintext
  } catch {
    return null
  }
}

// "v1." and an IV of 12 bytes (16 base64 characters) before the second dot.
const IV_TEXT = { start: VERSION.length + 1, end: VERSION.length + 1 + (IV_BYTES / 3) * 4 }
/** Base64 characters of the shortest body: a tag's 16 bytes. */
const MIN_BODY_TEXT = Math.ceil((TAG_BYTES * 4) / 3)
/** Base64 characters that complete a partial last chunk of 2 or 3 characters (index: length % 4). */
const FILL = ['', '', 'AA', 'A']

/**
 * open() for many values under one key, with the base64 of all of them decoded in one call:
 * decoding costs mostly per call, not per character (docs/performance.md, export). Each IV and
 * body is appended to one text, a partial last chunk filled to a whole one (its extra bytes are
 * skipped), so every part starts on a chunk boundary. Gives what open() gives for each: values of another shape, and all of them when the joined text
 * does not decode to exactly the expected bytes (stray padding, whitespace, bad characters), are
 * opened one by one instead.
 */
export function openAll(key: Uint8Array, sealed: readonly string[], aads: readonly string[]): (Buffer | null)[] {
  const results: (Buffer | null)[] = []
  // Byte offset of each value's IV in the decoded bytes; -1 for values opened one by one.
  const offsets = new Int32Array(sealed.length)
  const bodyBytes = new Int32Array(sealed.length)
  let text = ''
  let total = 0
  for (let i = 0; i < sealed.length; i++) {
    const value = sealed[i]
    const bodyLength = typeof value === 'string' ? value.length - IV_TEXT.end - 1 : -1
    if (
      bodyLength < MIN_BODY_TEXT ||
      (bodyLength & 3) === 1 || // a lone character is no chunk
      !value.startsWith(`${VERSION}.`) ||
      value.indexOf('.', IV_TEXT.start) !== IV_TEXT.end ||
      value.indexOf('.', IV_TEXT.end + 1) >= 0
    ) {
      offsets[i] = -1
      continue
    }
    const fill = FILL[bodyLength & 3]
    text += value.slice(IV_TEXT.start, IV_TEXT.end) + value.slice(IV_TEXT.end + 1) + fill
    offsets[i] = total
    bodyBytes[i] = (bodyLength * 3) >> 2
    total += IV_BYTES + bodyBytes[i] + fill.length
  }
  const bytes = new Uint8Array(total)
  let decoded = false
  try {
    const { read, written } = bytes.setFromBase64(text, { alphabet: 'base64url' })
    decoded = read === text.length && written === total
  } catch {
    // Opened one by one below.
  }
  const buffer = bytes.buffer
  for (let i = 0; i < sealed.length; i++) {
    const at = offsets[i]
    if (at < 0 || !decoded) {
      results.push(open(key, sealed[i], aads[i]))
      continue
    }
    const length = bodyBytes[i] - TAG_BYTES
    const iv = new Uint8Array(buffer, at, IV_BYTES)
    const ciphertext = new Uint8Array(buffer, at + IV_BYTES, length)
    const tag = new Uint8Array(buffer, at + IV_BYTES + length, TAG_BYTES)
    results.push(decipher(key, iv, ciphertext, tag, aads[i]))
  }
  return results
}
