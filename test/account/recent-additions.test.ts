// "Sign out everywhere else" and a password change list what was added in the last 30 days and
// outlives a session (passkeys, access keys, single sign-on links: a stolen session may have
// added them), and remove the chosen ones in the same step (issue 36, item 2).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { SoftPasskey } from '../audit/soft-passkey'
import { Client, PASSWORD, signUp } from '../support/client'
import { removeDir, startTestServer, type TestServer } from '../support/server'
import { post, testClock } from './support'

const DAY = 86_400_000
const clock = testClock()
let server: TestServer

beforeAll(async () => {
  server = await startTestServer({ now: clock.now })
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

async function withAdditions() {
  const first = await signUp(server.url)
  const old = (await first.post('/api/access-keys', { name: 'old laptop', scopes: ['stats:read'] })).body
  clock.advance(31 * DAY)
  // A month on (the session expired meanwhile): a new sign-in, stolen, adds what outlives it.
  const signedIn = await post(server.url, '/api/auth/login', { email: first.email, password: PASSWORD })
  const alice = new Client(server.url, { cookie: signedIn.cookies.svc_session })
  const planted = (await alice.post('/api/access-keys', { name: 'planted', scopes: ['entries:reveal'] })).body
  const options = await alice.post('/api/account/passkeys/options')
  const passkey = (await alice.post('/api/account/passkeys', { name: 'planted passkey', response: new SoftPasskey(server.url).register(options.body) })).body
  const user = server.deps.accounts.userById(first.user.id)!
  await server.deps.accounts.linkIdentity(user, { issuer: 'https://id.example.org', subject: `planted-${first.user.id}` })
  // Linking ended the other sessions: this browser signs in again.
  const again = await post(server.url, '/api/auth/login', { email: first.email, password: PASSWORD })
  const session = new Client(server.url, { cookie: again.cookies.svc_session })
  return { alice: Object.assign(session, { user: first.user, email: first.email }), old, planted, passkey }
}

test('lists the passkeys, keys and links of the last 30 days, nothing older, never a key', async () => {
  const { alice, old, planted, passkey } = await withAdditions()
  const answer = await alice.get('/api/account/recent-additions')
  expect(answer.status).toBe(200)
  expect(answer.body.since).toBe(new Date(clock.now() - 30 * DAY).toISOString())
  expect(answer.body.accessKeys.map((k: { id: string }) => k.id)).toEqual([planted.id])
  expect(answer.body.accessKeys.map((k: { id: string }) => k.id)).not.toContain(old.id)
  expect(answer.body.passkeys).toEqual([{ id: passkey.id, name: 'planted passkey', createdAt: passkey.createdAt }])
  expect(answer.body.oidcLinks).toEqual([{ name: null, linkedAt: new Date(clock.now()).toISOString() }])
  expect(answer.text).not.toContain(planted.key)
  const key = await alice.keyClient(['stats:read'])
  expect((await key.get('/api/account/recent-additions')).body.code).toBe('SESSION_REQUIRED')
})

test('sign out everywhere else removes the chosen ones in the same step; a foreign id changes nothing', async () => {
  const { alice, old, planted, passkey } = await withAdditions()
  const other = await post(server.url, '/api/auth/login', { email: alice.email, password: PASSWORD })
  const bob = await signUp(server.url)
  const bobsKey = (await bob.post('/api/access-keys', { name: 'bob', scopes: ['stats:read'] })).body
  const foreign = await alice.post('/api/account/sessions/revoke-others', { remove: { accessKeys: [planted.id, bobsKey.id] } })
  expect(foreign.status).toBe(404)
  expect(foreign.body.code).toBe('ACCESS_KEY_NOT_FOUND')
  // Nothing happened: the other session and the planted key live on.
  expect((await new Client(server.url, { cookie: other.cookies.svc_session }).get('/api/auth/me')).status).toBe(200)
  expect((await new Client(server.url, { key: planted.key }).get('/api/auth/me')).status).toBe(200)
  const done = await alice.post('/api/account/sessions/revoke-others', { remove: { accessKeys: [planted.id], passkeys: [passkey.id], oidcLink: true } })
  expect(done.status).toBe(204)
  expect((await new Client(server.url, { cookie: other.cookies.svc_session }).get('/api/auth/me')).status).toBe(401)
  expect((await new Client(server.url, { key: planted.key }).get('/api/auth/me')).status).toBe(401)
  expect((await alice.get('/api/access-keys')).body.map((k: { id: string }) => k.id)).toEqual([old.id])
  expect((await alice.get('/api/account/passkeys')).body).toEqual([])
  expect(server.deps.accounts.userById(alice.user.id)!.identities).toEqual([])
  const events = (await alice.get('/api/audit?limit=10')).body.items.map((e: { action: string }) => e.action)
  expect(events.slice(0, 4)).toEqual(['auth.oidc_unlink', 'access_key.revoke', 'passkey.delete', 'auth.session_end'])
  // Without a body it signs the others out as before.
  expect((await alice.post('/api/account/sessions/revoke-others')).status).toBe(204)
})

test('a password change removes the chosen ones with it; a wrong password removes nothing', async () => {
  const { alice, planted, passkey } = await withAdditions()
  const wrong = await alice.post('/api/account/password', {
    currentPassword: 'not it at all',
    newPassword: 'a new password',
    remove: { accessKeys: [planted.id] },
  })
  expect(wrong.status).toBe(401)
  expect((await new Client(server.url, { key: planted.key }).get('/api/auth/me')).status).toBe(200)
  const changed = await alice.post('/api/account/password', {
    currentPassword: PASSWORD,
    newPassword: 'a new password',
    remove: { accessKeys: [planted.id], passkeys: [passkey.id] },
  })
  expect(changed.status).toBe(204)
  expect((await new Client(server.url, { key: planted.key }).get('/api/auth/me')).status).toBe(401)
  expect((await alice.get('/api/account/passkeys')).body).toEqual([])
  expect((await post(server.url, '/api/auth/login', { email: alice.email, password: 'a new password' })).status).toBe(200)
})
