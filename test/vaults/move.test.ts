// Moving and copying a project between a personal vault and a shared one (issue 33): with its
// history, the trash left where it was, values sealed under the target's key, audited on both
// sides, admins only; and a move killed at each of its steps ends whole on exactly one side.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { openVault } from '../../src/app'
import { loadConfig } from '../../src/config'
import { storedAuditEvents } from '../support/audit-file'
import { signUp, type Client } from '../support/client'
import { removeDir, spawnServer, startTestServer, tempDir, TEST_MASTER_KEY, type TestServer } from '../support/server'
import { Moves } from '../../src/modules/vaults/move'
import type { AccountsDocument } from '../../src/store/records'
import type { StoredDocument } from '../../src/store/data-store'
import { createVault, team } from './support'
import { storeEnv } from '../support/postgres'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

const TOTP = 'JBSWY3DPEHPK3PXPJBSWY3DP'
const at = (base: string, path: string) => (base ? `${base}${path.slice('/api'.length)}` : path)

/** A project "blog" (two entries with a history, an env project with a file, a 2FA token) plus things that stay. */
async function seedProject(client: Client, base: string, canary: string) {
  const ok = <T extends { status: number; text: string }>(answer: T, ...status: number[]) => {
    if (!(status.length ? status : [201]).includes(answer.status)) throw new Error(`seeding: ${answer.status} ${answer.text}`)
    return answer
  }
  const api = (path: string) => at(base, path)
  const category = ok(await client.post(api('/api/categories'), { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })).body
  const main = ok(await client.post(api('/api/entries'), { categoryId: category.id, name: 'blog', value: `${canary}-v1` })).body
  ok(await client.put(api(`/api/entries/${main.id}`), { value: `${canary}-v2` }), 200)
  const prod = ok(await client.post(api('/api/entries'), { categoryId: category.id, name: 'blog', environment: 'production', value: `${canary}-prod` })).body
  const other = ok(await client.post(api('/api/entries'), { categoryId: category.id, name: 'shop', value: `${canary}-shop` })).body
  const doomed = ok(await client.post(api('/api/entries'), { categoryId: category.id, name: 'blog', environment: 'staging', value: `${canary}-doomed` })).body
  ok(await client.delete(api(`/api/entries/${doomed.id}`)), 204)
  const project = ok(await client.post(api('/api/envs'), { name: 'Blog' })).body
  const projectId = project.data?.id ?? project.id
  const file = ok(await client.post(api(`/api/envs/${projectId}/files`), { fileType: 'env', content: `A=${canary}-env1\n` }), 200, 201).body
  ok(await client.post(api(`/api/envs/${projectId}/files`), { fileType: 'env', content: `A=${canary}-env2\n` }), 200, 201)
  const token = ok(await client.post(api('/api/2fa'), { service: 'Blog host', accountName: 'me', secret: TOTP })).body
  return {
    categoryId: category.id,
    mainId: main.id,
    prodId: prod.id,
    otherId: other.id,
    doomedId: doomed.id,
    projectId,
    fileId: file.data?.id ?? file.id,
    tokenId: token.id,
  }
}

/** The project's records in one vault document, with their values opened under that vault's key. */
async function projectIn(ownerId: string, deps = server.deps) {
  const { data, cipher } = await deps.vaults.open(ownerId)
  const entries = data.entries.filter((e) => e.name === 'blog')
  const project = data.envProjects.find((p) => p.name === 'Blog')
  const files = data.envFiles.filter((f) => f.projectId === project?.id)
  const tokens = data.twoFactor.filter((t) => t.service === 'Blog host')
  const ids = new Set([...entries, ...files, ...tokens].map((r) => r.id))
  return {
    entries: entries.map((e) => cipher.open('entry', e.id, e.encryptedValue)).sort(),
    files: files.map((f) => cipher.open('envfile', f.id, f.encryptedContent)),
    tokens: tokens.map((t) => cipher.open('totp', t.id, t.encryptedSecret)),
    versions: data.versions
      .filter((v) => ids.has(v.recordId))
      .map((v) => cipher.openVersion(v.kind, v.recordId, v.version, v.encryptedValue))
      .sort(),
    categories: data.categories.filter((c) => c.name === 'Stripe').length,
    trash: data.trash.map((t) => t.name),
    others: data.entries.filter((e) => e.name === 'shop').length,
    data,
  }
}

