// Random tokens and their hashes. Tokens are stored only as SHA-256; a lookup is by hash
// (a Map), then a constant-time compare guards against any timing signal from the Map.

/**
 * `count` random bytes from Web Crypto's generator, not node:crypto's randomBytes: node:crypto
 * loads only when a secret is sealed or opened (aead.ts).
 */
export function randomBytes(count: number): Buffer {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(count)))
}

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url')
}

// Bun's native SHA-256: a quarter of node:crypto's cost, and it runs on every bearer request.
export function sha256Hex(text: string): string {
  return Bun.SHA256.hash(text, 'hex')
}

/** Equal strings, in time that depends only on their length (hex digests here: no allocation). */
export function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false
  let difference = 0
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return difference === 0
}
