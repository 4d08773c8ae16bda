// Shared vaults: management, members and the last admin, isolation of ids between vaults,
// sealing under the vault's own data key, keys bound to a vault, audit naming the member, restart.
import { storedAuditLogExists } from '../support/audit-file'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync, existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Client, signUp } from '../support/client'
import { testOnFileStore } from '../support/requirements'
import { ACCOUNTS, durableDocument, startTestServer, tempDir, type TestServer } from '../support/server'
import { addMember, createVault, seed, team, type Member } from './support'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(async () => {
  await server.stop()
})

describe('shared vaults', () => {
  test('create, list with the role, get, rename; members; roles; the last admin stays (409 LAST_ADMIN)', async () => {
    const { admin, editor, viewer, stranger, vaultId } = await team(server)
    expect((await admin.get('/api/vaults')).body).toEqual([expect.objectContaining({ id: vaultId, name: 'team', role: 'admin', memberCount: 3 })])
    expect((await viewer.get('/api/vaults')).body.map((v: any) => [v.id, v.role])).toEqual([[vaultId, 'viewer']])
    expect((await stranger.get('/api/vaults')).body).toEqual([])
    expect((await stranger.get(`/api/vaults/${vaultId}`)).body.code).toBe('NOT_FOUND')
    expect((await admin.get(`/api/vaults/${crypto.randomUUID()}`)).status).toBe(404)
    expect((await editor.request('PATCH', `/api/vaults/${vaultId}`, { name: 'x' })).body.code).toBe('ROLE_REQUIRED')
    const renamed = await admin.request('PATCH', `/api/vaults/${vaultId}`, { name: 'renamed' })
    expect([renamed.status, renamed.body.name]).toEqual([200, 'renamed'])
    expect((await admin.post('/api/vaults', { name: '   ' })).status).toBe(400)

    const members = await viewer.get(`/api/vaults/${vaultId}/members`)
    expect(members.body.map((m: any) => [m.email, m.role]).sort()).toEqual(
      [
        [admin.email, 'admin'],
        [editor.email, 'editor'],
        [viewer.email, 'viewer'],
      ].sort(),
    )
    // The last admin can be neither demoted nor leave; once another is admin, they can.
    const demote = await admin.request('PATCH', `/api/vaults/${vaultId}/members/${admin.user.id}`, { role: 'editor' })
    expect([demote.status, demote.body.code]).toEqual([409, 'LAST_ADMIN'])
    expect((await admin.delete(`/api/vaults/${vaultId}/members/${admin.user.id}`)).body.code).toBe('LAST_ADMIN')
    expect((await editor.request('PATCH', `/api/vaults/${vaultId}/members/${viewer.user.id}`, { role: 'admin' })).body.code).toBe('ROLE_REQUIRED')
    expect((await admin.request('PATCH', `/api/vaults/${vaultId}/members/${stranger.user.id}`, { role: 'admin' })).body.code).toBe('MEMBER_NOT_FOUND')
    const promoted = await admin.request('PATCH', `/api/vaults/${vaultId}/members/${editor.user.id}`, { role: 'admin' })
    expect([promoted.status, promoted.body.role]).toEqual([200, 'admin'])
    expect((await admin.request('PATCH', `/api/vaults/${vaultId}/members/${admin.user.id}`, { role: 'viewer' })).status).toBe(200)
    // A viewer cannot remove others, but may leave.
    expect((await viewer.delete(`/api/vaults/${vaultId}/members/${editor.user.id}`)).body.code).toBe('ROLE_REQUIRED')
    expect((await viewer.delete(`/api/vaults/${vaultId}/members/${viewer.user.id}`)).status).toBe(204)
    expect((await viewer.get(`/api/vaults/${vaultId}/entries`)).body.code).toBe('NOT_FOUND')
    const log = await editor.get(`/api/vaults/${vaultId}/audit`)
    const actions = log.body.items.map((e: any) => e.action)
    expect(actions).toEqual(expect.arrayContaining(['vault.create', 'vault.rename', 'member.role_change', 'member.leave']))
  })

  test("another vault's ids, and the personal vault's, are 404 (never a leak); the personal routes see nothing shared", async () => {
    const { admin, vaultId } = await team(server)
    const otherVault = await createVault(admin, 'other')
    const here = await seed(admin, `/api/vaults/${vaultId}`, 'iso-here')
    const there = await seed(admin, `/api/vaults/${otherVault}`, 'iso-there')
    const personal = await seed(admin, '', 'iso-personal')
    for (const foreign of [there, personal]) {
      expect((await admin.get(`/api/vaults/${vaultId}/entries/${foreign.entryId}`)).body.code).toBe('ENTRY_NOT_FOUND')
      expect((await admin.post(`/api/vaults/${vaultId}/entries/${foreign.entryId}/reveal`)).body.code).toBe('ENTRY_NOT_FOUND')
      expect((await admin.get(`/api/vaults/${vaultId}/categories/${foreign.categoryId}`)).status).toBe(404)
      expect((await admin.post(`/api/vaults/${vaultId}/2fa/${foreign.tokenId}/reveal`)).status).toBe(404)
      expect((await admin.post(`/api/vaults/${vaultId}/envs/${foreign.projectId}/files/${foreign.fileId}/reveal`)).status).toBe(404)
      expect((await admin.post(`/api/vaults/${vaultId}/trash/${foreign.trashId}/restore`)).status).toBe(404)
    }
    expect((await admin.get(`/api/entries/${here.entryId}`)).body.code).toBe('ENTRY_NOT_FOUND')
    const names = (await admin.get('/api/entries')).body.map((e: any) => e.id)
    expect(names).not.toContain(here.entryId)
    expect(names).toContain(personal.entryId)
    const exported = await admin.get(`/api/vaults/${vaultId}/export`)
    expect(exported.text).toContain('iso-here-entry-2')
    expect(exported.text).not.toContain('iso-there')
    expect(exported.text).not.toContain('iso-personal')
  })

  test("a shared vault's values are sealed under its own data key: its file holds no plaintext", async () => {
    const { admin, vaultId } = await team(server)
    const canary = `canary-${crypto.randomUUID()}`
    await seed(admin, `/api/vaults/${vaultId}`, canary)
    await seed(admin, '', `personal-${canary}`)
    // As stored: the files, or the rows in PostgreSQL.
    const { text } = await durableDocument(server, vaultId)
    expect(text).toContain('encryptedValue')
    expect(text).not.toContain(canary)
    expect((await durableDocument(server, ACCOUNTS)).text).not.toContain(canary)
    const shared = await server.deps.vaults.open(vaultId)
    const own = await server.deps.vaults.open(admin.user.id)
    expect(shared.data.dataKey).not.toBe(own.data.dataKey)
    // Bound to the vault's id: the same sealed value does not open as the admin's own.
    const sealed = shared.data.entries[0].encryptedValue
    expect(shared.cipher.open('entry', shared.data.entries[0].id, sealed)).toContain(canary)
    expect(own.cipher.open('entry', shared.data.entries[0].id, sealed)).toBeNull()
  })

  test('keys: bound to a vault only by a member; they work there only; personal keys stay personal; audit names the member', async () => {
    const { admin, viewer, stranger, vaultId } = await team(server)
    await seed(admin, `/api/vaults/${vaultId}`, 'keys')
    await stranger.reauth()
    const refused = await stranger.post('/api/access-keys', { name: 'x', scopes: ['entries:read'], vaultId })
    expect([refused.status, refused.body.code]).toEqual([404, 'NOT_FOUND'])
    const bound = await viewer.keyClient(['entries:read', 'entries:reveal'], { vaultId })
    const listed = await bound.get(`/api/vaults/${vaultId}/entries`)
    expect(listed.status).toBe(200)
    const onPersonal = await bound.get('/api/entries')
    expect([onPersonal.status, onPersonal.body.code]).toEqual([403, 'KEY_BOUND_TO_VAULT'])
    expect((await bound.get(`/api/vaults/${vaultId}/categories`)).body.code).toBe('AUTH_SCOPE_REQUIRED')
    const personalKey = await viewer.keyClient(['entries:read'])
    expect((await personalKey.get(`/api/vaults/${vaultId}/entries`)).body.code).toBe('NOT_FOUND')
    expect((await personalKey.get('/api/entries')).status).toBe(200)
    expect((await personalKey.get('/api/vaults')).body).toEqual([])
    expect((await bound.get('/api/vaults')).body.map((v: any) => v.id)).toEqual([vaultId])
    expect((await viewer.get('/api/access-keys')).body.map((k: any) => k.vaultId ?? 'personal').sort()).toEqual(['personal', vaultId].sort())

    const reveal = await bound.post(`/api/vaults/${vaultId}/entries/${listed.body[0].id}/reveal`)
    expect(reveal.status).toBe(200)
    // The viewer sees only their own events; the admin the whole vault's, each naming the member.
    const own = (await viewer.get(`/api/vaults/${vaultId}/audit`)).body.items
    expect(own.length).toBeGreaterThan(0)
    for (const event of own) expect(event.actor.userId).toBe(viewer.user.id)
    expect(own.find((e: any) => e.action === 'entry.reveal').actor).toEqual(
      expect.objectContaining({ type: 'access-key', userId: viewer.user.id, email: viewer.email }),
    )
    const all = (await admin.get(`/api/vaults/${vaultId}/audit`)).body.items
    expect(new Set(all.map((e: any) => e.actor.userId))).toEqual(new Set([admin.user.id, viewer.user.id]))
    expect((await viewer.get(`/api/vaults/${vaultId}/audit/export`)).body.code).toBe('ROLE_REQUIRED')
    // Removal revokes the member's keys bound to the vault at once.
    expect((await admin.delete(`/api/vaults/${vaultId}/members/${viewer.user.id}`)).status).toBe(204)
    expect((await bound.get(`/api/vaults/${vaultId}/entries`)).status).toBe(401)
    expect((await personalKey.get('/api/entries')).status).toBe(200)
  })

  test('deleting a vault removes its document, its log and the keys bound to it', async () => {
    const { admin, editor, vaultId } = await team(server)
    await seed(admin, `/api/vaults/${vaultId}`, 'doomed-vault')
    const key = await editor.keyClient(['entries:read'], { vaultId })
    expect((await editor.delete(`/api/vaults/${vaultId}`)).body.code).toBe('ROLE_REQUIRED')
    expect((await admin.delete(`/api/vaults/${vaultId}`)).status).toBe(204)
    expect((await admin.get(`/api/vaults/${vaultId}`)).status).toBe(404)
    expect((await admin.get(`/api/vaults/${vaultId}/entries`)).body.code).toBe('NOT_FOUND')
    expect((await key.get(`/api/vaults/${vaultId}/entries`)).status).toBe(401)
    expect(existsSync(join(server.dataDir, 'vaults', `${vaultId}.json`))).toBe(false)
    expect(await storedAuditLogExists(server, vaultId)).toBe(false)
    expect((await admin.get('/api/audit')).body.items.map((e: any) => e.action)).toContain('vault.delete')
  })
})

