// The client's address, for throttling (and the audit log and session list). Without
// SVC_TRUST_PROXY it is the peer's address, whatever the headers say. With it, and only when the
// peer is a trusted proxy, the forwarding chain is read from the right: each trusted proxy
// appended the address it saw, so the right-most hop that is not a trusted proxy is the first one
// no trusted party vouches beyond. Hops further left were written by the client and are ignored.
// One header is read: the one SVC_TRUST_PROXY names (`x-forwarded-for` or `forwarded`), else the
// one present; a request carrying both, with no header named, is taken at the proxy's address: a
// proxy that writes only one of them passes the other on as the client wrote it.
import { isIP, type BlockList } from 'node:net'
import type { Config } from '../config'

export interface PeerSource {
  requestIP(request: Request): { address: string } | null
}

/** One forwarding chain holds at most this many hops (a longer header is cut from the left). */
const MAX_HOPS = 32

export function clientAddress(
  request: Request,
  server: PeerSource | null | undefined,
  config: Pick<Config, 'trustProxy'> & Partial<Pick<Config, 'trustProxyHeader'>>,
): string {
  const peer = normalizeAddress(server?.requestIP(request)?.address ?? '')
  if (!peer) return 'unknown'
  const trusted = config.trustProxy
  if (!trusted || !isTrusted(trusted, peer)) return peer
  const hops = forwardedChain(request.headers, config.trustProxyHeader ?? 'auto')
  // Each step to the left is accepted only because the hop to its right is a trusted proxy.
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = normalizeAddress(hops[i])
    // An unreadable hop: no proxy of ours wrote it, so the last trusted proxy's peer is all we know.
    if (!hop) return i === hops.length - 1 ? peer : normalizeAddress(hops[i + 1])
    if (!isTrusted(trusted, hop)) return hop
  }
  // Every hop is a trusted proxy: the left-most is the closest thing to a client.
  return hops.length > 0 ? normalizeAddress(hops[0]) || peer : peer
}

function isTrusted(list: BlockList, address: string): boolean {
  return list.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4')
}

/**
 * X-Forwarded-For (what Caddy and nginx set) or the `for=` values of Forwarded (RFC 7239), as
 * `header` says; `auto`: the one present, none when both are. Several header lines are one list, in order.
 */
function forwardedChain(headers: Headers, header: Config['trustProxyHeader']): string[] {
  const xff = header === 'forwarded' ? null : headers.get('x-forwarded-for')
  const forwarded = header === 'x-forwarded-for' ? null : headers.get('forwarded')
  if (xff !== null && forwarded !== null) return []
  if (xff !== null)
    return xff
      .split(',')
      .slice(-MAX_HOPS)
      .map((hop) => hop.trim())
  if (forwarded === null) return []
  const hops: string[] = []
  for (const element of forwarded.split(',').slice(-MAX_HOPS)) {
    let hop = ''
    for (const pair of element.split(';')) {
      const eq = pair.indexOf('=')
      if (eq > 0 && pair.slice(0, eq).trim().toLowerCase() === 'for') hop = pair.slice(eq + 1).trim()
    }
    hops.push(hop)
  }
  return hops
}

/**
 * A bare IP address in canonical form, or '' when the text is not one. Accepts what the headers
 * carry: quotes, `[v6]`, `[v6]:port`, `v4:port`; IPv4-mapped IPv6 becomes IPv4.
 */
export function normalizeAddress(raw: string): string {
  let text = raw.trim()
  if (text.length > 100) return ''
  if (text.startsWith('"') && text.endsWith('"') && text.length >= 2) text = text.slice(1, -1)
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(text)
  if (bracketed) text = bracketed[1]
  else if (/^\d{1,3}(\.\d{1,3}){3}:\d{1,5}$/.test(text)) text = text.slice(0, text.lastIndexOf(':'))
  text = text.toLowerCase()
  const mapped = /^::ffff:(\d{1,3}(\.\d{1,3}){3})$/.exec(text)
  if (mapped) text = mapped[1]
  return isIP(text) === 0 ? '' : text
}
