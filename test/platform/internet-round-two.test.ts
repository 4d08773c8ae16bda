// Issue 36 (safe on the internet, round two): one server per port (no reusePort), a malformed Host
// header answered cleanly, SVC_TRUST_PROXY's header choice and its refused all-address ranges, and
// passkeys bound to the origin the server listens on when SVC_BASE_URL is unset.
import { describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { ConfigError, loadConfig, parseTrustProxy, parseTrustProxyHeader, parseWebhookAllow } from '../../src/config'
import { clientAddress } from '../../src/http/client-address'
import { post } from '../account/support'
import { SoftPasskey } from '../audit/soft-passkey'
import { signUp } from '../support/client'
import { removeDir, runServerToExit, spawnServer, startTestServer, tempDir, TEST_MASTER_KEY } from '../support/server'

/** One request over a raw socket, so that any Host header goes out exactly as written. */
function rawRequest(url: string, method: string, path: string, host: string, body = ''): Promise<{ status: number; body: string }> {
  const { port } = new URL(url)
  return new Promise((done, fail) => {
    const socket = connect(Number(port), '127.0.0.1', () =>
      socket.write(
        `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      ),
    )
    let text = ''
    socket.on('data', (chunk) => (text += chunk))
    socket.on('error', fail)
    socket.on('end', () => done({ status: Number(text.split(' ')[1]), body: text.slice(text.indexOf('\r\n\r\n') + 4) }))
  })
}

describe('one server per port', () => {
  test('a second server on the same port exits non-zero with one line, and the first keeps serving', async () => {
    const first = await spawnServer()
    const otherData = tempDir()
    try {
      const port = new URL(first.url).port
      const second = await runServerToExit({ SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_DATA_DIR: otherData, PORT: port })
      expect(second.code).not.toBe(0)
      const lines = second.output.trim().split('\n')
      expect(lines).toHaveLength(1)
      expect(lines[0]).toContain(`port ${port}`)
      expect(lines[0]).toContain('in use')
      expect((await fetch(`${first.url}/healthz`)).status).toBe(200)
    } finally {
      await first.stop()
      removeDir(first.dataDir)
      removeDir(otherData)
    }
  })
})

describe('a malformed Host header', () => {
  const hosts = ['localhost:1@evil.example', 'localhost:abc', '[::1]x', 'localhost:99999', 'localhost:1:2', '1.2.3.999', 'localhost:1@evil.example:80']
  const requests: [string, string, string][] = [
    ['POST', '/api/auth/passkey/options', '{}'],
    ['POST', '/api/auth/login', '{"email":"a@example.com","password":"wrong-password-1"}'],
    ['POST', '/api/auth/device', '{"deviceName":"x"}'],
    ['GET', '/api/auth/me', ''],
    ['GET', '/', ''],
  ]
  for (const env of [{}, { HOST: '0.0.0.0' }] as Record<string, string>[]) {
    test(`is a clean 400 INVALID_HOST on every path, never a 500 or a stack trace (${env.HOST ? 'any Host allowed' : 'loopback only'})`, async () => {
      const server = await startTestServer({ env })
      try {
        for (const host of hosts) {
          for (const [method, path, body] of requests) {
            const answer = await rawRequest(server.url, method, path, host, body)
            expect([host, path, answer.status]).toEqual([host, path, 400])
            expect(JSON.parse(answer.body)).toEqual({ error: expect.any(String), code: 'INVALID_HOST' })
          }
        }
        expect(server.logs.join('\n')).not.toContain('Error')
        // Well-formed names still pass.
        expect((await rawRequest(server.url, 'POST', '/api/auth/passkey/options', `localhost:${new URL(server.url).port}`, '{}')).status).toBe(200)
      } finally {
        await server.stop()
        removeDir(server.dataDir)
      }
    })
  }
})

describe('SVC_TRUST_PROXY', () => {
  const peer = { requestIP: () => ({ address: '127.0.0.1' }) }
  const request = (headers: Record<string, string>) => new Request('http://localhost/api/auth/login', { method: 'POST', headers })
  const trusting = (value: string) => ({ trustProxy: parseTrustProxy(value), trustProxyHeader: parseTrustProxyHeader(value) })

  test('behind a proxy that writes only Forwarded, a client-sent X-Forwarded-For does not pick the address', () => {
    // The proxy appended for=198.51.100.7 (the address it saw); the client wrote X-Forwarded-For itself.
    const attack = request({ 'x-forwarded-for': '203.0.113.66', forwarded: 'for=198.51.100.7' })
    expect(clientAddress(attack, peer, trusting('loopback'))).not.toBe('203.0.113.66')
    expect(clientAddress(attack, peer, trusting('loopback'))).toBe('127.0.0.1')
    expect(clientAddress(attack, peer, trusting('loopback,forwarded'))).toBe('198.51.100.7')
    expect(loadConfig({ SVC_TRUST_PROXY: 'loopback, Forwarded' }).trustProxyHeader).toBe('forwarded')
    // And the other way round: a proxy writing X-Forwarded-For, a client-sent Forwarded.
    const other = request({ 'x-forwarded-for': '198.51.100.7', forwarded: 'for=203.0.113.66' })
    expect(clientAddress(other, peer, trusting('loopback'))).toBe('127.0.0.1')
    expect(clientAddress(other, peer, trusting('loopback,x-forwarded-for'))).toBe('198.51.100.7')
    // The named header only, even when the other is alone.
    expect(clientAddress(request({ 'x-forwarded-for': '203.0.113.66' }), peer, trusting('loopback,forwarded'))).toBe('127.0.0.1')
    expect(clientAddress(request({ forwarded: 'for=203.0.113.66' }), peer, trusting('loopback,x-forwarded-for'))).toBe('127.0.0.1')
    // One header present, none named: that one (as before).
    expect(clientAddress(request({ forwarded: 'for=198.51.100.7' }), peer, trusting('loopback'))).toBe('198.51.100.7')
    expect(clientAddress(request({ 'x-forwarded-for': '198.51.100.7' }), peer, trusting('loopback'))).toBe('198.51.100.7')
  })

  test('all-address ranges and contradictory header names are refused at start with one line', async () => {
    for (const value of ['0.0.0.0/0', '::/0', 'loopback,0.0.0.0/0', '10.0.0.5,::/0', 'loopback,forwarded,x-forwarded-for', 'forwarded']) {
      expect(() => loadConfig({ SVC_TRUST_PROXY: value })).toThrow(ConfigError)
    }
    expect(() => loadConfig({ SVC_WEBHOOK_ALLOW: '0.0.0.0/0' })).toThrow(ConfigError)
    expect(() => parseWebhookAllow('192.168.1.0/33')).toThrow(ConfigError)
    const dataDir = tempDir()
    try {
      const start = await runServerToExit({ SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_DATA_DIR: dataDir, SVC_TRUST_PROXY: 'loopback,0.0.0.0/0' })
      expect(start.code).toBe(1)
      expect(start.output.trim().split('\n')).toHaveLength(1)
      expect(start.output).toContain('SVC_TRUST_PROXY')
    } finally {
      removeDir(dataDir)
    }
  })
})

describe('passkeys without SVC_BASE_URL', () => {
  test('an assertion made for a page on http://localhost:5173, relayed with that Host, does not sign in', async () => {
    const server = await startTestServer()
    try {
      const port = new URL(server.url).port
      const vault = `http://localhost:${port}`
      const alice = await signUp(vault)
      const passkey = new SoftPasskey(vault)
      const registration = passkey.register((await alice.post('/api/account/passkeys/options')).body)
      expect((await alice.post('/api/account/passkeys', { name: 'laptop', response: registration })).status).toBe(201)

      // The attacker's dev server on another port of this machine relays the ceremony, Host and all.
      const relayed = { host: 'localhost:5173' }
      const options = await post(server.url, '/api/auth/passkey/options', {}, {}, relayed)
      expect(options.status).toBe(200)
      expect(options.body.rpId).toBe('localhost')
      // The victim's authenticator signs for the page it is on.
      ;(passkey as unknown as { origin: string }).origin = 'http://localhost:5173'
      const assertion = passkey.signIn(options.body)
      const login = await post(server.url, '/api/auth/passkey/login', { response: assertion }, { svc_passkey: options.cookies.svc_passkey }, relayed)
      expect([login.status, login.body.code]).toEqual([401, 'PASSKEY_FAILED'])
      expect(login.cookies.svc_session).toBeUndefined()
      // Relayed with the vault's own Host instead: still the wrong origin.
      const direct = await post(server.url, '/api/auth/passkey/options', {}, {}, { host: `localhost:${port}` })
      const second = await post(
        server.url,
        '/api/auth/passkey/login',
        { response: passkey.signIn(direct.body) },
        { svc_passkey: direct.cookies.svc_passkey },
        { host: `localhost:${port}` },
      )
      expect([second.status, second.body.code]).toEqual([401, 'PASSKEY_FAILED'])

      // The same passkey on the vault's own origin signs in.
      ;(passkey as unknown as { origin: string }).origin = vault
      const own = await post(vault, '/api/auth/passkey/options', {})
      const signedIn = await post(vault, '/api/auth/passkey/login', { response: passkey.signIn(own.body) }, { svc_passkey: own.cookies.svc_passkey })
      expect(signedIn.status).toBe(200)
    } finally {
      await server.stop()
      removeDir(server.dataDir)
    }
  })
})
