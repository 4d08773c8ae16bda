// Every operation the API document lists under /api/vaults/{vaultId}, tried as each kind of
// caller: exactly what the role allows passes the vault check; a role too low is 403
// ROLE_REQUIRED naming the role; a non-member, or a key bound to another vault, 404 NOT_FOUND.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Client } from '../support/client'
import { startTestServer, type TestServer } from '../support/server'
import { ALL_SCOPES, createVault, seed, team, type Member } from './support'

type Role = 'viewer' | 'editor' | 'admin'
const RANK: Record<Role, number> = { viewer: 1, editor: 2, admin: 3 }

let server: TestServer
let callers: { name: string; client: Client; role: Role | null; key: 'own-vault' | 'other-vault' | null }[]
let vaultId: string
let ids: Awaited<ReturnType<typeof seed>>
let memberIds: { viewer: string }
let operations: {
  method: string
  path: string
  operationId: string
  role: Role
  sessionOnly: boolean
  hasBody: boolean
  scope: string | string[] | undefined
}[]

/** The rule of issue 33, stated apart from the server's: reads viewer, writes editor, the vault itself and the whole log admin. */
function expectedRole(op: { method: string; path: string; scope: string | string[] | undefined }): Role {
  if (op.path === '/api/vaults/{vaultId}/audit/export') return 'admin'
  if (op.path === '/api/vaults/{vaultId}') return op.method === 'GET' ? 'viewer' : 'admin'
  if (op.path === '/api/vaults/{vaultId}/members') return 'viewer'
  if (op.path.startsWith('/api/vaults/{vaultId}/invites')) return 'admin'
  // Moving or copying a project in or out of the vault: admins.
  if (op.path === '/api/vaults/{vaultId}/move') return 'admin'
  if (op.path.startsWith('/api/vaults/{vaultId}/rotation')) return 'editor'
  const scopes = op.scope === undefined ? [] : Array.isArray(op.scope) ? op.scope : [op.scope]
  if (scopes.length > 0) return scopes.some((scope) => scope.endsWith(':write')) ? 'editor' : 'viewer'
  return op.method === 'GET' || op.path.endsWith('/export') ? 'viewer' : 'editor'
}

beforeAll(async () => {
  server = await startTestServer()
  const crew = await team(server)
  vaultId = crew.vaultId
  ids = await seed(crew.admin, `/api/vaults/${vaultId}`, 'matrix-canary')
  // The admin's key bound to a second vault of theirs, holding every scope.
  const other = await createVault(crew.admin, 'other')
  const otherKey = await crew.admin.keyClient(ALL_SCOPES, { vaultId: other })
  const viewerKey = await crew.viewer.keyClient(ALL_SCOPES, { vaultId })
  memberIds = { viewer: crew.viewer.user.id }
  callers = [
    { name: 'non-member', client: crew.stranger, role: null, key: null },
    { name: 'key bound to another vault', client: otherKey, role: null, key: 'other-vault' },
    { name: 'viewer', client: crew.viewer, role: 'viewer', key: null },
    { name: "viewer's key bound to the vault", client: viewerKey, role: 'viewer', key: 'own-vault' },
    { name: 'editor', client: crew.editor, role: 'editor', key: null },
    { name: 'admin', client: crew.admin as Member, role: 'admin', key: null },
  ]
  const doc = (await crew.admin.get('/api/openapi')).body
  operations = []
  for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
    if (!path.startsWith('/api/vaults/{vaultId}')) continue
    for (const [method, op] of Object.entries<any>(ops)) {
      // Removing members and deleting the vault have their own tests (they would end this one).
      if (method === 'delete' && (path === '/api/vaults/{vaultId}' || path.includes('/members/'))) continue
      if (method === 'patch' && path.includes('/members/')) continue
      const sessionOnly = !op.security.some((scheme: Record<string, unknown>) => 'bearerAuth' in scheme)
      operations.push({
        method: method.toUpperCase(),
        path,
        operationId: op.operationId,
        role: op['x-required-role'],
        sessionOnly,
        hasBody: !!op.requestBody,
        scope: op['x-required-scope'],
      })
    }
  }
})

