// Account deletion leaves nothing that comes back (issue 36, item 9): a device sign-in approved
// before the deletion pays out no key; the notifier does not re-create the vault of a deleted
// webhook owner; a late write or audit event of the account writes no file.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { PgStore } from '../../src/store/postgres/store'
import { PASSWORD, signUp } from '../support/client'
import { durableDocument, removeDir, startTestServer, storedVault, type TestServer } from '../support/server'

let server: TestServer
let clock = Date.parse('2026-06-01T08:00:00.000Z')

beforeAll(async () => {
  // The webhook target is a loopback port nothing listens on (allowed for this test).
  server = await startTestServer({ now: () => clock, env: { SVC_WEBHOOK_ALLOW: '127.0.0.0/8' } })
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

/**
 * Every file of the data folder that names the user (vault, its change log, its audit log and
 * anchor); on the database store, every row that does (its vault document but for the tombstone
 * that keeps it from coming back, its changes, its audit log and lines).
 */
async function filesOf(userId: string): Promise<string[]> {
  const store = server.deps.store
  if (!(store instanceof PgStore)) return readdirSync(join(server.dataDir, 'vaults')).filter((name) => name.includes(userId))
  const rows = await store.db.run(
    (sql) => sql`
      SELECT 'svc_documents' AS at FROM svc_documents WHERE id = ${userId} AND NOT deleted
      UNION ALL SELECT 'svc_changes' FROM svc_changes WHERE document_id = ${userId}
      UNION ALL SELECT 'svc_audit_logs' FROM svc_audit_logs WHERE log_id = ${userId}
      UNION ALL SELECT 'svc_audit_lines' FROM svc_audit_lines WHERE log_id = ${userId}`,
  )
  return rows.map((row: { at: string }) => row.at)
}

async function deleteAccount(client: Awaited<ReturnType<typeof signUp>>) {
  const answer = await client.request('DELETE', '/api/account', { password: PASSWORD })
  expect(answer.status).toBe(204)
  await server.deps.audit.settle()
  expect(await filesOf(client.user.id)).toEqual([])
}

test('a device sign-in approved before the deletion pays out no key and re-creates nothing', async () => {
  const alice = await signUp(server.url)
  await alice.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })
  const started = (await alice.anonymous().post('/api/auth/device', { deviceName: 'laptop' })).body
  expect((await alice.post(`/api/auth/device/${started.userCode}/approve`)).body).toEqual({ status: 'approved' })
  await deleteAccount(alice)
  clock += 10_000
  const poll = await alice.anonymous().post('/api/auth/device/token', { deviceCode: started.deviceCode })
  expect(poll.status).toBe(400)
  expect(poll.body.code).toBe('INVALID_GRANT')
  expect(poll.text).not.toContain('svc_')
  await server.deps.audit.settle()
  expect(await filesOf(alice.user.id)).toEqual([])
  expect(server.deps.store.accounts.data.accessKeys.filter((k) => k.userId === alice.user.id)).toEqual([])
})

test('the notifier forgets a deleted webhook owner: no delivery, no vault file', async () => {
  const bob = await signUp(server.url)
  const category = (await bob.post('/api/categories', { name: 'Due', keyType: 'simple', envVarName: 'DUE_KEY' })).body
  await bob.post('/api/entries', { categoryId: category.id, name: 'old', value: 'v', expiresAt: new Date(clock - 86_400_000).toISOString() })
  expect((await bob.put('/api/account/notifications', { webhookUrl: 'http://127.0.0.1:9/due' })).status).toBe(200)
  const notifier = server.deps.notifier
  await notifier.deliver(bob.user.id)
  await deleteAccount(bob)
  // The next days' rounds, and a delivery asked for by name.
  clock += 86_400_000
  await notifier.tick()
  await notifier.deliver(bob.user.id).catch(() => {})
  await notifier.scan()
  await server.deps.audit.settle()
  expect(await filesOf(bob.user.id)).toEqual([])
})

test('a late write of the vault or a late audit event of the account writes no file', async () => {
  const carol = await signUp(server.url)
  await carol.post('/api/categories', { name: 'Held', keyType: 'simple', envVarName: 'HELD_KEY' })
  // Something held the open vault across the deletion (a delivery, an audit anchor).
  const held = await storedVault(server, carol.user.id)
  await deleteAccount(carol)
  await expect(held.update((data) => void data.categories.length)).rejects.toThrow('deleted')
  const event = { action: 'entry.create' as const, actor: { type: 'session' as const, id: null, name: null }, clientAddress: '127.0.0.1', userAgent: null }
  await expect(server.deps.audit.record(carol.user.id, event)).rejects.toThrow()
  await expect(server.deps.vaults.open(carol.user.id)).rejects.toThrow('deleted')
  expect(await filesOf(carol.user.id)).toEqual([])
  expect(existsSync(join(server.dataDir, 'vaults', `${carol.user.id}.json`))).toBe(false)
  // Nor in the store: no file, or no row but the deletion's mark in the database.
  await expect(durableDocument(server, carol.user.id)).rejects.toThrow()
})
