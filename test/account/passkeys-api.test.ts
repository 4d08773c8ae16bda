// Passkey endpoints over HTTP without a browser (issue 16): the relying party comes from
// SVC_BASE_URL, or without it from the request's own loopback origin; every failure is a clear
// 4xx (PASSKEY_FAILED, PASSKEY_NOT_FOUND), never a 500, whatever the body holds.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Client, signUp } from '../support/client'
import { removeDir, startTestServer, type TestServer } from '../support/server'
import { post } from './support'

let laptop: TestServer
let hosted: TestServer

beforeAll(async () => {
  laptop = await startTestServer()
  hosted = await startTestServer({ env: { SVC_BASE_URL: 'https://vault.example.org' } })
})
afterAll(async () => {
  for (const server of [laptop, hosted]) {
    await server.stop()
    removeDir(server.dataDir)
  }
})

describe('relying party', () => {
  test('without SVC_BASE_URL: the loopback host the request reached', async () => {
    const port = new URL(laptop.url).port
    const viaLocalhost = await post(`http://localhost:${port}`, '/api/auth/passkey/options', {})
    expect(viaLocalhost.status).toBe(200)
    expect(viaLocalhost.body.rpId).toBe('localhost')
    expect(viaLocalhost.body.challenge).toMatch(/^[A-Za-z0-9_-]{20,}$/)
    expect(viaLocalhost.body.allowCredentials ?? []).toEqual([])
    const viaIp = await post(laptop.url, '/api/auth/passkey/options', {})
    expect(viaIp.body.rpId).toBe('127.0.0.1')
    const alice = await signUp(`http://localhost:${port}`)
    const options = await alice.post('/api/account/passkeys/options')
    expect(options.status).toBe(200)
    expect(options.body.rp.id).toBe('localhost')
    expect(options.body.authenticatorSelection.residentKey).toBe('required')
  })

  test('with SVC_BASE_URL: its host, whatever host the request named', async () => {
    const answer = await post(hosted.url, '/api/auth/passkey/options', {})
    expect(answer.body.rpId).toBe('vault.example.org')
    // The challenge cookie is HttpOnly and Secure under https.
    const line = answer.headers
      .getSetCookie()
      .find((l) => l.startsWith('svc_passkey='))!
      .toLowerCase()
    expect(line).toContain('httponly')
    expect(line).toContain('secure')
  })
})

describe('failures are clear 4xx answers', () => {
  test('sign-in without a challenge, with a forged one, or with a garbage assertion: 401 PASSKEY_FAILED', async () => {
    const bodies: unknown[] = [
      { response: {} },
      { response: { id: 'AAAA', rawId: 'AAAA', type: 'public-key', response: { clientDataJSON: 'x', authenticatorData: 'y', signature: 'z' } } },
      { response: { id: 12, response: null } },
    ]
    for (const body of bodies) {
      const none = await post(laptop.url, '/api/auth/passkey/login', body)
      expect([none.status, none.body.code]).toEqual([401, 'PASSKEY_FAILED'])
      const options = await post(laptop.url, '/api/auth/passkey/options', {})
      const withChallenge = await post(laptop.url, '/api/auth/passkey/login', body, { svc_passkey: options.cookies.svc_passkey })
      expect([withChallenge.status, withChallenge.body.code]).toEqual([401, 'PASSKEY_FAILED'])
    }
    const forged = await post(laptop.url, '/api/auth/passkey/login', { response: {} }, { svc_passkey: 'v1.AAAA.BBBB' })
    expect(forged.body.code).toBe('PASSKEY_FAILED')
    const noBody = await post(laptop.url, '/api/auth/passkey/login', { other: 1 })
    expect(noBody.status).toBe(400)
  })

  test('registering without options, or with a garbage response, is 401 PASSKEY_FAILED; unknown ids 404 PASSKEY_NOT_FOUND', async () => {
    const bob: Client = await signUp(laptop.url)
    const without = await bob.post('/api/account/passkeys', { name: 'x', response: { id: 'AAAA' } })
    expect([without.status, without.body.code]).toEqual([401, 'PASSKEY_FAILED'])
    await bob.post('/api/account/passkeys/options')
    const garbage = await bob.post('/api/account/passkeys', {
      name: 'x',
      response: { id: 'AAAA', response: { attestationObject: '!!', clientDataJSON: '??' } },
    })
    expect([garbage.status, garbage.body.code]).toEqual([401, 'PASSKEY_FAILED'])
    expect((await bob.get('/api/account/passkeys')).body).toEqual([])
    const missing = await bob.delete(`/api/account/passkeys/${crypto.randomUUID()}`)
    expect([missing.status, missing.body.code]).toEqual([404, 'PASSKEY_NOT_FOUND'])
  })

  test('a cross-site passkey sign-in or second step is refused', async () => {
    const evil = { origin: 'https://evil.example' }
    expect((await post(laptop.url, '/api/auth/passkey/options', {}, {}, evil)).body.code).toBe('CSRF_REJECTED')
    expect((await post(laptop.url, '/api/auth/passkey/login', { response: {} }, {}, evil)).body.code).toBe('CSRF_REJECTED')
    expect((await post(laptop.url, '/api/auth/login/2fa', { code: '123456' }, {}, evil)).body.code).toBe('CSRF_REJECTED')
  })
})
