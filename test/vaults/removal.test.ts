// Removal takes effect at once (a reveal in flight when it commits sends nothing; the member's
// bound keys answer 401), then the rotation list names exactly what their audit events show them
// reading, and "mark rotated" waits for the value to change.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Client, signUp } from '../support/client'
import { removeDir, startTestServer, tempDir, type TestServer } from '../support/server'
import { addMember, createVault, type Member } from './support'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(async () => {
  await server.stop()
})

const SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DP'

/** A vault with an admin, a viewer, five entries, an env file and two 2FA tokens. */
async function fixture() {
  const admin = (await signUp(server.url)) as Member
  const viewer = (await signUp(server.url)) as Member
  const vaultId = await createVault(admin)
  await addMember(server, vaultId, viewer, 'viewer', admin)
  const base = `/api/vaults/${vaultId}`
  const category = await admin.post(`${base}/categories`, { name: 'api', keyType: 'simple', envVarName: 'API_KEY' })
  const entries: string[] = []
  for (let i = 0; i < 5; i++) {
    const entry = await admin.post(`${base}/entries`, { categoryId: category.body.id, name: `proj${i}`, value: `canary-entry-${i}` })
    expect(entry.status).toBe(201)
    entries.push(entry.body.id)
  }
  const project = await admin.post(`${base}/envs`, { name: 'web' })
  const projectId = (project.body.data?.id ?? project.body.id) as string
  const files: string[] = []
  for (const fileType of ['env', 'env.local']) {
    const file = await admin.post(`${base}/envs/${projectId}/files`, { fileType, content: `TOKEN=canary-${fileType}\n` })
    files.push((file.body.data?.id ?? file.body.id) as string)
  }
  const tokens: string[] = []
  for (const service of ['GitHub', 'GitLab']) tokens.push((await admin.post(`${base}/2fa`, { service, accountName: 'me', secret: SECRET })).body.id)
  return { admin, viewer, vaultId, base, entries, projectId, files, tokens }
}

const rotationOf = async (client: Client, base: string) => {
  const answer = await client.get(`${base}/rotation`)
  expect(answer.status).toBe(200)
  return answer.body.items as {
    kind: string
    id: string
    name: string
    revealedBy: { userId: string; email: string }[]
    since: string
    rotatedAt: string | null
    status: string
  }[]
}

describe('removal takes effect at once', () => {
  test('a reveal in flight when the removal commits sends nothing; the member is cut off from then on; their bound key answers 401', async () => {
    const { admin, viewer, vaultId, base, entries } = await fixture()
    const key = await viewer.keyClient(['entries:reveal'], { vaultId })
    expect((await key.post(`${base}/entries/${entries[0]}/reveal`)).status).toBe(200)

    // Hold one reveal after it read (decrypted) its value, at its audit write, until the removal has committed.
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    let held!: () => void
    const reached = new Promise<void>((resolve) => (held = resolve))
    const audit = server.deps.audit
    const recordFor = audit.recordFor.bind(audit)
    audit.recordFor = ((auth, source, action, ...rest) => {
      if (action === 'entry.reveal' && (auth as { memberId?: string }).memberId === viewer.user.id && (source.request.headers.get('x-hold') ?? '') === '1') {
        held()
        return gate.then(() => recordFor(auth, source, action, ...rest))
      }
      return recordFor(auth, source, action, ...rest)
    }) as typeof audit.recordFor

    // A loop of concurrent reveals (session and key), each noting when it started.
    const sharedVaults = server.deps.sharedVaults
    const removeMember = sharedVaults.removeMember.bind(sharedVaults)
    let committedAt = Infinity
    let stop = false
    sharedVaults.removeMember = async (...args) => {
      const removed = await removeMember(...args)
      committedAt = performance.now()
      return removed
    }
    try {
      const inFlight = viewer.post(`${base}/entries/${entries[1]}/reveal`, undefined, { 'x-hold': '1' })
      await reached
      const answers: { startedAt: number; status: number; text: string }[] = []
      const loop = async (client: Client, id: string) => {
        while (!stop) {
          const startedAt = performance.now()
          const answer = await client.post(`${base}/entries/${id}/reveal`)
          answers.push({ startedAt, status: answer.status, text: answer.text })
        }
      }
      const loops = [loop(viewer, entries[0]), loop(viewer, entries[2]), loop(key, entries[3]), loop(viewer, entries[4])]
      // Let the loops answer some values first.
      while (answers.filter((a) => a.status === 200).length < 8) await Bun.sleep(1)
      const removal = await admin.delete(`${base}/members/${viewer.user.id}`)
      expect(removal.status).toBe(204)
      expect(committedAt).toBeLessThan(Infinity)
      release()
      const late = await inFlight
      // Read before the removal, answered after it: refused, nothing of the value.
      expect(late.status).toBe(404)
      expect(late.text).not.toContain('canary')
      const after = answers.length
      while (answers.length < after + 8) await Bun.sleep(1)
      stop = true
      await Promise.all(loops)

      const before = answers.filter((a) => a.startedAt < committedAt)
      const started = answers.filter((a) => a.startedAt > committedAt)
      expect(before.some((a) => a.status === 200)).toBe(true)
      expect(started.length).toBeGreaterThan(0)
      for (const answer of started) {
        expect([401, 404]).toContain(answer.status)
        expect(answer.text).not.toContain('canary')
      }
    } finally {
      stop = true
      audit.recordFor = recordFor
      sharedVaults.removeMember = removeMember
      release()
    }
    // Their key bound to the vault is revoked: 401, here and on every route.
    expect((await key.post(`${base}/entries/${entries[0]}/reveal`)).status).toBe(401)
    expect((await key.get(`${base}/entries`)).status).toBe(401)
    expect((await viewer.get(`${base}/entries`)).status).toBe(404)
    expect((await viewer.get('/api/vaults')).body).toEqual([])
  })

  test('a 2FA export (session only) in flight when the removal commits sends no secret', async () => {
    const { admin, viewer, base } = await fixture()
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    let held!: () => void
    const reached = new Promise<void>((resolve) => (held = resolve))
    const audit = server.deps.audit
    const recordFor = audit.recordFor.bind(audit)
    audit.recordFor = ((auth, source, action, ...rest) => {
      if (action === 'twofa.export' && (auth as { memberId?: string }).memberId === viewer.user.id) {
        held()
        return gate.then(() => recordFor(auth, source, action, ...rest))
      }
      return recordFor(auth, source, action, ...rest)
    }) as typeof audit.recordFor
    try {
      const inFlight = viewer.post(`${base}/2fa/export`, { format: 'otpauth', password: 'correct horse battery' })
      await reached
      expect((await admin.delete(`${base}/members/${viewer.user.id}`)).status).toBe(204)
      release()
      const late = await inFlight
      expect(late.status).toBe(404)
      expect(late.text).not.toContain(SECRET)
    } finally {
      audit.recordFor = recordFor
      release()
    }
  })
})

