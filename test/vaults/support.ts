// Shared-vault fixtures: a vault with an admin, an editor, a viewer, and one of each resource.
// Members are added through the service (invites are built on top of it).
import { expect } from 'bun:test'
import { SCOPES } from '../../src/auth/scopes'
import type { VaultRole } from '../../src/store/records'
import { signUp, type Client } from '../support/client'
import type { TestServer } from '../support/server'

const idOf = (body: { id?: string; data?: { id: string } }) => (body.data?.id ?? body.id) as string

export const ALL_SCOPES = [...SCOPES]
export type Member = Client & { user: { id: string }; email: string }

export async function addMember(server: TestServer, vaultId: string, member: Member, role: VaultRole, by: Member): Promise<void> {
  await server.deps.sharedVaults.addMember(vaultId, member.user.id, role, by.user.id)
}

export async function createVault(admin: Client, name = 'team'): Promise<string> {
  const created = await admin.post('/api/vaults', { name })
  expect(created.status).toBe(201)
  return created.body.id
}

/** Records in a vault (base: `/api/vaults/<id>` or `` for the personal vault), with their ids. */
export async function seed(client: Client, base: string, canary: string) {
  const ok = (answer: { status: number; text: string }, status = 201) => {
    if (answer.status !== status) throw new Error(`seeding: ${answer.status} ${answer.text}`)
  }
  const p = (path: string) => (base ? `${base}${path.slice('/api'.length)}` : path)
  const category = await client.post(p('/api/categories'), {
    name: `cat-${canary.slice(-6)}`,
    keyType: 'simple',
    envVarName: 'API_KEY',
  })
  ok(category)
  const entry = await client.post(p('/api/entries'), { categoryId: category.body.id, name: 'main', value: `${canary}-entry-1` })
  ok(entry)
  ok(await client.put(p(`/api/entries/${entry.body.id}`), { value: `${canary}-entry-2` }), 200)
  const doomed = await client.post(p('/api/entries'), { categoryId: category.body.id, name: 'doomed', value: `${canary}-doomed` })
  ok(doomed)
  ok(await client.delete(p(`/api/entries/${doomed.body.id}`)), 204)
  const token = await client.post(p('/api/2fa'), { service: 'GitHub', accountName: 'me', secret: 'JBSWY3DPEHPK3PXPJBSWY3DP' })
  ok(token)
  const project = await client.post(p('/api/envs'), { name: `proj-${canary.slice(-6)}` })
  ok(project)
  const file = await client.post(p(`/api/envs/${idOf(project.body)}/files`), { fileType: 'env', content: `TOKEN=${canary}-env\n` })
  if (file.status !== 200 && file.status !== 201) throw new Error(`seeding: ${file.status} ${file.text}`)
  const trash = await client.get(p('/api/trash'))
  return {
    categoryId: category.body.id as string,
    entryId: entry.body.id as string,
    tokenId: token.body.id as string,
    projectId: idOf(project.body) as string,
    fileId: idOf(file.body) as string,
    trashId: trash.body[0].id as string,
  }
}

export async function team(server: TestServer) {
  const admin = (await signUp(server.url)) as Member
  const editor = (await signUp(server.url)) as Member
  const viewer = (await signUp(server.url)) as Member
  const stranger = (await signUp(server.url)) as Member
  const vaultId = await createVault(admin)
  await addMember(server, vaultId, editor, 'editor', admin)
  await addMember(server, vaultId, viewer, 'viewer', admin)
  return { admin, editor, viewer, stranger, vaultId }
}
