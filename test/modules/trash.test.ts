// Issue 20, trash: deletes keep their 204 and move the item (a category with its entries, a project
// with its files) to the trash; it disappears from lists, details, stats and export at once, comes
// back on restore (409 on a name clash), is purged on demand (session only) or once it expires.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { signUp, type Client } from '../support/client'
import { durableDocument, removeDir, startTestServer, storedVault, type TestServer } from '../support/server'

const DAY = 86_400_000
let clock = Date.parse('2026-03-01T12:00:00.000Z')
let server: TestServer
let alice: Client & { user: any }
let bob: Client & { user: any }

beforeAll(async () => {
  server = await startTestServer({ now: () => clock })
  alice = await signUp(server.url)
  bob = await signUp(server.url)
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

const unique = (tag: string) => `${tag}-${crypto.randomUUID().slice(0, 8)}`

async function category(client: Client, name = unique('cat')) {
  const answer = await client.post('/api/categories', { name, keyType: 'simple', envVarName: `V_${crypto.randomUUID().slice(0, 6).toUpperCase()}` })
  expect(answer.status).toBe(201)
  return answer.body
}
async function entry(client: Client, categoryId: string, value: string, name = unique('e')) {
  const answer = await client.post('/api/entries', { categoryId, name, value })
  expect(answer.status).toBe(201)
  return answer.body
}
const trashItem = async (client: Client, recordId: string) => ((await client.get('/api/trash')).body as any[]).find((i) => i.recordId === recordId)

describe('trash', () => {
  test('a deleted entry leaves every list, detail, stats and export at once, and comes back whole', async () => {
    const fresh = await signUp(server.url)
    const cat = await category(fresh)
    const kept = await entry(fresh, cat.id, 'kept-value', 'kept')
    const gone = await entry(fresh, cat.id, 'gone-value-1', 'gone')
    await fresh.put(`/api/entries/${gone.id}`, { value: 'gone-value-2' })
    expect((await fresh.delete(`/api/entries/${gone.id}`)).status).toBe(204)

    expect((await fresh.get('/api/entries')).body.map((e: any) => e.id)).toEqual([kept.id])
    expect((await fresh.get(`/api/entries/${gone.id}`)).status).toBe(404)
    expect((await fresh.post(`/api/entries/${gone.id}/reveal`)).status).toBe(404)
    expect((await fresh.get(`/api/entries/${gone.id}/versions`)).status).toBe(404)
    expect((await fresh.get('/api/stats')).body.totalEntries).toBe(1)
    expect((await fresh.get('/api/export?format=dotenv')).text).not.toContain('gone-value')
    expect((await fresh.delete(`/api/entries/${gone.id}`)).status).toBe(404)

    const list = await fresh.get('/api/trash')
    expect(list.status).toBe(200)
    expect(list.text).not.toContain('gone-value')
    expect(list.body).toEqual([
      {
        id: expect.any(String),
        kind: 'entry',
        name: 'gone',
        label: expect.stringMatching(/ of gone$/),
        recordId: gone.id,
        deletedAt: new Date(clock).toISOString(),
        deletedBy: 'session',
        expiresAt: new Date(clock + 30 * DAY).toISOString(),
        contains: { categories: 0, entries: 1, twoFactor: 0, envProjects: 0, envFiles: 0 },
      },
    ])
    const restored = await fresh.post(`/api/trash/${list.body[0].id}/restore`)
    expect(restored.status).toBe(200)
    expect(restored.body.restored.entries).toEqual([gone.id])
    expect((await fresh.post(`/api/entries/${gone.id}/reveal`)).body.value).toBe('gone-value-2')
    expect((await fresh.post(`/api/entries/${gone.id}/versions/1/reveal`)).body.value).toBe('gone-value-1')
    expect((await fresh.get('/api/trash')).body).toEqual([])
    expect((await fresh.get('/api/stats')).body.totalEntries).toBe(2)
  })

  test('a category goes with its entries and comes back with them', async () => {
    const cat = await category(alice)
    const a = await entry(alice, cat.id, 'a-value')
    const b = await entry(alice, cat.id, 'b-value')
    expect((await alice.delete(`/api/categories/${cat.id}`)).status).toBe(204)
    expect((await alice.get(`/api/categories/${cat.id}`)).status).toBe(404)
    const ids = (await alice.get('/api/entries')).body.map((e: any) => e.id)
    expect(ids).not.toContain(a.id)
    expect(ids).not.toContain(b.id)
    const item = await trashItem(alice, cat.id)
    expect(item).toMatchObject({ kind: 'category', name: cat.name, contains: { categories: 1, entries: 2 } })
    const restored = await alice.post(`/api/trash/${item.id}/restore`)
    expect(restored.status).toBe(200)
    expect(restored.body.restored.entries.sort()).toEqual([a.id, b.id].sort())
    expect((await alice.post(`/api/entries/${b.id}/reveal`)).body.value).toBe('b-value')
  })

  test('a name clash on restore is a clear 409 and changes nothing', async () => {
    const cat = await category(alice)
    await alice.delete(`/api/categories/${cat.id}`)
    const twin = await category(alice, cat.name)
    const item = await trashItem(alice, cat.id)
    const clash = await alice.post(`/api/trash/${item.id}/restore`)
    expect(clash.status).toBe(409)
    expect(clash.body.code).toBe('CATEGORY_EXISTS')
    expect(await trashItem(alice, cat.id)).toBeDefined()

    const e = await entry(alice, twin.id, 'x', 'same-name')
    await alice.delete(`/api/entries/${e.id}`)
    await entry(alice, twin.id, 'y', 'same-name')
    const entryClash = await alice.post(`/api/trash/${(await trashItem(alice, e.id)).id}/restore`)
    expect(entryClash.status).toBe(409)
    expect(entryClash.body.code).toBe('ENTRY_EXISTS')

    const project = (await alice.post('/api/envs', { name: unique('proj') })).body.data
    await alice.delete(`/api/envs/${project.id}`)
    await alice.post('/api/envs', { name: project.name })
    const projectClash = await alice.post(`/api/trash/${(await trashItem(alice, project.id)).id}/restore`)
    expect(projectClash.status).toBe(409)
    expect(projectClash.body.code).toBe('ENV_PROJECT_EXISTS')

    // An entry whose category is gone waits for its category.
    const c2 = await category(alice)
    const orphan = await entry(alice, c2.id, 'o')
    await alice.delete(`/api/entries/${orphan.id}`)
    await alice.delete(`/api/categories/${c2.id}`)
    const parent = await alice.post(`/api/trash/${(await trashItem(alice, orphan.id)).id}/restore`)
    expect(parent.status).toBe(409)
    expect(parent.body.code).toBe('TRASH_PARENT_MISSING')
  })

  test('2FA tokens, env projects (with files) and env files go to the trash and come back', async () => {
    const token = (await alice.post('/api/2fa', { service: 'GitHub', accountName: 'me', secret: 'JBSWY3DPEHPK3PXP' })).body
    expect((await alice.delete(`/api/2fa/${token.id}`)).status).toBe(204)
    expect((await alice.get('/api/2fa')).body.map((t: any) => t.id)).not.toContain(token.id)
    expect((await alice.get('/api/stats')).body.total2fa).toBe(0)
    expect(await trashItem(alice, token.id)).toMatchObject({ kind: 'twoFactor', name: 'GitHub (me)' })
    expect((await alice.post(`/api/trash/${(await trashItem(alice, token.id)).id}/restore`)).status).toBe(200)
    expect((await alice.post(`/api/2fa/${token.id}/reveal`)).status).toBe(200)

    const project = (await alice.post('/api/envs', { name: unique('proj') })).body.data
    const file = (await alice.post(`/api/envs/${project.id}/files`, { fileType: 'env', content: 'A=1\n' })).body.data
    expect((await alice.delete(`/api/envs/${project.id}/files/${file.id}`)).status).toBe(204)
    expect((await alice.get(`/api/envs/${project.id}`)).body.data.files).toEqual([])
    expect(await trashItem(alice, file.id)).toMatchObject({ kind: 'envFile', name: `${project.name} / .env` })
    await alice.post(`/api/trash/${(await trashItem(alice, file.id)).id}/restore`)
    expect((await alice.post(`/api/envs/${project.id}/files/${file.id}/reveal`)).body.data.content).toBe('A=1\n')

    expect((await alice.delete(`/api/envs/${project.id}`)).status).toBe(204)
    expect((await alice.get('/api/envs')).body.data.map((p: any) => p.id)).not.toContain(project.id)
    expect(await trashItem(alice, project.id)).toMatchObject({ kind: 'envProject', contains: { envProjects: 1, envFiles: 1 } })
    await alice.post(`/api/trash/${(await trashItem(alice, project.id)).id}/restore`)
    expect((await alice.get(`/api/envs/${project.id}`)).body.data.files.map((f: any) => f.id)).toEqual([file.id])
  })

  test("only the owner reaches a trash item: another user's id answers as a missing one", async () => {
    const cat = await category(alice)
    await alice.delete(`/api/categories/${cat.id}`)
    const item = await trashItem(alice, cat.id)
    expect((await bob.get('/api/trash')).body.map((i: any) => i.id)).not.toContain(item.id)
    const missing = await bob.post(`/api/trash/${crypto.randomUUID()}/restore`)
    for (const answer of [await bob.post(`/api/trash/${item.id}/restore`), await bob.delete(`/api/trash/${item.id}`)]) {
      expect(answer.status).toBe(404)
      expect(answer.body).toEqual(missing.body)
    }
    expect(missing.body.code).toBe('TRASH_ITEM_NOT_FOUND')
    expect(await trashItem(alice, cat.id)).toBeDefined()
  })

  test('access keys: a kind is seen with its read scope and restored with its write scope; purging is session only', async () => {
    const cat = await category(alice)
    const e = await entry(alice, cat.id, 'v')
    await alice.delete(`/api/entries/${e.id}`)
    const token = (await alice.post('/api/2fa', { service: 'S', accountName: 'a', secret: 'JBSWY3DPEHPK3PXP' })).body
    await alice.delete(`/api/2fa/${token.id}`)
    const reader = await alice.keyClient(['entries:read'])
    const seen = (await reader.get('/api/trash')).body
    expect(seen.every((i: any) => i.kind === 'entry')).toBe(true)
    const item = seen.find((i: any) => i.recordId === e.id)
    expect((await reader.post(`/api/trash/${item.id}/restore`)).body.code).toBe('AUTH_SCOPE_REQUIRED')
    const writer = await alice.keyClient(['entries:read', 'entries:write'])
    for (const answer of [await writer.delete(`/api/trash/${item.id}`), await writer.delete('/api/trash')]) {
      expect(answer.status).toBe(403)
      expect(answer.body.code).toBe('SESSION_REQUIRED')
    }
    expect((await writer.post(`/api/trash/${item.id}/restore`)).status).toBe(200)
  })

  test('purge one item or all, with their versions, for good', async () => {
    const fresh = await signUp(server.url)
    const cat = await category(fresh)
    const e = await entry(fresh, cat.id, 'purge-canary-1')
    await fresh.put(`/api/entries/${e.id}`, { value: 'purge-canary-2' })
    await fresh.delete(`/api/entries/${e.id}`)
    const held = await storedVault(server, fresh.user.id)
    const vault = () => held.data
    expect(vault().versions.some((v) => v.recordId === e.id)).toBe(true)
    const item = await trashItem(fresh, e.id)
    expect((await fresh.delete(`/api/trash/${item.id}`)).status).toBe(204)
    expect((await fresh.get('/api/trash')).body).toEqual([])
    expect(vault().versions.some((v) => v.recordId === e.id)).toBe(false)
    expect((await fresh.post(`/api/trash/${item.id}/restore`)).status).toBe(404)

    await fresh.delete(`/api/categories/${cat.id}`)
    const t = (await fresh.post('/api/2fa', { service: 'S', accountName: 'a', secret: 'JBSWY3DPEHPK3PXP' })).body
    await fresh.delete(`/api/2fa/${t.id}`)
    expect((await fresh.get('/api/trash')).body).toHaveLength(2)
    expect((await fresh.delete('/api/trash')).status).toBe(204)
    expect((await fresh.get('/api/trash')).body).toEqual([])
    expect(vault().trash).toEqual([])
    expect(vault().categories).toEqual([])
  })

  test('expired items are purged automatically and durably (injectable clock)', async () => {
    const fresh = await signUp(server.url)
    const cat = await category(fresh)
    const e = await entry(fresh, cat.id, 'expiring-canary')
    await fresh.delete(`/api/entries/${e.id}`)
    const item = await trashItem(fresh, e.id)
    // Sessions expire with the clock too; keys do not.
    const key = await fresh.keyClient(['entries:read'])
    clock += 29 * DAY
    expect(await trashItem(key, e.id)).toBeDefined()
    clock += 2 * DAY
    // The background pass: purged from the stored vault (its file, or the database), not only hidden.
    const { TrashService } = await import('../../src/modules/lifecycle/service')
    const purged = await new TrashService(server.deps.vaults, () => clock).sweepAll(server.deps.store)
    expect(purged).toBeGreaterThanOrEqual(1)
    const stored = (await durableDocument(server, fresh.user.id)).data
    expect(stored.trash.map((t: any) => t.id)).not.toContain(item.id)
    expect(JSON.stringify(stored)).not.toContain(e.id)
    expect((await key.post(`/api/trash/${item.id}/restore`)).status).toBe(404)
  })

  test('an expired item is gone from the list and purged on the next trash request, before any sweep', async () => {
    const fresh = await signUp(server.url)
    const cat = await category(fresh)
    await fresh.delete(`/api/categories/${cat.id}`)
    const key = await fresh.keyClient(['categories:read'])
    clock += 31 * DAY
    expect((await key.get('/api/trash')).body).toEqual([])
    expect((await storedVault(server, fresh.user.id)).data.trash).toEqual([])
  })

  test('the background pass runs on its own once the server listens, and purges expired items', async () => {
    const fresh = await signUp(server.url)
    const cat = await category(fresh)
    await fresh.delete(`/api/categories/${cat.id}`)
    clock += 31 * DAY
    const { lifecycleJobs } = await import('../../src/modules/lifecycle/jobs')
    const { Elysia } = await import('elysia')
    const jobs = new Elysia().use(lifecycleJobs(server.deps, { firstMs: 1, everyMs: 3_600_000 })).listen({ port: 0, hostname: '127.0.0.1' })
    try {
      const vault = await storedVault(server, fresh.user.id)
      for (let i = 0; i < 200 && vault.data.trash.length > 0; i++) await Bun.sleep(10)
      expect(vault.data.trash).toEqual([])
    } finally {
      await jobs.stop(true)
    }
  })
})
