// An anonymous passkey sign-in finds the credential through an index, not by walking every user
// (issue 36, item 13): with the list of users made unreachable, a sign-in still works, an unknown
// credential is still 401, and the index follows a passkey's removal and its account's deletion.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { SoftPasskey } from '../audit/soft-passkey'
import { PASSWORD, signUp } from '../support/client'
import { removeDir, startTestServer, type TestServer } from '../support/server'
import { post } from './support'

let server: TestServer

beforeAll(async () => {
  server = await startTestServer()
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

async function signIn(passkey: SoftPasskey) {
  const options = await post(server.url, '/api/auth/passkey/options', {})
  return post(server.url, '/api/auth/passkey/login', { response: passkey.signIn(options.body) }, { svc_passkey: options.cookies.svc_passkey })
}

test('passkey sign-in looks the credential up by id: no walk over the users', async () => {
  const passkeys: SoftPasskey[] = []
  const owners = []
  for (let n = 0; n < 3; n++) {
    const owner = await signUp(server.url)
    const passkey = new SoftPasskey(server.url)
    const options = await owner.post('/api/account/passkeys/options')
    expect((await owner.post('/api/account/passkeys', { name: `key ${n}`, response: passkey.register(options.body) })).status).toBe(201)
    passkeys.push(passkey)
    owners.push(owner)
  }
  const accounts = server.deps.accounts
  const users = accounts.users
  accounts.users = () => {
    throw new Error('a passkey lookup walked every user')
  }
  try {
    const signedIn = await signIn(passkeys[1])
    expect(signedIn.status).toBe(200)
    expect(signedIn.body.user.id).toBe(owners[1].user.id)
    const stranger = await signIn(new SoftPasskey(server.url))
    expect(stranger.status).toBe(401)
    expect(stranger.body.code).toBe('PASSKEY_FAILED')
    // A removed passkey and a deleted account's passkey no longer sign in.
    const id = (await owners[0].get('/api/account/passkeys')).body[0].id
    expect((await owners[0].delete(`/api/account/passkeys/${id}`)).status).toBe(204)
    expect((await signIn(passkeys[0])).body.code).toBe('PASSKEY_FAILED')
    expect((await owners[2].request('DELETE', '/api/account', { password: PASSWORD })).status).toBe(204)
    expect((await signIn(passkeys[2])).body.code).toBe('PASSKEY_FAILED')
  } finally {
    accounts.users = users
  }
})
