// A shared vault's operations leave the events their personal twins leave, in the vault's own
// log (not the member's), each naming the member (actor.userId, actor.email).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { storedAuditEvents } from '../support/audit-file'
import { startTestServer, type TestServer } from '../support/server'
import { seed, team } from './support'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(async () => {
  await server.stop()
})

const eventsOf = (ownerId: string) => storedAuditEvents(server, ownerId)

test("the same operations in a shared vault leave the personal twin's events in the vault's log, naming the member", async () => {
  const { editor, vaultId } = await team(server)
  const script = async (base: string) => {
    const p = (path: string) => (base ? `${base}${path.slice('/api'.length)}` : path)
    const ids = await seed(editor, base, `twin-${base ? 'shared' : 'personal'}`)
    const ok = (status: number) => expect(status).toBeLessThan(300)
    ok((await editor.post(p(`/api/entries/${ids.entryId}/reveal`))).status)
    ok((await editor.post(p(`/api/entries/${ids.entryId}/versions/1/reveal`))).status)
    ok((await editor.post(p(`/api/envs/${ids.projectId}/files/${ids.fileId}/reveal`))).status)
    ok((await editor.get(p('/api/export'))).status)
    ok((await editor.post(p(`/api/trash/${ids.trashId}/restore`))).status)
    ok((await editor.delete(p(`/api/envs/${ids.projectId}`))).status)
    ok((await editor.get(p('/api/stats'))).status)
  }
  const personalBefore = (await eventsOf(editor.user.id)).length
  await script('')
  const personal = (await eventsOf(editor.user.id)).slice(personalBefore)
  const sharedBefore = (await eventsOf(vaultId)).length
  const personalAfter = (await eventsOf(editor.user.id)).length
  await script(`/api/vaults/${vaultId}`)
  const shared = (await eventsOf(vaultId)).slice(sharedBefore)
  expect(shared.map((e) => e.action)).toEqual(personal.map((e) => e.action))
  expect(shared.length).toBeGreaterThan(8)
  for (const event of shared) expect([event.actor.userId, event.actor.email]).toEqual([editor.user.id, editor.email])
  for (const event of personal) expect(event.actor.userId).toBeUndefined()
  // Nothing of the vault's went to the member's own log.
  expect((await eventsOf(editor.user.id)).length).toBe(personalAfter)
})
