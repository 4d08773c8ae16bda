// The one client-address helper (issue 14): the peer's address unless SVC_TRUST_PROXY names the
// peer as a proxy; then the right-most hop of X-Forwarded-For / Forwarded that is not a trusted proxy.
import { describe, expect, test } from 'bun:test'
import { ConfigError, loadConfig, parseTrustProxy } from '../../src/config'
import { clientAddress, normalizeAddress } from '../../src/http/client-address'

const peerAt = (address: string | null) => ({ requestIP: () => (address === null ? null : { address }) })
const request = (headers: Record<string, string> = {}) => new Request('http://localhost/api/auth/login', { method: 'POST', headers })
const trusting = (list: string) => ({ trustProxy: parseTrustProxy(list) })
const off = { trustProxy: null }

describe('clientAddress', () => {
  test('off by default: the peer, whatever the headers claim', () => {
    expect(loadConfig({}).trustProxy).toBeNull()
    const spoofed = request({ 'x-forwarded-for': '203.0.113.7', forwarded: 'for=203.0.113.8' })
    expect(clientAddress(spoofed, peerAt('127.0.0.1'), off)).toBe('127.0.0.1')
    expect(clientAddress(spoofed, peerAt('::ffff:10.0.0.5'), off)).toBe('10.0.0.5')
    expect(clientAddress(spoofed, null, off)).toBe('unknown')
    expect(clientAddress(spoofed, peerAt(null), off)).toBe('unknown')
  })

  test('a peer that is not a trusted proxy is the client, headers ignored', () => {
    const spoofed = request({ 'x-forwarded-for': '203.0.113.7' })
    expect(clientAddress(spoofed, peerAt('198.51.100.3'), trusting('loopback'))).toBe('198.51.100.3')
  })

  test('behind a trusted proxy: the right-most untrusted hop; entries the client wrote further left are ignored', () => {
    const config = trusting('loopback, 10.0.0.0/8')
    // The client sent "X-Forwarded-For: 1.1.1.1"; the proxies appended what they saw.
    const chain = request({ 'x-forwarded-for': '1.1.1.1, 203.0.113.7, 10.1.2.3' })
    expect(clientAddress(chain, peerAt('127.0.0.1'), config)).toBe('203.0.113.7')
    expect(clientAddress(request({ 'x-forwarded-for': '203.0.113.7' }), peerAt('::1'), config)).toBe('203.0.113.7')
    // Only trusted hops: the left-most one.
    expect(clientAddress(request({ 'x-forwarded-for': '10.0.0.9, 10.0.0.8' }), peerAt('127.0.0.1'), config)).toBe('10.0.0.9')
    // No header: the proxy itself.
    expect(clientAddress(request(), peerAt('127.0.0.1'), config)).toBe('127.0.0.1')
    // A garbage hop next to the proxy: the proxy's own peer is all that is known.
    expect(clientAddress(request({ 'x-forwarded-for': '203.0.113.7, not-an-address' }), peerAt('127.0.0.1'), config)).toBe('127.0.0.1')
  })

  test('Forwarded (RFC 7239) when there is no X-Forwarded-For: quoted, bracketed and ported forms', () => {
    const config = trusting('127.0.0.1')
    expect(clientAddress(request({ forwarded: 'for=192.0.2.60;proto=https;by=203.0.113.43' }), peerAt('127.0.0.1'), config)).toBe('192.0.2.60')
    expect(clientAddress(request({ forwarded: 'for="[2001:db8:cafe::17]:4711", for=198.51.100.17' }), peerAt('127.0.0.1'), config)).toBe('198.51.100.17')
    expect(clientAddress(request({ forwarded: 'For="[2001:DB8:cafe::17]:4711"' }), peerAt('127.0.0.1'), config)).toBe('2001:db8:cafe::17')
  })

  test('IPv6 ranges and single addresses', () => {
    const config = trusting('2001:db8::/32,192.0.2.1')
    expect(clientAddress(request({ 'x-forwarded-for': '198.51.100.1, 2001:db8::5' }), peerAt('192.0.2.1'), config)).toBe('198.51.100.1')
    expect(clientAddress(request({ 'x-forwarded-for': '198.51.100.1' }), peerAt('192.0.2.2'), config)).toBe('192.0.2.2')
  })

  test('normalizeAddress accepts addresses only', () => {
    expect(normalizeAddress(' 192.0.2.1:8080 ')).toBe('192.0.2.1')
    expect(normalizeAddress('[::1]:3000')).toBe('::1')
    expect(normalizeAddress('unknown')).toBe('')
    expect(normalizeAddress('_hidden')).toBe('')
    expect(normalizeAddress('1'.repeat(1000))).toBe('')
  })

  test('SVC_TRUST_PROXY: a bad entry stops the start with a line naming the variable', () => {
    for (const bad of ['everyone', '10.0.0.0/33', '10.0.0.1/8/2', 'fe80::/129', '10.0.0.0/x']) {
      expect(() => loadConfig({ SVC_TRUST_PROXY: bad })).toThrow(ConfigError)
      expect(() => loadConfig({ SVC_TRUST_PROXY: bad })).toThrow(/SVC_TRUST_PROXY/)
    }
    expect(loadConfig({ SVC_TRUST_PROXY: ' loopback , 10.0.0.0/8, ::1 ' }).trustProxy).not.toBeNull()
  })
})
