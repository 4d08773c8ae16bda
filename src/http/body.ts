// Request bodies: JSON only, at most 2 MiB, received within a time bound. Parsing never throws
// here: malformed JSON becomes a marker value that fails every body schema, and the error handler
// turns the marker into 400 INVALID_JSON. Authentication runs before the body is read (the guard's
// authBeforeBody, registered ahead of this parser), so a stranger's body is never waited for.
import { Elysia } from 'elysia'
import { DEFAULT_BODY_TIMEOUT_MS } from '../config'
import { AppError } from './errors'

export const MAX_BODY_BYTES = 2 * 1024 * 1024
export const INVALID_JSON_BODY = '\u0000svc-vault:invalid-json'

export const MAX_BODY_DEPTH = 32

function nestedDeeperThan(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== 'object') return false
  if (limit === 0) return true
  for (const child of Object.values(value)) if (nestedDeeperThan(child, limit - 1)) return true
  return false
}

export const tooSlow = (timeoutMs: number) =>
  new AppError(408, 'REQUEST_TIMEOUT', `Request body not received within ${timeoutMs / 1000} s`, { connection: 'close' })

export const tooLarge = () => new AppError(413, 'PAYLOAD_TOO_LARGE', `Request body is larger than ${MAX_BODY_BYTES} bytes`)

/**
 * Paths whose body is a file the user hands over (the 2FA import): an oversized one is bad
 * input, 400 IMPORT_TOO_LARGE, rather than 413. The limit is the same.
 */
const FILE_BODY_PATHS = new Set<string>()
export const bodyIsAFile = (path: string) => void FILE_BODY_PATHS.add(path)
const tooLargeFor = (request: Request) =>
  FILE_BODY_PATHS.has(new URL(request.url).pathname)
    ? new AppError(400, 'IMPORT_TOO_LARGE', `content: the file is larger than the ${MAX_BODY_BYTES} bytes accepted in one import`)
    : tooLarge()

export const jsonBody = (receiveTimeoutMs = DEFAULT_BODY_TIMEOUT_MS) =>
  new Elysia({ name: 'http.json-body' })
    // Whatever the Content-Type says, the body is read as JSON: curl -d and a bare fetch() send
    // form and text/plain types. CSRF is handled by SameSite cookies and the Origin check.
    // Not async: a bodyless POST (reveal, logout: most of the hot path) gets its null at once,
    // without a promise for Elysia to await.
    .onParse({ as: 'global' }, ({ request }) => {
      const declared = request.headers.get('content-length')
      if (request.body === null || declared === '0') return null
      // Refused before reading when the size is declared; counted after reading when chunked.
      if (Number(declared) > MAX_BODY_BYTES) throw tooLargeFor(request)
      return readJson(request, receiveTimeoutMs)
    })

/** The whole body, or 408 when it has not all arrived in time (Bun's idle timeout restarts with every byte). */
async function receive(request: Request, timeoutMs: number): Promise<ArrayBuffer> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const reading = request.arrayBuffer()
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(tooSlow(timeoutMs)), timeoutMs)
  })
  // Should the deadline win, the read still settles (when the connection closes) unobserved.
  reading.catch(() => {})
  try {
    return await Promise.race([reading, deadline])
  } finally {
    clearTimeout(timer)
  }
}

async function readJson(request: Request, timeoutMs: number): Promise<unknown> {
  const bytes = await receive(request, timeoutMs)
  if (bytes.byteLength > MAX_BODY_BYTES) throw tooLargeFor(request)
  if (bytes.byteLength === 0) return null
  try {
    const value = JSON.parse(new TextDecoder().decode(bytes))
    // No request is nested deeply; a body nested thousands deep would overflow the stack
    // of the validator (a 500 after seconds of work). Refused like malformed JSON.
    return nestedDeeperThan(value, MAX_BODY_DEPTH) ? INVALID_JSON_BODY : value
  } catch {
    return INVALID_JSON_BODY
  }
}