const actions = async (dataDir: string, ownerId: string) =>
  (await storedAuditEvents({ ...server, dataDir }, ownerId)).filter((e) => e.action.startsWith('project.'))

describe('moving a project', () => {
  test('in: entries, env project, 2FA token with their history go to the shared vault, sealed under its key; the trash stays; audited on both sides', async () => {
    const admin = await signUp(server.url)
    const vaultId = await createVault(admin)
    const canary = `sk-move-in-${crypto.randomUUID()}`
    const ids = await seedProject(admin, '', canary)
    const before = await projectIn(admin.user.id)
    expect(before.entries).toEqual([`${canary}-prod`, `${canary}-v2`])
    expect(before.versions).toEqual([`A=${canary}-env1\n`, `${canary}-v1`])

    const moved = await admin.post(`/api/vaults/${vaultId}/move`, { direction: 'in', project: 'blog', twoFactorIds: [ids.tokenId] })
    expect(moved.status).toBe(200)
    expect(moved.body).toMatchObject({ copy: false, direction: 'in', project: 'blog', envProjectId: ids.projectId, versions: 2 })
    // A move keeps the ids (nothing collides): links to them still work, under the vault's prefix.
    expect(moved.body.entryIds.sort()).toEqual([ids.mainId, ids.prodId].sort())
    expect(moved.body.categoriesCreated).toHaveLength(1)

    const target = await projectIn(vaultId)
    expect(target.entries).toEqual(before.entries)
    expect(target.files).toEqual([`A=${canary}-env2\n`])
    expect(target.tokens).toEqual([TOTP])
    expect(target.versions).toEqual(before.versions)
    expect(target.categories).toBe(1)
    expect(target.trash).toEqual([])
    // Gone from the personal vault, except what is not the project: the other entry, the trash, the category.
    const source = await projectIn(admin.user.id)
    expect([source.entries, source.files, source.tokens, source.versions]).toEqual([[], [], [], []])
    expect([source.others, source.trash.length, source.categories]).toEqual([1, 1, 1])
    expect(JSON.stringify(source.data)).not.toContain(ids.mainId)
    expect(server.deps.store.accounts.data.moves).toEqual([])

    // Over HTTP: read in the vault, not found in the personal vault.
    const revealed = await admin.post(`/api/vaults/${vaultId}/entries/${ids.mainId}/reveal`)
    expect([revealed.status, revealed.body.value]).toEqual([200, `${canary}-v2`])
    expect((await admin.get(`/api/vaults/${vaultId}/entries/${ids.mainId}/versions`)).body).toHaveLength(1)
    expect((await admin.post(`/api/entries/${ids.mainId}/reveal`)).status).toBe(404)

    // Both logs name the move; no value in either.
    for (const owner of [vaultId, admin.user.id]) {
      const events = await actions(server.dataDir, owner)
      expect(events.map((e) => [e.action, e.details.direction, e.details.project, e.details.entries, e.details.envFiles, e.details.twoFactor])).toEqual([
        ['project.move', 'in', 'blog', 2, 1, 1],
      ])
      expect(JSON.stringify(events)).not.toContain(canary)
    }
    expect((await actions(server.dataDir, vaultId))[0].actor.userId).toBe(admin.user.id)
  })

  test('out: back to the personal vault; categories matched by name there; then copy both ways (new ids, the source keeps all)', async () => {
    const admin = await signUp(server.url)
    const vaultId = await createVault(admin)
    const base = `/api/vaults/${vaultId}`
    const canary = `sk-move-out-${crypto.randomUUID()}`
    const ids = await seedProject(admin, base, canary)
    // The personal vault has a twin category (any case): matched, not created again.
    await admin.post('/api/categories', { name: 'STRIPE', keyType: 'simple', envVarName: 'STRIPE_KEY' })
    const before = await projectIn(vaultId)

    const moved = await admin.post(`${base}/move`, { direction: 'out', project: 'blog', envProjectId: ids.projectId, twoFactorIds: [ids.tokenId] })
    expect(moved.status).toBe(200)
    expect(moved.body.categoriesCreated).toEqual([])
    const personal = await projectIn(admin.user.id)
    expect([personal.entries, personal.files, personal.tokens, personal.versions]).toEqual([before.entries, before.files, before.tokens, before.versions])
    const left = await projectIn(vaultId)
    expect([left.entries, left.files, left.tokens, left.versions, left.trash.length]).toEqual([[], [], [], [], 1])

    // Copy in: new ids, both sides hold it.
    const copied = await admin.post(`${base}/move`, { direction: 'in', project: 'blog', twoFactorIds: [ids.tokenId], copy: true })
    expect(copied.status).toBe(200)
    expect(copied.body.copy).toBe(true)
    expect(copied.body.entryIds.some((id: string) => [ids.mainId, ids.prodId].includes(id))).toBe(false)
    const inVault = await projectIn(vaultId)
    expect([inVault.entries, inVault.files, inVault.tokens, inVault.versions]).toEqual([before.entries, before.files, before.tokens, before.versions])
    expect((await projectIn(admin.user.id)).entries).toEqual(before.entries)
    const revealed = await admin.post(`${base}/entries/${copied.body.entryIds[0]}/reveal`)
    expect(revealed.status).toBe(200)

    // Now the target has the twins: a second copy is refused, changing nothing.
    const twice = await admin.post(`${base}/move`, { direction: 'in', project: 'blog', copy: true })
    expect([twice.status, twice.body.code]).toEqual([409, 'ENTRY_EXISTS'])
    // Copy out into a second account's... no: into the same personal vault fails alike; a fresh vault takes it.
    const other = await createVault(admin, 'other')
    const out = await admin.post(`${base}/move`, { direction: 'out', project: 'nothing-here' })
    expect([out.status, out.body.code]).toEqual([404, 'PROJECT_NOT_FOUND'])
    const copyOut = await admin.post(`/api/vaults/${other}/move`, { direction: 'in', project: 'blog', copy: true })
    expect(copyOut.status).toBe(200)
    expect((await projectIn(other)).entries).toEqual(before.entries)

    expect((await actions(server.dataDir, vaultId)).map((e) => [e.action, e.details.direction])).toEqual([
      ['project.move', 'out'],
      ['project.copy', 'in'],
    ])
    expect((await actions(server.dataDir, admin.user.id)).map((e) => [e.action, e.details.direction])).toEqual([
      ['project.move', 'out'],
      ['project.copy', 'in'],
      ['project.copy', 'in'],
    ])
  })

  test('admins only: editor and viewer 403 ROLE_REQUIRED, a stranger 404, an access key 403; an unknown token 404; nothing moves', async () => {
    const { admin, editor, viewer, stranger, vaultId } = await team(server)
    const ids = await seedProject(editor, '', 'sk-role')
    for (const member of [editor, viewer]) {
      const refused = await member.post(`/api/vaults/${vaultId}/move`, { direction: 'in', project: 'blog' })
      expect([refused.status, refused.body.code, refused.body.error]).toEqual([403, 'ROLE_REQUIRED', 'This operation needs the admin role in this vault'])
    }
    expect((await stranger.post(`/api/vaults/${vaultId}/move`, { direction: 'in', project: 'blog' })).status).toBe(404)
    const key = await admin.keyClient(['entries:read', 'entries:write'], { vaultId })
    const keyed = await key.post(`/api/vaults/${vaultId}/move`, { direction: 'out', project: 'blog' })
    expect([keyed.status, keyed.body.code]).toEqual([403, 'SESSION_REQUIRED'])
    const unknown = await admin.post(`/api/vaults/${vaultId}/move`, { direction: 'in', project: 'blog', twoFactorIds: [ids.tokenId] })
    expect([unknown.status, unknown.body.code]).toEqual([404, 'TWO_FACTOR_NOT_FOUND'])
    const bad = await admin.post(`/api/vaults/${vaultId}/move`, { direction: 'sideways', project: 'blog' })
    expect(bad.status).toBe(400)
    expect((await projectIn(editor.user.id)).entries).toHaveLength(2)
    expect((await projectIn(vaultId)).entries).toHaveLength(0)
  })
})

