// Sessions you can see and end, password change, account deletion, and the rules of /api/account
// (session only, cross-site refused), against the real server with its clock moved by hand.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createBackup, restoreBackup } from '../../src/store/backup'
import type { AccountsDocument } from '../../src/store/records'
import { Client, PASSWORD, sessionCookie, signUp, uniqueEmail } from '../support/client'
import { ACCOUNTS, durableDocument, removeDir, startTestServer, tempDir, type TestServer } from '../support/server'
import { post, testClock } from './support'
import { DATA_FOLDER_TOOLS, testOnFileStore } from '../support/requirements'

const clock = testClock(Date.now())
let server: TestServer

beforeAll(async () => {
  server = await startTestServer({ now: clock.now, env: { SVC_SESSION_TTL: '1h' } })
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

async function login(email: string, password = PASSWORD, userAgent?: string): Promise<Client> {
  const answer = await post(server.url, '/api/auth/login', { email, password }, {}, userAgent ? { 'user-agent': userAgent } : {})
  if (answer.status !== 200) throw new Error(`login ${answer.status} ${JSON.stringify(answer.body)}`)
  return new Client(server.url, { cookie: answer.cookies.svc_session })
}

describe('the session list', () => {
  test('lists every live session with id, times, address, device and which one is current; the id is not the token', async () => {
    const alice = await signUp(server.url)
    const firefox = await login(alice.email, PASSWORD, 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0')
    const curl = await login(alice.email, PASSWORD, 'curl/8.5.0')
    const list = await firefox.get('/api/account/sessions')
    expect(list.status).toBe(200)
    expect(list.body).toHaveLength(3)
    for (const item of list.body) {
      expect(Object.keys(item).sort()).toEqual(['clientAddress', 'createdAt', 'current', 'device', 'id', 'lastSeenAt'])
      expect(item.clientAddress).toBe('127.0.0.1')
      for (const token of [alice.credentials.cookie!, firefox.credentials.cookie!, curl.credentials.cookie!]) {
        expect(item.id).not.toBe(token)
        expect(item.id).not.toBe(new Bun.CryptoHasher('sha256').update(token).digest('hex'))
      }
    }
    expect(list.body.filter((s: any) => s.current)).toHaveLength(1)
    const current = list.body.find((s: any) => s.current)
    expect(current.device).toBe('Firefox on Linux')
    expect(list.body.map((s: any) => s.device)).toContain('curl')
    // Another account sees only its own.
    const bob = await signUp(server.url)
    expect((await bob.get('/api/account/sessions')).body).toHaveLength(1)
  })

  test('lastSeenAt moves when the session is used (at most once a minute)', async () => {
    const carol = await signUp(server.url)
    const before = (await carol.get('/api/account/sessions')).body[0].lastSeenAt
    clock.advance(2 * 60_000)
    await carol.get('/api/auth/me')
    const after = (await carol.get('/api/account/sessions')).body[0].lastSeenAt
    expect(Date.parse(after) - Date.parse(before)).toBe(2 * 60_000)
  })

  test('a moved lastSeenAt reaches disk with the next write (staged through the writer, not kept aside)', async () => {
    const erin = await signUp(server.url)
    clock.advance(2 * 60_000)
    await erin.get('/api/auth/me')
    const shown = (await erin.get('/api/account/sessions')).body[0]
    // The lazy commit (within 30 s) made now: what a restart would read.
    await server.deps.store.accounts.settle()
    const onDisk = (await durableDocument<AccountsDocument>(server, ACCOUNTS)).data
    expect(onDisk.sessions.find((s) => s.id === shown.id)?.lastSeenAt).toBe(shown.lastSeenAt)
  })

  test('DELETE ends one session; a foreign or unknown id is 404 SESSION_NOT_FOUND', async () => {
    const dave = await signUp(server.url)
    const other = await login(dave.email)
    const list = (await dave.get('/api/account/sessions')).body
    const otherId = list.find((s: any) => !s.current).id
    const eve = await signUp(server.url)
    const foreign = await eve.delete(`/api/account/sessions/${otherId}`)
    expect(foreign.status).toBe(404)
    expect(foreign.body.code).toBe('SESSION_NOT_FOUND')
    expect((await other.get('/api/auth/me')).status).toBe(200)
    expect((await dave.delete('/api/account/sessions/no-such-id')).body.code).toBe('SESSION_NOT_FOUND')

    expect((await dave.delete(`/api/account/sessions/${otherId}`)).status).toBe(204)
    expect((await other.get('/api/auth/me')).status).toBe(401)
    expect((await dave.get('/api/auth/me')).status).toBe(200)
  })

  test('revoke-others ends every session but the current one', async () => {
    const fay = await signUp(server.url)
    const others = [await login(fay.email), await login(fay.email)]
    const answer = await fay.post('/api/account/sessions/revoke-others')
    expect(answer.status).toBe(204)
    for (const other of others) expect((await other.get('/api/auth/me')).status).toBe(401)
    expect((await fay.get('/api/auth/me')).status).toBe(200)
    expect((await fay.get('/api/account/sessions')).body).toHaveLength(1)
  })

  test('at most 50 live sessions per account: the oldest goes when a new one starts', async () => {
    const gus = await signUp(server.url)
    const clients: Client[] = [gus]
    // 49 sessions made directly (a password sign-in each would take seconds), the 51st over HTTP.
    const user = server.deps.accounts.userById(gus.user.id)!
    for (let i = 0; i < 49; i++) {
      clock.advance(1000)
      clients.push(new Client(server.url, { cookie: (await server.deps.accounts.startSession(user)).token }))
    }
    clock.advance(1000)
    clients.push(await login(gus.email))
    const list = (await clients[50].get('/api/account/sessions')).body
    expect(list).toHaveLength(50)
    expect((await clients[0].get('/api/auth/me')).status).toBe(401)
    expect((await clients[1].get('/api/auth/me')).status).toBe(200)
    expect((await clients[50].get('/api/auth/me')).status).toBe(200)
  }, 60_000)

  test('expired sessions are not listed, and leave the file with the next write', async () => {
    const hal = await signUp(server.url)
    clock.advance(30 * 60_000)
    const fresh = await login(hal.email)
    clock.advance(31 * 60_000)
    expect((await hal.get('/api/auth/me')).status).toBe(401)
    const list = (await fresh.get('/api/account/sessions')).body
    expect(list).toHaveLength(1)
    expect(list[0].current).toBe(true)
    const stale = new Bun.CryptoHasher('sha256').update(hal.credentials.cookie!).digest('hex')
    await login(hal.email)
    expect(JSON.stringify((await durableDocument(server, ACCOUNTS)).data)).not.toContain(stale)
  })
})

describe('password change', () => {
  test('needs the current password, ends every other session, and the new password signs in', async () => {
    const ida = await signUp(server.url)
    const other = await login(ida.email)
    const wrong = await ida.post('/api/account/password', { currentPassword: 'not it at all', newPassword: 'a brand new password' })
    expect(wrong.status).toBe(401)
    expect(wrong.body.code).toBe('INVALID_CREDENTIALS')
    expect((await ida.get('/api/auth/me')).status).toBe(200)
    const short = await ida.post('/api/account/password', { currentPassword: PASSWORD, newPassword: 'short' })
    expect(short.status).toBe(400)
    expect(short.body.code).toBe('VALIDATION_ERROR')

    const changed = await ida.post('/api/account/password', { currentPassword: PASSWORD, newPassword: 'a brand new password' })
    expect(changed.status).toBe(204)
    expect((await other.get('/api/auth/me')).status).toBe(401)
    expect((await ida.get('/api/auth/me')).status).toBe(200)
    expect((await post(server.url, '/api/auth/login', { email: ida.email, password: PASSWORD })).status).toBe(401)
    expect((await post(server.url, '/api/auth/login', { email: ida.email, password: 'a brand new password' })).status).toBe(200)
  })

  test('wrong current passwords are throttled like sign-ins', async () => {
    const jo = await signUp(server.url)
    const statuses: number[] = []
    for (let i = 0; i < 11; i++)
      statuses.push((await jo.post('/api/account/password', { currentPassword: `wrong ${i} guess`, newPassword: 'another password' })).status)
    expect(statuses.slice(0, 10).every((s) => s === 401)).toBe(true)
    expect(statuses[10]).toBe(429)
    clock.advance(16 * 60_000)
  })
})

describe('account deletion', () => {
  testOnFileStore(DATA_FOLDER_TOOLS)(
    'deletes the account, its vault file and change log, access keys and sessions; a backup taken before restores it',
    async () => {
      const kim = await signUp(server.url)
      const created = await kim.post('/api/categories', { name: 'Cloud', keyType: 'simple', envVarName: 'CLOUD_KEY' })
      expect(created.status).toBe(201)
      const entry = await kim.post('/api/entries', { categoryId: created.body.data?.id ?? created.body.id, name: 'main', value: 'kim-secret-value' })
      expect(entry.status).toBe(201)
      const keyClient = await kim.keyClient(['stats:read'])
      const other = await login(kim.email)
      const vaultFile = join(server.dataDir, 'vaults', `${kim.user.id}.json`)
      expect(existsSync(vaultFile)).toBe(true)
      const backup = createBackup(server.dataDir)

      // The page asks twice; the API asks for the password.
      const wrong = await kim.request('DELETE', '/api/account', { password: 'not the password' })
      expect(wrong.status).toBe(401)
      expect(wrong.body.code).toBe('INVALID_CREDENTIALS')
      const missing = await kim.request('DELETE', '/api/account', {})
      expect(missing.status).toBe(401)
      expect((await kim.get('/api/auth/me')).status).toBe(200)

      const deleted = await kim.request('DELETE', '/api/account', { password: PASSWORD })
      expect(deleted.status).toBe(204)
      expect(deleted.headers.getSetCookie().some((line) => line.startsWith('svc_session=;') || /^svc_session=(;|$)/.test(line))).toBe(true)
      expect((await kim.get('/api/auth/me')).status).toBe(401)
      expect((await other.get('/api/auth/me')).status).toBe(401)
      expect((await keyClient.get('/api/stats')).status).toBe(401)
      expect(existsSync(vaultFile)).toBe(false)
      expect(existsSync(`${vaultFile}.log`)).toBe(false)
      const accounts = readFileSync(join(server.dataDir, 'accounts.json'), 'utf8')
      expect(accounts).not.toContain(kim.user.id)
      expect(accounts).not.toContain(kim.email)
      expect((await post(server.url, '/api/auth/login', { email: kim.email, password: PASSWORD })).status).toBe(401)

      // A backup taken now leaves out any vault without an owner (say one left by a crash mid-deletion).
      const orphan = `vaults/${crypto.randomUUID()}.json`
      writeFileSync(join(server.dataDir, orphan), '{"version":1}')
      const after = createBackup(server.dataDir).files.map((file) => file.path)
      expect(after).toContain('accounts.json')
      expect(after).not.toContain(orphan)
      expect(after).not.toContain(`vaults/${kim.user.id}.json`)
      rmSync(join(server.dataDir, orphan))

      // The backup taken before brings it all back.
      const restoredDir = tempDir()
      removeDir(restoredDir)
      await restoreBackup(backup, restoredDir)
      const restored = await startTestServer({ dataDir: restoredDir })
      try {
        const answer = await post(restored.url, '/api/auth/login', { email: kim.email, password: PASSWORD })
        expect(answer.status).toBe(200)
        const back = new Client(restored.url, { cookie: answer.cookies.svc_session })
        const entries = await back.get('/api/entries')
        const id = (entries.body.data ?? entries.body)[0].id
        const revealed = await back.post(`/api/entries/${id}/reveal`)
        expect(JSON.stringify(revealed.body)).toContain('kim-secret-value')
      } finally {
        await restored.stop()
        removeDir(restoredDir)
      }
    },
  )
})

describe('rules of /api/account', () => {
  test('every /api/account endpoint answers an access key 403 SESSION_REQUIRED', async () => {
    const lee = await signUp(server.url)
    const keyClient = await lee.keyClient(['stats:read', 'entries:read', 'categories:write'])
    const doc = (await lee.get('/api/openapi')).body
    const operations: [string, string][] = []
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      if (!path.startsWith('/api/account')) continue
      for (const [method, operation] of Object.entries<any>(item)) {
        operations.push([method.toUpperCase(), path.replace(/\{id\}/, 'some-id')])
        // Documented: an operation id, a summary, session-only security and its error answers.
        expect(operation.operationId).toMatch(/^[a-z][A-Za-z]+$/)
        expect(operation.summary).toBeTruthy()
        expect(operation.security).toEqual([{ sessionCookie: [] }])
        for (const status of ['401', '403']) expect(operation.responses[status]).toBeDefined()
      }
    }
    expect(operations.length).toBeGreaterThanOrEqual(13)
    for (const [method, path] of operations) {
      const answer = await keyClient.request(method, path, method === 'GET' ? undefined : {})
      expect([method, path, answer.status, answer.body.code]).toEqual([method, path, 403, 'SESSION_REQUIRED'])
    }
  })

  test('a cross-site request with the cookie is refused (403 CSRF_REJECTED) and changes nothing', async () => {
    const max = await signUp(server.url)
    const answer = await max.post('/api/account/password', { currentPassword: PASSWORD, newPassword: 'cross site change' }, { origin: 'https://evil.example' })
    expect(answer.status).toBe(403)
    expect(answer.body.code).toBe('CSRF_REJECTED')
    const deleted = await max.request('DELETE', '/api/account', { password: PASSWORD }, { 'sec-fetch-site': 'cross-site' })
    expect(deleted.body.code).toBe('CSRF_REJECTED')
    expect((await post(server.url, '/api/auth/login', { email: max.email, password: PASSWORD })).status).toBe(200)
  })

  test('without a session: 401 AUTH_REQUIRED', async () => {
    const anonymous = new Client(server.url)
    expect((await anonymous.get('/api/account/sessions')).body.code).toBe('AUTH_REQUIRED')
    expect((await anonymous.post('/api/account/2fa/setup', { password: 'x' })).body.code).toBe('AUTH_REQUIRED')
    expect(uniqueEmail()).toContain('@')
    expect(sessionCookie(new Headers())).toBeUndefined()
  })
})