describe('the rotation list', () => {
  test('names exactly what the removed member revealed; mark rotated is refused before the value changes, accepted after', async () => {
    const { admin, viewer, base, entries, projectId, files, tokens } = await fixture()
    const editor = (await signUp(server.url)) as Member
    const otherViewer = (await signUp(server.url)) as Member
    await addMember(server, base.split('/').pop()!, editor, 'editor', admin)
    await addMember(server, base.split('/').pop()!, otherViewer, 'viewer', admin)
    // The viewer reads 2 of 5 entries (one twice), one env file and one 2FA code; others read the rest.
    for (const id of [entries[1], entries[3], entries[1]]) expect((await viewer.post(`${base}/entries/${id}/reveal`)).status).toBe(200)
    expect((await viewer.post(`${base}/envs/${projectId}/files/${files[0]}/reveal`)).status).toBe(200)
    expect((await viewer.post(`${base}/2fa/${tokens[0]}/reveal`)).status).toBe(200)
    for (const id of [entries[0], entries[2]]) expect((await admin.post(`${base}/entries/${id}/reveal`)).status).toBe(200)
    expect((await otherViewer.post(`${base}/2fa/${tokens[1]}/reveal`)).status).toBe(200)
    expect((await otherViewer.post(`${base}/envs/${projectId}/files/${files[1]}/reveal`)).status).toBe(200)
    expect(await rotationOf(admin, base)).toEqual([])

    expect((await admin.delete(`${base}/members/${viewer.user.id}`)).status).toBe(204)
    const items = await rotationOf(admin, base)
    expect(items.map((item) => `${item.kind}:${item.id}`).sort()).toEqual(
      [`entry:${entries[1]}`, `entry:${entries[3]}`, `envfile:${files[0]}`, `twofa:${tokens[0]}`].sort(),
    )
    for (const item of items) {
      expect(item.revealedBy).toEqual([{ userId: viewer.user.id, email: viewer.email }])
      expect([item.status, item.rotatedAt]).toEqual(['rotation_due', null])
      expect(typeof item.since).toBe('string')
    }
    expect(JSON.stringify(items)).not.toContain('canary')
    // Editors see and mark it; a viewer may not (403 ROLE_REQUIRED), a stranger sees no vault.
    expect((await rotationOf(editor, base)).length).toBe(4)
    expect((await otherViewer.get(`${base}/rotation`)).body.code).toBe('ROLE_REQUIRED')
    expect((await viewer.get(`${base}/rotation`)).status).toBe(404)

    // Not rotated until the value changes: a rename is not a rotation.
    const mark = (client: Client, kind: string, id: string) => client.post(`${base}/rotation/${kind}/${id}/rotated`)
    expect((await mark(editor, 'entry', entries[1])).body.code).toBe('NOT_ROTATED')
    expect((await editor.put(`${base}/entries/${entries[1]}`, { notes: 'renamed, same value' })).status).toBe(200)
    expect((await mark(editor, 'entry', entries[1])).status).toBe(409)
    expect((await otherViewer.post(`${base}/rotation/entry/${entries[1]}/rotated`)).body.code).toBe('ROLE_REQUIRED')
    expect((await mark(editor, 'entry', entries[0])).body.code).toBe('ROTATION_ITEM_NOT_FOUND')
    expect((await mark(editor, 'password', entries[1])).status).toBe(400)
    expect((await editor.put(`${base}/entries/${entries[1]}`, { value: 'canary-new' })).status).toBe(200)
    const marked = await mark(editor, 'entry', entries[1])
    expect([marked.status, marked.body.status, typeof marked.body.rotatedAt]).toEqual([200, 'rotated', 'string'])
    // The other kinds: their value (content, secret) changes, then they are marked.
    expect((await mark(admin, 'envfile', files[0])).status).toBe(409)
    expect((await admin.post(`${base}/envs/${projectId}/files`, { fileType: 'env', content: 'TOKEN=canary-rotated\n' })).status).toBeLessThan(300)
    expect((await mark(admin, 'envfile', files[0])).status).toBe(200)
    expect((await mark(admin, 'twofa', tokens[0])).status).toBe(409)
    expect((await admin.put(`${base}/2fa/${tokens[0]}`, { secret: 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ' })).status).toBe(200)
    expect((await mark(admin, 'twofa', tokens[0])).status).toBe(200)
    const after = await rotationOf(admin, base)
    expect(after.filter((item) => item.status === 'rotation_due').map((item) => item.id)).toEqual([entries[3]])
    // Marks are audited in the vault's log, naming the record (never a value).
    const audit = await admin.get(`${base}/audit?action=rotation.mark`)
    expect(audit.body.items.map((event: any) => event.records[0].id).sort()).toEqual([entries[1], files[0], tokens[0]].sort())
  })

  test("a member's export counts every entry it named; a 2FA export every token; a read of a value since replaced does not", async () => {
    const { admin, viewer, base, entries, tokens } = await fixture()
    expect((await viewer.get(`${base}/export?name=proj2`)).status).toBe(200)
    expect((await viewer.post(`${base}/2fa/export`, { format: 'otpauth', password: 'correct horse battery' })).status).toBe(200)
    expect((await viewer.post(`${base}/entries/${entries[4]}/reveal`)).status).toBe(200)
    // The value they read is replaced before they leave: nothing of it to rotate.
    expect((await admin.put(`${base}/entries/${entries[4]}`, { value: 'canary-replaced' })).status).toBe(200)
    expect((await admin.delete(`${base}/members/${viewer.user.id}`)).status).toBe(204)
    const items = await rotationOf(admin, base)
    expect(items.map((item) => `${item.kind}:${item.id}`).sort()).toEqual([`entry:${entries[2]}`, ...tokens.map((id) => `twofa:${id}`)].sort())
  })

  test('a member who deletes their account leaves a rotation list; a sole admin cannot delete theirs (409 LAST_ADMIN)', async () => {
    const { admin, viewer, base, entries } = await fixture()
    expect((await viewer.post(`${base}/entries/${entries[0]}/reveal`)).status).toBe(200)
    const refused = await admin.request('DELETE', '/api/account', { password: 'correct horse battery' })
    expect([refused.status, refused.body.code]).toEqual([409, 'LAST_ADMIN'])
    expect((await viewer.request('DELETE', '/api/account', { password: 'correct horse battery' })).status).toBe(204)
    const items = await rotationOf(admin, base)
    expect(items.map((item) => [item.id, item.revealedBy])).toEqual([[entries[0], [{ userId: viewer.user.id, email: viewer.email }]]])
  })

  test("the departure is noted in the removal's own write: stopped before the scan, the next list still names what they read", async () => {
    const dataDir = tempDir()
    let first: TestServer | null = await startTestServer({ dataDir })
    try {
      const admin = (await signUp(first.url)) as Member
      const viewer = (await signUp(first.url)) as Member
      const vaultId = await createVault(admin)
      await addMember(first, vaultId, viewer, 'viewer', admin)
      const base = `/api/vaults/${vaultId}`
      const category = await admin.post(`${base}/categories`, { name: 'api', keyType: 'simple', envVarName: 'API_KEY' })
      const entry = (await admin.post(`${base}/entries`, { categoryId: category.body.id, name: 'blog', value: 'canary-blog' })).body.id
      expect((await viewer.post(`${base}/entries/${entry}/reveal`)).status).toBe(200)
      // The service's removal alone: the route's scan never runs.
      await first.deps.sharedVaults.removeMember({ userId: admin.user.id }, vaultId, viewer.user.id)
      await first.stop()
      first = null
      const second = await startTestServer({ dataDir })
      try {
        const again = new Client(second.url, admin.credentials)
        const items = await rotationOf(again, base)
        expect(items.map((item) => [item.kind, item.id, item.name, item.revealedBy])).toEqual([
          ['entry', entry, 'blog', [{ userId: viewer.user.id, email: viewer.email }]],
        ])
        // Scanned once: the note is gone, the list stays.
        expect(second.deps.sharedVaults.record(vaultId)?.departed).toEqual([])
        expect((await rotationOf(again, base)).length).toBe(1)
      } finally {
        await second.stop()
      }
    } finally {
      await first?.stop()
      removeDir(dataDir)
    }
  })
})
