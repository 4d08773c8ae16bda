// DNS rebinding: a web page on evil.example whose name is made to resolve to 127.0.0.1 can reach
// a vault on this machine, but its requests still carry `Host: evil.example`. When the vault
// knows its name (SVC_BASE_URL) or listens only on loopback, a request naming any other host is
// refused: 421 MISDIRECTED_REQUEST. Loopback names pass on any port (no page can make a browser
// send them for its own origin), so do SVC_BASE_URL's host and a request without a Host header.
// A Host that is not a host name or address with an optional port (`localhost:1@evil.example`)
// is refused on any server, 400 INVALID_HOST: the request URL Bun builds from it cannot be parsed.
import { Elysia } from 'elysia'
import { isIP } from 'node:net'
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

/** A name, an IPv4 address or a bracketed IPv6 address, then an optional port (RFC 9110 7.2); no regex backtracking to speak of. */
const HOST_SYNTAX = /^(\[[0-9a-f:.]{2,45}\]|[a-z0-9_][a-z0-9_.-]{0,252})(?::(\d{1,5}))?$/i

export function isWellFormedHost(host: string): boolean {
  const match = HOST_SYNTAX.exec(host)
  if (!match) return false
  if (match[2] !== undefined && Number(match[2]) > 65535) return false
  if (match[1].startsWith('[') && isIP(match[1].slice(1, -1)) !== 6) return false
  // What the URL parser still refuses, such as 1.2.3.999 (numeric parts read as IPv4).
  return URL.canParse(`http://${host}/`)
}

export function isAllowedHost(host: string | null, allowed: string[]): boolean {
  if (host === null || host === '') return true
  const lower = host.trim().toLowerCase().replace(/\.$/, '')
  if (allowed.includes(lower)) return true
  return LOOPBACK_NAMES.has(hostName(lower))
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/**
 * A person who opens the vault by a LAN address or a name it was not told gets a page
 * that says what to do, not the JSON error as the whole page. API clients keep the JSON.
 */
function misdirectedPage(host: string, baseUrl: string): string {
  const shown = escapeHtml(host.slice(0, 200))
  const base = escapeHtml(baseUrl)
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>Wrong address for this vault</title></head>
<body><main><h1>This vault does not answer at ${shown}</h1>
<p>You reached it as <code>${shown}</code>, but it answers only at <a href="${base}">${base}</a>, the address set in <code>SVC_BASE_URL</code>.</p>
<p>Open that address instead, or, to use this one, set <code>SVC_BASE_URL</code> to it (for example <code>SVC_BASE_URL=http://${shown}</code>) and restart the vault.
The operations guide explains it under "On your home network".</p></main></body></html>
`
}

export function hostCheck(config: Pick<Config, 'allowedHosts'> & { baseUrl?: string }, log?: (line: string) => void) {
  const allowed = config.allowedHosts
  const plugin = new Elysia({ name: 'http.host-check' })
  // Host header values that passed, exactly as sent: nearly every request sends one of a few,
  // and the check's normalising was several per cent of a reveal. Bounded: any loopback port passes.
  const passed = new Set<string>()
  const refused = new Set<string>()
  return plugin.onRequest(({ request, set }) => {
    const host = request.headers.get('host')
    if (host === null || host === '' || passed.has(host)) return
    if (!isWellFormedHost(host)) {
      set.status = 400
      set.headers['content-type'] = 'application/json; charset=utf-8'
      return errorBody('The Host header is not a host name or address with an optional port', 'INVALID_HOST')
    }
    if (!allowed || isAllowedHost(host, allowed)) {
      if (passed.size < 64) passed.add(host)
      return
    }
    set.status = 421
    // Once per refused host (bounded, printable characters only): why a page "does not load".
    if (log && refused.size < 64 && !refused.has(host)) {
      refused.add(host)
      log(
        `warning: refused a request for host "${host.slice(0, 100).replace(/[^\x21-\x7e]/g, '?')}": not SVC_BASE_URL's host; see "On your home network" in docs/operations.md`,
      )
    }
    if (config.baseUrl && request.headers.get('accept')?.includes('text/html')) {
      set.headers['content-type'] = 'text/html; charset=utf-8'
      return misdirectedPage(host, config.baseUrl)
    }
    set.headers['content-type'] = 'application/json; charset=utf-8'
    return errorBody('This server does not answer for that host name', 'MISDIRECTED_REQUEST')
  })
}
