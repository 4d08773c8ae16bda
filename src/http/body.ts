// Request bodies: JSON only, at most 2 MiB. Parsing never throws here: malformed JSON becomes a
// marker value that fails every body schema, so authentication (which runs before validation)
// still answers first, and the error handler turns the marker into 400 INVALID_JSON.
import { Elysia } from 'elysia'
import { AppError } from './errors'

export const MAX_BODY_BYTES = 2 * 1024 * 1024
export const INVALID_JSON_BODY = '\u0000svc-vault:invalid-json'

export const tooLarge = () => new AppError(413, 'PAYLOAD_TOO_LARGE', `Request body is larger than ${MAX_BODY_BYTES} bytes`)

export const jsonBody = new Elysia({ name: 'http.json-body' })
  .onRequest(({ request }) => {
    const length = Number(request.headers.get('content-length'))
    if (length > MAX_BODY_BYTES) throw tooLarge()
  })
  // Whatever the Content-Type says, the body is read as JSON: curl -d and a bare fetch() send
  // form and text/plain types. CSRF is handled by SameSite cookies and the Origin check.
  .onParse({ as: 'global' }, async ({ request }) => {
    const bytes = await request.arrayBuffer()
    if (bytes.byteLength > MAX_BODY_BYTES) throw tooLarge()
    if (bytes.byteLength === 0) return null
    try {
      return JSON.parse(new TextDecoder().decode(bytes))
    } catch {
      return INVALID_JSON_BODY
    }
  })
