// Headers every answer carries; HTML answers add their own Content-Security-Policy.
import { Elysia } from 'elysia'

export const SECURITY_HEADERS: Record<string, string> = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
}

export const STRICT_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Default headers of the app (Elysia's `headers`), compiled into every answer rather than copied
// in by a hook on every request.
export const securityHeaders = new Elysia({ name: 'http.security-headers' }).headers(SECURITY_HEADERS)
