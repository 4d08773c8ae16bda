// A cookie-authenticated state change from another origin is refused. Requests without an
// Origin header (curl, scripts) pass; browsers always send it on cross-origin POST/PUT/DELETE.
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

export function isCrossOriginWrite(request: Request, allowedOrigin: string): boolean {
  if (SAFE_METHODS.has(request.method)) return false
  const origin = request.headers.get('origin')
  if (origin === null) return false
  if (origin === allowedOrigin) return false
  // The server's own address as this request reached it (e.g. 127.0.0.1 instead of localhost).
  return origin !== new URL(request.url).origin
}
