// Where a webhook may go: a public address only, unless SVC_WEBHOOK_ALLOW names the
// internal range. The host is resolved once, every address checked, and the connection made to
// the checked address itself (a DNS answer that changes between check and connect, "DNS rebinding",
// changes nothing); the peer of the connection is checked again. Redirects are not followed.
// Addresses are compared as the kernel will use them: the URL parser has already turned
// 2130706433, 0177.0.0.1, 0x7f.1 and 127.1 into 127.0.0.1, and [::ffff:127.0.0.1] into
// [::ffff:7f00:1], which is judged as the IPv4 address it maps.
import type { RequestOptions } from 'node:http'
import { BlockList, isIP } from 'node:net'

/**
 * Not public: loopback, unspecified, private, shared, link-local, documentation, benchmark,
 * multicast, reserved. One list per family: a BlockList also matches IPv4 addresses against
 * IPv4-mapped IPv6 rules, which would make every IPv4 address internal.
 */
const INTERNAL_V4 = new BlockList()
for (const [network, bits] of [
  ['0.0.0.0', 8], // "this network"; 0.0.0.0 reaches this machine
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT, also Tailscale
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved and broadcast
] as const)
  INTERNAL_V4.addSubnet(network, bits, 'ipv4')
const INTERNAL_V6 = new BlockList()
for (const [network, bits] of [
  ['::', 96], // unspecified, loopback, IPv4-compatible
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64],
  ['2001::', 23], // Teredo and other protocol assignments
  ['2001:db8::', 32],
  ['2002::', 16], // 6to4, embeds an IPv4 address
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const)
  INTERNAL_V6.addSubnet(network, bits, 'ipv6')

/** The eight 16-bit groups of an IPv6 address (which isIP has accepted). */
function groups(address: string): number[] {
  let text = address.toLowerCase()
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted[1].split('.').map(Number)
    text = text.slice(0, -dotted[1].length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined]
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const fill = tail === undefined ? [] : Array(8 - left.length - right.length).fill('0')
  return [...left, ...fill, ...right].map((group) => parseInt(group, 16))
}

const isMapped = (g: number[]) => g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff

/** The IPv4 address an IPv6 one stands for (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::a.b.c.d), or null. */
export function embeddedIPv4(address: string): string | null {
  if (isIP(address) !== 6) return null
  const g = groups(address)
  const nat64 = g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)
  if (!isMapped(g) && !nat64) return null
  return [g[6] >> 8, g[6] & 0xff, g[7] >> 8, g[7] & 0xff].join('.')
}

/** An IPv4-mapped address as the IPv4 address it is (how a dual-stack socket may report an IPv4 peer); any other as it is. */
export function unmapped(address: string): string {
  return isIP(address) === 6 && isMapped(groups(address)) ? embeddedIPv4(address)! : address
}

/** Internal by the lists above; an IPv4-mapped address always (what it carries is reached as IPv4, never through it). */
function isInternal(address: string): boolean {
  if (isIP(address) === 4) return INTERNAL_V4.check(address, 'ipv4')
  if (isMapped(groups(address))) return true
  const v4 = embeddedIPv4(address)
  return INTERNAL_V6.check(address, 'ipv6') || (v4 !== null && INTERNAL_V4.check(v4, 'ipv4'))
}

const family = (address: string) => (isIP(address) === 6 ? 'ipv6' : 'ipv4')

/** Loopback and unspecified addresses: this machine itself, in any spelling. */
export function isThisHost(address: string): boolean {
  const v4 = embeddedIPv4(address) ?? address
  if (isIP(v4) === 4) return v4.startsWith('127.') || v4 === '0.0.0.0'
  const g = groups(address)
  return g.slice(0, 7).every((x) => x === 0) && (g[7] === 0 || g[7] === 1)
}

/**
 * May a webhook connect to this address? Public ones yes; an internal one only when `allow`
 * (SVC_WEBHOOK_ALLOW) holds it, or the IPv4 address it maps. Loopback in any spelling (::1,
 * 0.0.0.0, ::) is the same machine as 127.0.0.1 and is allowed with it.
 */
