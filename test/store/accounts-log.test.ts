// The accounts document logs what changed like a vault: a write of one account costs that
// account's change, not every account; each account keeps at most 50 sessions (oldest goes);
// expired sessions leave as logged deletions, never by rewriting the file.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { readLoggedDocumentSync } from '../../src/store/document'
import { ACCOUNTS_LISTS } from '../../src/store/records'
import { MAX_SESSIONS_PER_ACCOUNT } from '../../src/store/sessions'
import { SESSION_SWEEP_MS } from '../../src/auth/accounts'
import { signUp } from '../support/client'
import { fileStore, removeDir, startTestServer, type TestServer } from '../support/server'

let server: TestServer
let clock = Date.parse('2030-01-01T00:00:00Z')
const now = () => clock

beforeAll(async () => {
  server = await startTestServer({ now })
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

const accountsPath = () => join(server.dataDir, 'accounts.json')
const logLines = () => (existsSync(`${accountsPath()}.log`) ? readFileSync(`${accountsPath()}.log`, 'utf8').trim().split('\n') : [])
const batch = (line: string) => JSON.parse(line.slice(9)) as [string, string, any][]
const stored = () => JSON.parse(readLoggedDocumentSync(accountsPath(), ACCOUNTS_LISTS)!)
const me = (token: string) => fetch(`${server.url}/api/auth/me`, { headers: { cookie: `svc_session=${token}` } }).then((r) => r.status)

describe('accounts document', () => {
  test('creating an access key appends that key to the log; the file is not rewritten', async () => {
    for (let i = 0; i < 5; i++) await signUp(server.url)
    const alice = await signUp(server.url)
    await fileStore(server).accounts.fold()
    const file = readFileSync(accountsPath(), 'utf8')
    const created = await alice.post('/api/access-keys', { name: 'ci', scopes: ['stats:read'] })
    expect(created.status).toBe(201)
    expect(readFileSync(accountsPath(), 'utf8')).toBe(file)
    const lines = logLines()
    expect(lines).toHaveLength(1)
    expect(batch(lines[0]).map(([kind, list, value]) => [kind, list, value.id])).toEqual([['put', 'accessKeys', created.body.id]])
    // Revoking logs one deletion.
    expect((await alice.delete(`/api/access-keys/${created.body.id}`)).status).toBe(204)
    expect(batch(logLines().at(-1)!)).toEqual([['del', 'accessKeys', created.body.id]])
    expect(stored().accessKeys.some((k: any) => k.id === created.body.id)).toBe(false)
  })

  test(`at most ${MAX_SESSIONS_PER_ACCOUNT} sessions per account: a new one ends the oldest`, async () => {
    const bob = await signUp(server.url)
    const user = server.deps.accounts.userById(bob.user.id)!
    const tokens = [bob.credentials.cookie!]
    for (let i = 0; i < MAX_SESSIONS_PER_ACCOUNT + 4; i++) {
      clock += 1000
      tokens.push((await server.deps.accounts.startSession(user)).token)
    }
    const ofBob = stored().sessions.filter((s: any) => s.userId === bob.user.id)
    expect(ofBob).toHaveLength(MAX_SESSIONS_PER_ACCOUNT)
    for (const token of tokens.slice(0, 5)) expect(await me(token)).toBe(401)
    for (const token of tokens.slice(5)) expect(await me(token)).toBe(200)
    // Another account's sessions are untouched.
    const carol = await signUp(server.url)
    expect(await me(carol.credentials.cookie!)).toBe(200)
  })

  test('expired sessions leave as logged deletions, without rewriting the file', async () => {
    const dave = await signUp(server.url)
    const erin = await signUp(server.url)
    await fileStore(server).accounts.fold()
    const file = readFileSync(accountsPath(), 'utf8')
    const before = stored().sessions.length
    clock += server.deps.config.sessionTtlMs + SESSION_SWEEP_MS
    expect(await me(dave.credentials.cookie!)).toBe(401)
    const erinUser = server.deps.accounts.userById(erin.user.id)!
    await server.deps.accounts.startSession(erinUser)
    expect(readFileSync(accountsPath(), 'utf8')).toBe(file)
    const changes = batch(logLines().at(-1)!)
    const deleted = changes.filter(([kind]) => kind === 'del')
    expect(deleted.length).toBe(before)
    expect(changes.filter(([kind]) => kind === 'put')).toHaveLength(1)
    expect(stored().sessions).toHaveLength(1)
  })
})

test('sessions stored before sessions had ids get the same id at every load, so a logged logout replays', async () => {
  const { Store } = await import('../../src/store/store')
  const { Accounts } = await import('../../src/auth/accounts')
  const { tempDir } = await import('../support/server')
  const { writeFileSync } = await import('node:fs')
  const dir = tempDir()
  try {
    const session = (n: number) => ({
      tokenHash: String(n).repeat(64).slice(0, 64),
      userId: 'u1',
      createdAt: '2030-01-01T00:00:00.000Z',
      expiresAt: '2031-01-01T00:00:00.000Z',
    })
    const user = { id: 'u1', email: 'old@example.test', name: null, passwordHash: null, identities: [], createdAt: '2030-01-01T00:00:00.000Z' }
    writeFileSync(join(dir, 'accounts.json'), JSON.stringify({ version: 1, keyCheck: 'x', users: [user], sessions: [session(1), session(2)], accessKeys: [] }))
    const options = { createKeyCheck: () => 'x', lock: false }
    const first = await Store.open(dir, options)
    const ids = first.accounts.data.sessions.map((s) => s.id)
    expect(ids.every((id) => typeof id === 'string' && id.length === 32)).toBe(true)
    const accounts = new Accounts(first.accounts, { signup: 'open', sessionTtlMs: 1000 }, now)
    await accounts.endSession(session(1).tokenHash)
    // Not folded: the deletion is in the log, the file still has both sessions without ids.
    expect(JSON.parse(readFileSync(join(dir, 'accounts.json'), 'utf8')).sessions).toHaveLength(2)
    const second = await Store.open(dir, options)
    expect(second.accounts.data.sessions.map((s) => s.tokenHash)).toEqual([session(2).tokenHash])
    expect(second.accounts.data.sessions[0].id).toBe(ids[1])
  } finally {
    removeDir(dir)
  }
})

test('a backup taken beside the running server holds the accounts changes still in the log', async () => {
  const { createBackup } = await import('../../src/store/backup')
  const frank = await signUp(server.url)
  await fileStore(server).accounts.fold()
  const created = await frank.post('/api/access-keys', { name: 'late', scopes: ['stats:read'] })
  expect(created.status).toBe(201)
  expect(logLines().length).toBeGreaterThan(0)
  const bundle = createBackup(server.dataDir)
  const accounts = JSON.parse(Buffer.from(bundle.files.find((f) => f.path === 'accounts.json')!.data, 'base64').toString('utf8'))
  expect(accounts.accessKeys.map((k: { id: string }) => k.id)).toContain(created.body.id)
})
