// DNS rebinding: a web page on evil.example whose name is made to resolve to 127.0.0.1 can reach
// a vault on this machine, but its requests still carry `Host: evil.example`. When the vault
// knows its name (SVC_BASE_URL) or listens only on loopback, a request naming any other host is
// refused: 421 MISDIRECTED_REQUEST. Loopback names pass on any port (no page can make a browser
// send them for its own origin), so do SVC_BASE_URL's host and a request without a Host header.
import { Elysia } from 'elysia'
import type { Config } from '../config'
import { errorBody } from './error-handler'

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]'])

/** The host part of a Host header value (`name`, `name:port`, `[v6]:port`), lower case. */
function hostName(host: string): string {
  const text = host.trim().toLowerCase()
  if (text.startsWith('[')) return text.slice(0, text.indexOf(']') + 1)
  const colon = text.indexOf(':')
  return colon < 0 ? text : text.slice(0, colon)
}

export function isAllowedHost(host: string | null, allowed: string[]): boolean {
  if (host === null || host === '') return true
  const lower = host.trim().toLowerCase().replace(/\.$/, '')
  if (allowed.includes(lower)) return true
  return LOOPBACK_NAMES.has(hostName(lower))
}

export function hostCheck(config: Pick<Config, 'allowedHosts'>) {
  const allowed = config.allowedHosts
  const plugin = new Elysia({ name: 'http.host-check' })
  if (!allowed) return plugin
  // Host header values that passed, exactly as sent: nearly every request sends one of a few,
  // and the check's normalising was several per cent of a reveal. Bounded: any loopback port passes.
  const passed = new Set<string>()
  return plugin.onRequest(({ request, set }) => {
    const host = request.headers.get('host') ?? new URL(request.url).host
    if (passed.has(host)) return
    if (isAllowedHost(host, allowed)) {
      if (passed.size < 64) passed.add(host)
      return
    }
    set.status = 421
    set.headers['content-type'] = 'application/json; charset=utf-8'
    return errorBody('This server does not answer for that host name', 'MISDIRECTED_REQUEST')
  })
}
