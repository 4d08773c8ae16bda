// Re-authentication for what outlives a session (issue 36, item 2): a session cookie alone, once
// its proof is older than 10 minutes, can add no passkey, link no single sign-on, make no access
// key, approve no device sign-in, change no webhook and (with two-factor sign-in on) delete no
// account. A sign-in counts as a proof; POST /api/auth/reauth (the password plus the second
// factor when it is on, or a passkey) gives a new one. Injectable clock, no sleeps.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { AuthContext } from '../../src/auth/guard'
import { sha256Hex } from '../../src/crypto/tokens'
import { SoftPasskey } from '../audit/soft-passkey'
import { PASSWORD, signUp, uniqueEmail } from '../support/client'
import { removeDir, startTestServer, type TestServer } from '../support/server'
import { enableTwoFactor, oathtool, post, testClock } from './support'

const MINUTE = 60_000
const clock = testClock()
let server: TestServer

beforeAll(async () => {
  // Single sign-on configured (never reached: the stale link is refused before the redirect).
  server = await startTestServer({ now: clock.now, env: { SVC_OIDC_ISSUER: 'http://127.0.0.1:9/', SVC_OIDC_CLIENT_ID: 'vault' } })
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

const cookieOf = (client: { credentials: { cookie?: string } }) => ({ svc_session: client.credentials.cookie! })

describe('a stale session', () => {
  test('gets 403 REAUTHENTICATION_REQUIRED on every action that outlives it, and nothing changes', async () => {
    const alice = await signUp(server.url)
    clock.advance(10 * MINUTE + 1)
    const { userCode } = (await alice.anonymous().post('/api/auth/device', { deviceName: 'stale-box' })).body
    const answers = {
      createAccessKey: await alice.post('/api/access-keys', { name: 'late', scopes: ['stats:read'] }),
      passkeyOptions: await alice.post('/api/account/passkeys/options'),
      registerPasskey: await alice.post('/api/account/passkeys', { name: 'late', response: { id: 'x' } }),
      linkOidc: await alice.post('/api/auth/oidc/link'),
      approveDevice: await alice.post(`/api/auth/device/${userCode}/approve`),
      webhook: await alice.put('/api/account/notifications', { webhookUrl: 'https://hooks.example.org/due' }),
    }
    for (const [name, answer] of Object.entries(answers)) {
      expect({ name, status: answer.status, code: answer.body?.code }).toEqual({ name, status: 403, code: 'REAUTHENTICATION_REQUIRED' })
    }
    expect((await alice.get('/api/access-keys')).body).toEqual([])
    expect((await alice.get('/api/account/notifications')).body.webhookUrl).toBeNull()
    // The device request is still waiting: nothing was approved.
    expect((await alice.get(`/api/auth/device/${userCode}`)).status).toBe(200)
    // Reads and everyday work go on.
    expect((await alice.get('/api/auth/me')).status).toBe(200)
    expect((await alice.post('/api/categories', { name: 'Stale', keyType: 'simple', envVarName: 'STALE_KEY' })).status).toBe(201)
  })

  test('a sign-in counts as the proof for 10 minutes; then POST /api/auth/reauth gives a new one', async () => {
    const alice = await signUp(server.url)
    clock.advance(9 * MINUTE)
    expect((await alice.post('/api/access-keys', { name: 'fresh', scopes: ['stats:read'] })).status).toBe(201)
    clock.advance(MINUTE + 1)
    expect((await alice.post('/api/access-keys', { name: 'stale', scopes: ['stats:read'] })).body.code).toBe('REAUTHENTICATION_REQUIRED')
    expect((await alice.get('/api/auth/reauth')).body).toEqual({
      freshUntil: new Date(Date.parse(alice.user.createdAt) + 10 * MINUTE).toISOString(),
      fresh: false,
    })
    // A wrong password proves nothing.
    const wrong = await alice.post('/api/auth/reauth', { password: 'not the password' })
    expect(wrong.status).toBe(401)
    expect(wrong.body.code).toBe('INVALID_CREDENTIALS')
    expect((await alice.post('/api/access-keys', { name: 'stale', scopes: ['stats:read'] })).status).toBe(403)
    expect((await alice.post('/api/auth/reauth', {})).status).toBe(400)
    const right = await alice.post('/api/auth/reauth', { password: PASSWORD })
    expect(right.status).toBe(200)
    expect(right.body).toEqual({ freshUntil: new Date(clock.now() + 10 * MINUTE).toISOString() })
    expect(right.text).not.toContain(PASSWORD)
    expect((await alice.post('/api/access-keys', { name: 'proved', scopes: ['stats:read'] })).status).toBe(201)
    expect((await alice.get('/api/auth/reauth')).body).toEqual({ freshUntil: right.body.freshUntil, fresh: true })
    clock.advance(10 * MINUTE + 1)
    expect((await alice.post('/api/access-keys', { name: 'stale again', scopes: ['stats:read'] })).status).toBe(403)
    // The proof belongs to the session that gave it, not to the account's other sessions.
    const other = await post(server.url, '/api/auth/login', { email: alice.email, password: PASSWORD })
    clock.advance(11 * MINUTE)
    await alice.reauth()
    const otherKey = await post(server.url, '/api/access-keys', { name: 'other', scopes: ['stats:read'] }, { svc_session: other.cookies.svc_session })
    expect(otherKey.body.code).toBe('REAUTHENTICATION_REQUIRED')
    // The stamp survives a restart of its record's write: it is stored with the session.
    const stored = server.deps.store.accounts.data.sessions.find((s) => s.userId === alice.user.id && s.reauthAt)
    expect(stored?.reauthAt).toBe(new Date(clock.now()).toISOString())
  })

  test('an access key cannot re-authenticate, nor reach the guarded actions', async () => {
    const alice = await signUp(server.url)
    const key = await alice.keyClient(['stats:read', 'entries:read'])
    expect((await key.post('/api/auth/reauth', { password: PASSWORD })).body.code).toBe('SESSION_REQUIRED')
    expect((await key.post('/api/access-keys', { name: 'minted', scopes: ['stats:read'] })).body.code).toBe('SESSION_REQUIRED')
  })
})

describe('with two-factor sign-in on', () => {
  test('the password alone is not a proof: the code is needed with it; a used code is refused', async () => {
    const alice = await signUp(server.url)
    const { secret } = await enableTwoFactor(alice, clock.now())
    clock.advance(11 * MINUTE)
    const passwordOnly = await alice.post('/api/auth/reauth', { password: PASSWORD })
    expect(passwordOnly.status).toBe(400)
    expect(passwordOnly.body.error).toContain('code')
    expect((await alice.post('/api/auth/reauth', { password: PASSWORD, code: '000000' })).body.code).toBe('INVALID_TWO_FACTOR_CODE')
    expect((await alice.post('/api/access-keys', { name: 'k', scopes: ['stats:read'] })).status).toBe(403)
    const code = oathtool(secret, clock.now())
    expect((await alice.post('/api/auth/reauth', { password: PASSWORD, code })).status).toBe(200)
    expect((await alice.post('/api/access-keys', { name: 'k', scopes: ['stats:read'] })).status).toBe(201)
    // Once used, that code proves nothing again (not even to the same session).
    expect((await alice.post('/api/auth/reauth', { password: PASSWORD, code })).body.code).toBe('INVALID_TWO_FACTOR_CODE')
  })

  test('deleting the account needs the fresh proof beside the password', async () => {
    const alice = await signUp(server.url)
    const { recoveryCodes } = await enableTwoFactor(alice, clock.now())
    clock.advance(11 * MINUTE)
    const refused = await alice.request('DELETE', '/api/account', { password: PASSWORD })
    expect(refused.status).toBe(403)
    expect(refused.body.code).toBe('REAUTHENTICATION_REQUIRED')
    expect((await alice.get('/api/auth/me')).status).toBe(200)
    await alice.reauth({ password: PASSWORD, recoveryCode: recoveryCodes[0] })
    expect((await alice.request('DELETE', '/api/account', { password: PASSWORD })).status).toBe(204)
    expect(existsSync(join(server.dataDir, 'vaults', `${alice.user.id}.json`))).toBe(false)
  })
})

describe('with a passkey', () => {
  test('a passkey assertion for the re-authentication challenge is a proof; replayed, it is not', async () => {
    const alice = await signUp(server.url)
    const passkey = new SoftPasskey(server.url)
    const creation = await alice.post('/api/account/passkeys/options')
    expect((await alice.post('/api/account/passkeys', { name: 'laptop', response: passkey.register(creation.body) })).status).toBe(201)
    clock.advance(11 * MINUTE)
    const options = await post(server.url, '/api/auth/reauth/options', {}, cookieOf(alice))
    expect(options.status).toBe(200)
    expect(options.body.allowCredentials.map((c: { id: string }) => c.id)).toEqual([passkey.credentialId.toString('base64url')])
    const assertion = passkey.signIn(options.body)
    const cookies = { ...cookieOf(alice), svc_reauth: options.cookies.svc_reauth }
    const proved = await post(server.url, '/api/auth/reauth', { passkey: assertion }, cookies)
    expect(proved.status).toBe(200)
    expect((await alice.post('/api/access-keys', { name: 'k', scopes: ['stats:read'] })).status).toBe(201)
    // The challenge is single-use.
    expect((await post(server.url, '/api/auth/reauth', { passkey: assertion }, cookies)).body.code).toBe('PASSKEY_FAILED')
    // Another account's session cannot use alice's ceremony, nor her passkey.
    const bob = await signUp(server.url)
    clock.advance(11 * MINUTE)
    const bobOptions = await post(server.url, '/api/auth/reauth/options', {}, cookieOf(bob))
    expect(bobOptions.body.code).toBe('PASSKEY_NOT_FOUND')
    const aliceOptions = await post(server.url, '/api/auth/reauth/options', {}, cookieOf(alice))
    const stolen = await post(
      server.url,
      '/api/auth/reauth',
      { passkey: passkey.signIn(aliceOptions.body) },
      { ...cookieOf(bob), svc_reauth: aliceOptions.cookies.svc_reauth },
    )
    expect(stolen.body.code).toBe('PASSKEY_FAILED')
    expect((await bob.post('/api/access-keys', { name: 'k', scopes: ['stats:read'] })).status).toBe(403)
  })
})

describe('the helper for routes that take the proof in their body (exporting 2FA secrets)', () => {
  test('requireOrProve: a password (plus code) in the request proves and renews; without it the session must be fresh; a key must carry it', async () => {
    const alice = await signUp(server.url)
    const { freshProof } = server.deps.protection
    const user = () => server.deps.accounts.userById(alice.user.id)!
    const session = (): AuthContext => ({
      user: user(),
      userId: alice.user.id,
      method: 'session',
      scopes: null,
      accessKey: null,
      sessionTokenHash: sha256Hex(alice.credentials.cookie!),
    })
    await freshProof.requireOrProve(session(), undefined, 'test')
    clock.advance(11 * MINUTE)
    await expect(freshProof.requireOrProve(session(), undefined, 'test')).rejects.toMatchObject({ status: 403, code: 'REAUTHENTICATION_REQUIRED' })
    await expect(freshProof.requireOrProve(session(), { password: 'wrong one' }, 'test')).rejects.toMatchObject({ status: 401, code: 'INVALID_CREDENTIALS' })
    await freshProof.requireOrProve(session(), { password: PASSWORD }, 'test')
    // The proof in the request counted as a re-authentication of the session.
    expect((await alice.post('/api/access-keys', { name: 'k', scopes: ['stats:read'] })).status).toBe(201)
    const { secret } = await enableTwoFactor(alice, clock.now())
    // In a fresh session the password alone confirms (the session's proof covers the second factor)...
    await freshProof.requireOrProve(session(), { password: PASSWORD }, 'test')
    await expect(freshProof.requireOrProve(session(), { password: 'wrong one' }, 'test')).rejects.toMatchObject({ status: 401 })
    // ...in a stale one the code must come with it.
    clock.advance(11 * MINUTE)
    await expect(freshProof.requireOrProve(session(), { password: PASSWORD }, 'test')).rejects.toMatchObject({ status: 400 })
    const keyRecord = server.deps.store.accounts.data.accessKeys.find((k) => k.userId === alice.user.id)!
    const viaKey: AuthContext = {
      user: user(),
      userId: alice.user.id,
      method: 'access-key',
      scopes: ['stats:read'],
      accessKey: keyRecord,
      sessionTokenHash: null,
    }
    await expect(freshProof.requireOrProve(viaKey, undefined, 'test')).rejects.toMatchObject({ status: 403, code: 'REAUTHENTICATION_REQUIRED' })
    await freshProof.requireOrProve(viaKey, { password: PASSWORD, code: oathtool(secret, clock.now()) }, 'test')
  })
})

describe('the audit log', () => {
  test('records each re-authentication, failed ones too, never the password', async () => {
    const alice = await signUp(server.url, uniqueEmail('reauth-audit'))
    await alice.post('/api/auth/reauth', { password: 'wrong password here' })
    await alice.reauth()
    const events = (await alice.get('/api/audit?action=auth.reauth')).body.items
    expect(events.map((e: { outcome: string; details: { method: string } }) => [e.outcome, e.details.method])).toEqual([
      ['ok', 'password'],
      ['failed', 'password'],
    ])
    expect(JSON.stringify(events)).not.toContain('wrong password')
  })
})
