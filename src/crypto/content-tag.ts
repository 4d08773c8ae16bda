// Entity tags for answers that hold secrets (the export): an HMAC under a key made for this
// process, so a tag says whether an answer changed and nothing about what it holds; it cannot be
// checked against a guessed value outside this process. A restart changes every tag: clients
// then fetch once more.
import { createHmac } from 'node:crypto'
import { randomBytes } from './tokens'

let processKey: Buffer | undefined

/** A strong ETag (quoted) for these parts of an answer, e.g. the owner, the content type and the body. */
export function contentTag(...parts: string[]): string {
  const hmac = createHmac('sha256', (processKey ??= randomBytes(32)))
  // Length-prefixed, so that no two lists of parts run together into the same input.
  for (const part of parts) hmac.update(`${Buffer.byteLength(part)}:`).update(part)
  return `"${hmac.digest('base64url').slice(0, 32)}"`
}

/** Whether an If-None-Match header value matches `tag` (a list of tags, weak ones compared weakly, or *). */
export function matchesIfNoneMatch(header: string | null | undefined, tag: string): boolean {
  if (!header) return false
  if (header.trim() === '*') return true
  return header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === tag)
}
