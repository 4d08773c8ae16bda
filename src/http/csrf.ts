// A cookie-authenticated state change from another origin is refused, and so is one a browser
// marks `Sec-Fetch-Site: cross-site`. Requests without either header (curl, scripts) pass;
// browsers always send Origin on cross-origin POST/PUT/DELETE.
import { AppError } from './errors'

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

export function isCrossOriginWrite(request: Request, allowedOrigin: string): boolean {
  if (SAFE_METHODS.has(request.method)) return false
  // Fetch Metadata, which no page can forge: a browser says cross-site even where it leaves Origin
  // out, and same-origin where it sends `Origin: null` (a form POST under Referrer-Policy: no-referrer).
  const site = request.headers.get('sec-fetch-site')?.trim().toLowerCase()
  if (site === 'cross-site') return true
  if (site === 'same-origin') return false
  const origin = request.headers.get('origin')
  if (origin === null) return false
  if (origin === allowedOrigin) return false
  // The server's own address as this request reached it (e.g. 127.0.0.1 instead of localhost).
  return origin !== new URL(request.url).origin
}

/** Refuses a cross-site write (login and register take no session, so the guard does not check them). */
export function assertSameSite(request: Request, allowedOrigin: string): void {
  if (isCrossOriginWrite(request, allowedOrigin)) throw new AppError(403, 'CSRF_REJECTED', 'Cross-origin request refused')
}
