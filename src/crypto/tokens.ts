// Random tokens and their hashes. Tokens are stored only as SHA-256; a lookup is by hash
// (a Map), then a constant-time compare guards against any timing signal from the Map.
import { randomBytes, timingSafeEqual } from 'node:crypto'

export { randomBytes }

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url')
}

// Bun's native SHA-256: a quarter of node:crypto's cost, and it runs on every bearer request.
export function sha256Hex(text: string): string {
  return Bun.SHA256.hash(text, 'hex')
}

/**
 * Whether two secrets (or their hashes) are equal, in time that depends only on their length: the
 * one compare of secrets in src/. Strings compare by their UTF-8 bytes.
 */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}
