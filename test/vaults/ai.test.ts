// The AI routes on a shared vault (/api/vaults/{vaultId}/ai/...): import with `apply` files the
// keys into that vault (an editor's write), a preview is a viewer's read, and extract answers only
// that vault's values; the events go to the vault's log naming the member.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { parse as dotenvParse } from 'dotenv'
import { storedAuditEvents } from '../support/audit-file'
import { startTestServer, type TestServer } from '../support/server'
import { team } from './support'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(async () => {
  await server.stop()
})

const eventsOf = (ownerId: string) => storedAuditEvents(server, ownerId)

test('import with apply as an editor files the keys into the shared vault, not the personal one', async () => {
  const { editor, viewer, vaultId } = await team(server)
  const base = `/api/vaults/${vaultId}`
  const applied = await editor.post(`${base}/ai/import`, { text: 'OPENAI_API_KEY=sk-shared-ai-1\nRESEND_API_KEY=re_shared_2\n', apply: true, name: 'blog' })
  expect(applied.status).toBe(200)
  expect(applied.body.data.created.entries).toHaveLength(2)
  const shared = (await editor.get(`${base}/entries`)).body as any[]
  expect(shared.map((e) => e.id).sort()).toEqual([...applied.body.data.created.entries].sort())
  // The viewer sees them too: they are the vault's.
  expect(((await viewer.get(`${base}/entries`)).body as any[]).length).toBe(2)
  expect((await editor.get('/api/entries')).body).toEqual([])
  expect((await editor.get('/api/categories')).body).toEqual([])
  // The event is in the vault's log, naming the editor; none in the editor's own.
  const events = (await eventsOf(vaultId)).filter((e) => e.action === 'ai.import')
  expect(events).toHaveLength(1)
  expect([events[0].actor.userId, events[0].actor.email]).toEqual([editor.user.id, editor.email])
  expect((await eventsOf(editor.user.id)).some((e) => e.action === 'ai.import')).toBe(false)
})

test('a viewer may preview an import but not apply it (403 ROLE_REQUIRED naming editor); nothing is written', async () => {
  const { viewer, vaultId } = await team(server)
  const base = `/api/vaults/${vaultId}`
  const refused = await viewer.post(`${base}/ai/import`, { text: 'OPENAI_API_KEY=sk-viewer-1\n', apply: true, name: 'blog' })
  expect(refused.status).toBe(403)
  expect(refused.body.code).toBe('ROLE_REQUIRED')
  expect(refused.body.error).toContain('editor')
  expect(refused.text).not.toContain('sk-viewer-1')
  expect((await viewer.get(`${base}/entries`)).body).toEqual([])
  expect((await viewer.get(`${base}/categories`)).body).toEqual([])
  const preview = await viewer.post(`${base}/ai/import`, { text: 'OPENAI_API_KEY=sk-viewer-1\n' })
  expect(preview.status).toBe(200)
  expect(preview.body.data.keys.map((k: any) => k.name)).toEqual(['OPENAI_API_KEY'])
  expect(preview.body.data.created).toBeUndefined()
})

test("extract in a shared vault answers only that vault's values, to a viewer too", async () => {
  const { editor, viewer, stranger, vaultId } = await team(server)
  const base = `/api/vaults/${vaultId}`
  expect((await editor.post(`${base}/ai/import`, { text: 'OPENAI_API_KEY=sk-vault-value\n', apply: true, name: 'blog' })).status).toBe(200)
  // Personal vaults of two members hold the same key names with other values.
  expect((await editor.post('/api/ai/import', { text: 'OPENAI_API_KEY=sk-editor-personal\n', apply: true, name: 'blog' })).status).toBe(200)
  expect((await viewer.post('/api/ai/import', { text: 'OPENAI_API_KEY=sk-viewer-personal\n', apply: true, name: 'blog' })).status).toBe(200)

  const answer = await viewer.post(`${base}/ai/extract`, { prompt: 'the blog with openai' })
  expect(answer.status).toBe(200)
  expect(answer.headers.get('cache-control')).toBe('no-store')
  expect(dotenvParse(answer.text)).toEqual({ OPENAI_API_KEY: 'sk-vault-value' })
  expect(answer.text).not.toContain('personal')
  const personal = await viewer.post('/api/ai/extract', { prompt: 'the blog with openai' })
  expect(dotenvParse(personal.text)).toEqual({ OPENAI_API_KEY: 'sk-viewer-personal' })

  const event = (await eventsOf(vaultId)).find((e) => e.action === 'ai.extract')
  expect(event.actor.userId).toBe(viewer.user.id)
  // A non-member: 404 as for an unknown vault.
  const foreign = await stranger.post(`${base}/ai/extract`, { prompt: 'openai' })
  expect([foreign.status, foreign.body.code]).toEqual([404, 'NOT_FOUND'])
})

test('a member removed after an AI extract leaves the extracted entries rotation_due', async () => {
  const { admin, editor, viewer, vaultId } = await team(server)
  const base = `/api/vaults/${vaultId}`
  const applied = await editor.post(`${base}/ai/import`, { text: 'OPENAI_API_KEY=sk-rotate-me\nRESEND_API_KEY=re_untouched\n', apply: true, name: 'blog' })
  expect(applied.status).toBe(200)
  expect((await viewer.post(`${base}/ai/extract`, { prompt: 'openai' })).status).toBe(200)
  const extracted = (await eventsOf(vaultId)).find((e) => e.action === 'ai.extract').records.map((r: any) => r.id)
  expect(extracted).toHaveLength(1)
  expect((await admin.delete(`${base}/members/${viewer.user.id}`)).status).toBe(204)
  const items = (await admin.get(`${base}/rotation`)).body.items as any[]
  expect(items.map((item) => [item.kind, item.id, item.status])).toEqual([['entry', extracted[0], 'rotation_due']])
})