describe('shared vaults across a restart', () => {
  testOnFileStore('it rewrites accounts.json as a release before shared vaults wrote it')(
    'a restart keeps vaults, members and their values; a data folder from before loads with none',
    async () => {
      const dataDir = tempDir()
      let first = await startTestServer({ dataDir })
      const admin = (await signUp(first.url)) as Member
      const viewer = (await signUp(first.url)) as Member
      // Written before shared vaults existed: no sharedVaults list at all.
      await first.stop()
      const path = join(dataDir, 'accounts.json')
      const stored = JSON.parse(readFileSync(path, 'utf8'))
      delete stored.sharedVaults
      writeFileSync(path, JSON.stringify(stored))
      first = await startTestServer({ dataDir })
      const at = (url: string, client: Client) => new Client(url, client.credentials)
      const base = (client: Client) => at(first.url, client)
      expect((await base(admin).get('/api/vaults')).body).toEqual([])
      const vaultId = await createVault(base(admin))
      await addMember(first, vaultId, viewer, 'viewer', admin)
      const ids = await seed(base(admin), `/api/vaults/${vaultId}`, 'restart-canary')
      await first.stop()

      const second = await startTestServer({ dataDir })
      try {
        const again = (client: Client) => at(second.url, client)
        expect((await again(viewer).get('/api/vaults')).body.map((v: any) => [v.id, v.role])).toEqual([[vaultId, 'viewer']])
        expect((await again(admin).get(`/api/vaults/${vaultId}/members`)).body.length).toBe(2)
        const revealed = await again(viewer).post(`/api/vaults/${vaultId}/entries/${ids.entryId}/reveal`)
        expect(revealed.body.value).toBe('restart-canary-entry-2')
        expect((await again(viewer).post(`/api/vaults/${vaultId}/entries`, {})).body.code).toBe('ROLE_REQUIRED')
      } finally {
        await second.stop()
      }
    },
  )
})

describe('account deletion and shared vaults', () => {
  test("the last admin cannot delete their account (409 LAST_ADMIN); a member's deletion leaves the vault", async () => {
    const server = await startTestServer()
    try {
      const { admin, editor, vaultId } = await team(server)
      const refused = await admin.request('DELETE', '/api/account', { password: 'correct horse battery' })
      expect([refused.status, refused.body.code]).toEqual([409, 'LAST_ADMIN'])
      expect((await admin.get(`/api/vaults/${vaultId}`)).status).toBe(200)
      expect((await editor.request('DELETE', '/api/account', { password: 'correct horse battery' })).status).toBe(204)
      const members = (await admin.get(`/api/vaults/${vaultId}/members`)).body.map((m: { userId: string }) => m.userId)
      expect(members).not.toContain(editor.user.id)
      expect(members).toHaveLength(2)
    } finally {
      await server.stop()
    }
  })
})