afterAll(async () => {
  await server.stop()
})

function concretePath(path: string): string {
  return path
    .replace('{vaultId}', vaultId)
    .replace('{fileId}', ids.fileId)
    .replace('{version}', '1')
    .replace('{userId}', memberIds.viewer)
    .replace('/rotation/{kind}/{id}', `/rotation/entry/${ids.entryId}`)
    .replace(/\/(entries|categories|2fa|envs|trash)\/\{id\}/, (_, kind: string) => {
      const id = { entries: ids.entryId, categories: ids.categoryId, '2fa': ids.tokenId, envs: ids.projectId, trash: ids.trashId }[kind]!
      return `/${kind}/${id}`
    })
}

describe('the role matrix of shared vaults', () => {
  test('the document lists the shared operations, each with the role it needs', () => {
    expect(operations.length).toBeGreaterThan(40)
    for (const op of operations) expect(`${op.operationId} ${op.role}`).toBe(`${op.operationId} ${expectedRole(op)}`)
    const byId = new Map(operations.map((op) => [op.operationId, op.role]))
    expect(byId.get('listVaultEntries')).toBe('viewer')
    expect(byId.get('revealVaultEntry')).toBe('viewer')
    expect(byId.get('createVaultEntry')).toBe('editor')
    expect(byId.get('exportVaultAuditLog')).toBe('admin')
    expect(byId.get('updateVault')).toBe('admin')
    expect(byId.get('moveVaultProject')).toBe('admin')
    // AI: extract answers values (a read, like export); import previews (viewer), its `apply: true`
    // writes and needs the editor role, checked in the handler (the body says which): see below.
    expect(byId.get('extractVaultEnv')).toBe('viewer')
    expect(byId.get('importVaultConfig')).toBe('viewer')
  })

  test('AI import with apply: true needs the editor role, beyond the viewer role the document states', async () => {
    const paste = { text: 'MATRIX_APPLY_KEY=matrix-apply-value\n', apply: true, name: 'matrix' }
    for (const caller of callers) {
      const answer = await caller.client.request('POST', `/api/vaults/${vaultId}/ai/import`, paste)
      const seen = `${caller.name}: ${answer.status} ${answer.body?.code ?? ''}`
      if (caller.role === null) expect(seen).toBe(`${caller.name}: 404 NOT_FOUND`)
      else if (RANK[caller.role] < RANK.editor) {
        expect(seen).toBe(`${caller.name}: 403 ROLE_REQUIRED`)
        expect(answer.body.error).toContain('editor')
      } else expect(seen).toBe(`${caller.name}: 200 `)
    }
  })

  test('each operation as non-member, key of another vault, viewer, viewer key, editor, admin', async () => {
    const problems: string[] = []
    for (const op of operations) {
      for (const caller of callers) {
        const answer = await caller.client.request(op.method, concretePath(op.path), op.hasBody ? {} : undefined)
        const code = answer.body?.code
        const seen = `${op.method} ${op.path} as ${caller.name}: ${answer.status} ${code ?? ''}`
        if (caller.key && op.sessionOnly) {
          // Scopes and credentials still apply first, as on every route.
          if (answer.status !== 403 || code !== 'SESSION_REQUIRED') problems.push(`${seen} (expected 403 SESSION_REQUIRED)`)
        } else if (caller.role === null) {
          if (answer.status !== 404 || code !== 'NOT_FOUND') problems.push(`${seen} (expected 404 NOT_FOUND)`)
        } else if (RANK[caller.role] < RANK[op.role]) {
          if (answer.status !== 403 || code !== 'ROLE_REQUIRED' || !answer.body.error.includes(op.role))
            problems.push(`${seen} (expected 403 ROLE_REQUIRED, ${op.role})`)
        } else if ((answer.status === 404 && code === 'NOT_FOUND') || code === 'ROLE_REQUIRED' || answer.status >= 500) {
          problems.push(`${seen} (expected the role to be enough)`)
        }
      }
    }
    expect(problems).toEqual([])
  })
})
