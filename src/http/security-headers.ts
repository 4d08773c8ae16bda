// Headers every answer carries; HTML answers add their own Content-Security-Policy.
import { Elysia } from 'elysia'

export const SECURITY_HEADERS: Record<string, string> = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
}

export const STRICT_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

export const securityHeaders = new Elysia({ name: 'http.security-headers' }).onRequest(({ set }) => {
  Object.assign(set.headers, SECURITY_HEADERS)
})