/** The accounts document, with `after(n)` run once the n-th update through it is durable. */
function watchedAccounts(after: (n: number) => Promise<void>): StoredDocument<AccountsDocument> {
  const real = server.deps.store.accounts
  let n = 0
  return new Proxy(real, {
    get(target, key) {
      if (key === 'update')
        return async (mutate: Parameters<typeof real.update>[0]) => {
          const result = await target.update(mutate)
          await after(++n)
          return result
        }
      const value = Reflect.get(target, key)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

describe('a project changed while it moves', () => {
  test('409 MOVE_CONFLICT: the target loses what it got, the change is kept; an undo cut short is finished at start-up', async () => {
    const admin = await signUp(server.url)
    const vaultId = await createVault(admin)
    const ids = await seedProject(admin, '', 'sk-conflict')
    const request = { from: admin.user.id, to: vaultId, project: 'blog', copy: false }
    // Right after the intent is written, the owner sets a new value.
    const moves = new Moves({
      accountsDoc: watchedAccounts(async (n) => {
        if (n === 1) expect((await admin.put(`/api/entries/${ids.mainId}`, { value: 'sk-conflict-v3' })).status).toBe(200)
      }),
      vaults: server.deps.vaults,
      now: Date.now,
      log: () => {},
    })
    const refused = await moves.move(request).catch((error) => error)
    expect([refused.status, refused.code]).toEqual([409, 'MOVE_CONFLICT'])
    expect((await projectIn(admin.user.id)).entries).toEqual(['sk-conflict-prod', 'sk-conflict-v3'])
    expect((await projectIn(vaultId)).entries).toEqual([])
    expect(server.deps.store.accounts.data.moves).toEqual([])

    // Again, but the undo stops once it is journalled (a crash): start-up takes the target's copy away.
    const cut = new Moves({
      accountsDoc: watchedAccounts(async (n) => {
        if (n === 1) expect((await admin.put(`/api/entries/${ids.mainId}`, { value: 'sk-conflict-v4' })).status).toBe(200)
        if (n === 2) throw new Error('stopped')
      }),
      vaults: server.deps.vaults,
      now: Date.now,
      log: () => {},
    })
    expect(((await cut.move(request).catch((error) => error)) as Error).message).toBe('stopped')
    expect(server.deps.store.accounts.data.moves.map((m) => m.phase)).toEqual(['back'])
    expect((await projectIn(vaultId)).entries).toHaveLength(2)
    expect(await new Moves({ accountsDoc: server.deps.store.accounts, vaults: server.deps.vaults, now: Date.now, log: () => {} }).recover()).toBe(1)
    expect((await projectIn(vaultId)).entries).toEqual([])
    expect((await projectIn(admin.user.id)).entries).toEqual(['sk-conflict-prod', 'sk-conflict-v4'])
    expect(server.deps.store.accounts.data.moves).toEqual([])
  })
})

describe('start-up after a move stopped once the target held it', () => {
  const stopAfterTarget = () =>
    new Moves({
      accountsDoc: server.deps.store.accounts,
      vaults: server.deps.vaults,
      now: Date.now,
      log: () => {},
      faultAt: (point) => {
        if (point === 'after-target') throw new Error('stopped')
      },
    })
  const recover = () => new Moves({ accountsDoc: server.deps.store.accounts, vaults: server.deps.vaults, now: Date.now, log: () => {} }).recover()

  test('the source unchanged: the move is finished', async () => {
    const admin = await signUp(server.url)
    const vaultId = await createVault(admin)
    await seedProject(admin, '', 'sk-stop')
    await expect(stopAfterTarget().move({ from: admin.user.id, to: vaultId, project: 'blog', copy: false })).rejects.toThrow('stopped')
    expect((await projectIn(vaultId)).entries).toHaveLength(2)
    expect((await projectIn(admin.user.id)).entries).toHaveLength(2)
    expect(await recover()).toBe(1)
    expect((await projectIn(vaultId)).entries).toEqual(['sk-stop-prod', 'sk-stop-v2'])
    expect((await projectIn(admin.user.id)).entries).toEqual([])
  })

  test('a write acknowledged on the source meanwhile: the move is undone, the write kept', async () => {
    const admin = await signUp(server.url)
    const vaultId = await createVault(admin)
    const ids = await seedProject(admin, '', 'sk-stop')
    await expect(stopAfterTarget().move({ from: admin.user.id, to: vaultId, project: 'blog', copy: false })).rejects.toThrow('stopped')
    expect((await admin.put(`/api/entries/${ids.prodId}`, { value: 'sk-stop-prod-2' })).status).toBe(200)
    expect(await recover()).toBe(1)
    expect((await projectIn(vaultId)).entries).toEqual([])
    expect((await projectIn(admin.user.id)).entries).toEqual(['sk-stop-prod-2', 'sk-stop-v2'])
    expect(server.deps.store.accounts.data.moves).toEqual([])
  })
})

describe('a move killed midway', () => {
  for (const [point, side] of [
    ['after-intent', 'source'],
    ['after-target', 'target'],
    ['after-source', 'target'],
  ] as const) {
    test(`kill -9 ${point}: after restart the project is whole in the ${side}, on one side only`, async () => {
      const dataDir = tempDir('svc-vault-move-crash-')
      try {
        let spawned = await spawnServer({ dataDir, env: { NODE_ENV: 'test', SVC_TEST_MOVE_CRASH_AT: point } })
        const admin = await signUp(spawned.url)
        const vaultId = await createVault(admin)
        const canary = `sk-crash-${point}`
        const ids = await seedProject(admin, '', canary)
        const answer = await admin.post(`/api/vaults/${vaultId}/move`, { direction: 'in', project: 'blog', twoFactorIds: [ids.tokenId] }).catch(() => null)
        expect(answer).toBeNull()
        await spawned.proc.exited
        expect(spawned.proc.signalCode).toBe('SIGKILL')

        // Restarted (without the fault): start-up finishes or undoes the move.
        spawned = await spawnServer({ dataDir })
        await spawned.stop()
        const deps = await openVault(loadConfig({ SVC_MASTER_KEY: TEST_MASTER_KEY, ...(await storeEnv(dataDir)), SVC_DATA_DIR: dataDir }), () => {})
        try {
          const whole = {
            entries: [`${canary}-prod`, `${canary}-v2`],
            files: [`A=${canary}-env2\n`],
            tokens: [TOTP],
            versions: [`A=${canary}-env1\n`, `${canary}-v1`],
          }
          const none = { entries: [], files: [], tokens: [], versions: [] }
          const pick = (p: Awaited<ReturnType<typeof projectIn>>) => ({ entries: p.entries, files: p.files, tokens: p.tokens, versions: p.versions })
          const source = pick(await projectIn(admin.user.id, deps))
          const target = pick(await projectIn(vaultId, deps))
          expect({ source, target }).toEqual(side === 'source' ? { source: whole, target: none } : { source: none, target: whole })
          expect(deps.store.accounts.data.moves).toEqual([])
        } finally {
          await deps.store.close()
        }
      } finally {
        removeDir(dataDir)
      }
    }, 60_000)
  }
})