export function isPermittedAddress(address: string, allow: BlockList | null): boolean {
  const bare = address.replace(/^\[|\]$/g, '').toLowerCase()
  if (isIP(bare) === 0) return false
  const v4 = embeddedIPv4(bare)
  if (allow) {
    if (allow.check(bare, family(bare)) || (v4 !== null && allow.check(v4, 'ipv4'))) return true
    if (isThisHost(bare) && allow.check('127.0.0.1', 'ipv4')) return true
  }
  return !isInternal(bare)
}

/** Names that mean this machine whatever a resolver says (RFC 6761), with or without the final dot. */
export function isLocalName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.+$/, '')
  return name === 'localhost' || name.endsWith('.localhost')
}

export interface TargetCheck {
  allow: BlockList | null
  /** The vault's own address: refused even where the allow list would permit it. */
  isSelf(address: string, port: number): boolean
}

export const portOf = (url: URL) => Number(url.port || (url.protocol === 'https:' ? 443 : 80))

/**
 * The addresses of a URL's host that a delivery may connect to (empty: refused). A literal
 * address is itself; a local name is loopback; any other name is resolved (within `timeoutMs`).
 */
export async function permittedAddresses(url: URL, check: TargetCheck, timeoutMs: number): Promise<string[]> {
  const host = url.hostname.replace(/^\[|\]$/g, '')
  let addresses: string[]
  if (isIP(host) !== 0) addresses = [host]
  else if (isLocalName(host)) addresses = ['127.0.0.1', '::1']
  else {
    const { lookup } = process.getBuiltinModule('node:dns/promises')
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeout = new Promise<never>((_, fail) => (timer = setTimeout(() => fail(new Error('timed out')), timeoutMs)))
    try {
      addresses = (await Promise.race([lookup(host, { all: true }), timeout])).map((a) => a.address)
    } catch {
      return []
    } finally {
      clearTimeout(timer)
    }
  }
  const port = portOf(url)
  return addresses.filter((address) => isPermittedAddress(address, check.allow) && !check.isSelf(address, port))
}

export type DeliveryOutcome = 'delivered' | 'refused' | 'rejected' | 'unreachable' | 'timed out'

/**
 * POSTs `body` to `url`, connected to `address` (already checked) whatever the name resolves to
 * now. The request names the URL's host (Host header, TLS server name and certificate check);
 * a redirect is an answer like any other non-2xx. The peer actually connected to is checked again.
 */
export async function postTo(
  url: URL,
  address: string,
  check: TargetCheck,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<DeliveryOutcome> {
  const { request } = process.getBuiltinModule(url.protocol === 'https:' ? 'node:https' : 'node:http')
  const family = isIP(address)
  return new Promise((done) => {
    let settled = false
    const finish = (outcome: DeliveryOutcome) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      done(outcome)
    }
    const req = request(
      {
        method: 'POST',
        host: url.hostname.replace(/^\[|\]$/g, ''),
        port: portOf(url),
        path: `${url.pathname}${url.search}`,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)), connection: 'close' },
        agent: false,
        // The one address checked, never a second resolution.
        lookup: ((_name: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) =>
          options?.all ? callback(null, [{ address, family }]) : callback(null, address, family)) as RequestOptions['lookup'],
      },
      (response) => {
        const reported = response.socket?.remoteAddress
        const peer = reported && unmapped(reported)
        const status = response.statusCode ?? 0
        response.resume()
        response.destroy()
        if (peer && (!isPermittedAddress(peer, check.allow) || check.isSelf(peer, portOf(url)))) return finish('refused')
        finish(status >= 200 && status < 300 ? 'delivered' : 'rejected')
      },
    )
    const timer = setTimeout(() => {
      finish('timed out')
      req.destroy()
    }, timeoutMs)
    req.on('error', () => finish('unreachable'))
    req.end(body)
  })
}
