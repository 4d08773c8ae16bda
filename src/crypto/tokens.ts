// Random tokens and their hashes. Tokens are stored only as SHA-256; a lookup is by hash
// (a Map), then a constant-time compare guards against any timing signal from the Map.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url')
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}
