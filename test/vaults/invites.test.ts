// Invites into a shared vault: link invites (single use under a race, 7 days by the injectable
// clock, revocation, sign-up through one while sign-up is closed, nothing beyond their vault),
// e-mail invites (list, accept, decline), the audit events, and no token in clear on disk.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { storedAuditEvents, storedTexts } from '../support/audit-file'
import { Client, PASSWORD, sessionCookie, signUp, uniqueEmail } from '../support/client'
import { startTestServer, tempDir, type TestServer } from '../support/server'
import { createVault, seed } from './support'

const DAY = 24 * 60 * 60 * 1000
let now = Date.parse('2026-11-20T12:00:00Z')
let server: TestServer
beforeAll(async () => {
  // Sessions outlive the 7 days the clock is moved by.
  server = await startTestServer({ now: () => now, env: { SVC_SESSION_TTL: '30d' } })
})
afterAll(async () => {
  await server.stop()
})

const linkInvite = async (admin: Client, vaultId: string, role = 'editor') => {
  const made = await admin.post(`/api/vaults/${vaultId}/invites`, { role })
  expect(made.status).toBe(201)
  return made.body as { id: string; token: string; url: string; expiresAt: string; role: string }
}

/** Registers through the register route (optionally with an invite) and answers the status, code and a client. */
async function register(base: string, body: Record<string, unknown>) {
  const response = await fetch(`${base}/api/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ password: PASSWORD, ...body }),
  })
  const answer = (await response.json()) as any
  return {
    status: response.status,
    code: answer.code as string | undefined,
    user: answer.user,
    client: new Client(base, { cookie: sessionCookie(response.headers) }),
  }
}

const vaultEvents = (vaultId: string) => storedAuditEvents(server, vaultId)

describe('invite links', () => {
  test('answer the token once; only pending ones are listed, without tokens; single use under two parallel accepts', async () => {
    const admin = await signUp(server.url)
    const vaultId = await createVault(admin)
    const invite = await linkInvite(admin, vaultId)
    expect(invite.url).toBe(`${server.deps.config.baseUrl}/invite/${invite.token}`)
    expect(Date.parse(invite.expiresAt) - now).toBe(7 * DAY)
    const listed = await admin.get(`/api/vaults/${vaultId}/invites`)
    expect(listed.body).toEqual([expect.objectContaining({ id: invite.id, role: 'editor', kind: 'link', email: null })])
    expect(listed.text).not.toContain(invite.token)
    expect(listed.body[0].token).toBeUndefined()

    const [a, b] = [await signUp(server.url), await signUp(server.url)]
    const answers = await Promise.all([a.post('/api/invites/accept', { token: invite.token }), b.post('/api/invites/accept', { token: invite.token })])
    expect(answers.map((x) => x.status).sort()).toEqual([200, 404])
    const winner = answers[0].status === 200 ? a : b
    const loser = winner === a ? b : a
    expect(answers.find((x) => x.status === 404)!.body.code).toBe('INVITE_NOT_FOUND')
    expect(answers.find((x) => x.status === 200)!.body).toEqual({ vault: expect.objectContaining({ id: vaultId, role: 'editor' }), role: 'editor' })
    expect((await winner.get(`/api/vaults/${vaultId}`)).status).toBe(200)
    expect((await loser.get(`/api/vaults/${vaultId}`)).status).toBe(404)
    const members = await admin.get(`/api/vaults/${vaultId}/members`)
    expect(members.body).toHaveLength(2)
    // Used: gone from the list, and answers like an unknown one.
    expect((await admin.get(`/api/vaults/${vaultId}/invites`)).body).toEqual([])
    expect((await loser.post('/api/invites/accept', { token: invite.token })).body.code).toBe('INVITE_NOT_FOUND')
    expect((await loser.post('/api/invites/accept', { token: 'svc_inv_nothing' })).status).toBe(404)
    expect((await loser.post('/api/invites/accept', { token: '' })).status).toBe(400)

    // Audited in the vault's log, naming the member; no token anywhere in it.
    const events = await vaultEvents(vaultId)
    const created = events.find((e) => e.action === 'invite.create')
    expect(created).toMatchObject({ records: [{ kind: 'invite', id: invite.id }], details: { role: 'editor', kind: 'link' } })
    const accepted = events.filter((e) => e.action === 'invite.accept')
    expect(accepted).toHaveLength(1)
    expect(accepted[0].actor).toMatchObject({ userId: winner.user.id, email: winner.email })
    expect(JSON.stringify(events)).not.toContain(invite.token)
  })

  test('single use through sign-up too: of two parallel registrations with one token, one account is made', async () => {
    const admin = await signUp(server.url)
    const vaultId = await createVault(admin)
    const invite = await linkInvite(admin, vaultId)
    const emails = [uniqueEmail('racer'), uniqueEmail('racer')]
    const answers = await Promise.all(emails.map((email) => register(server.url, { email, invite: invite.token })))
    expect(answers.map((x) => x.status).sort()).toEqual([201, 404])
    expect(answers.find((x) => x.status === 404)!.code).toBe('INVITE_NOT_FOUND')
    const made = emails.filter((email) => server.deps.accounts.userByEmail(email))
    expect(made).toHaveLength(1)
    expect((await admin.get(`/api/vaults/${vaultId}/members`)).body.map((m: any) => m.email).sort()).toEqual([admin.email, made[0]].sort())
  })

  test('an admin already in the vault is refused (409 ALREADY_MEMBER) and the link stays usable', async () => {
    const admin = await signUp(server.url)
    const vaultId = await createVault(admin)
    const invite = await linkInvite(admin, vaultId, 'viewer')
    expect((await admin.post('/api/invites/accept', { token: invite.token })).body.code).toBe('ALREADY_MEMBER')
    const guest = await signUp(server.url)
    expect((await guest.post('/api/invites/accept', { token: invite.token })).status).toBe(200)
  })

  test('expire after 7 days by the injectable clock', async () => {
    const admin = await signUp(server.url)
    const vaultId = await createVault(admin)
    const early = await linkInvite(admin, vaultId)
    const late = await linkInvite(admin, vaultId)
    const guest = await signUp(server.url)
    const start = now
    try {
      now = start + 7 * DAY - 1000
      expect((await admin.get(`/api/vaults/${vaultId}/invites`)).body).toHaveLength(2)
      now = start + 7 * DAY
      expect((await admin.get(`/api/vaults/${vaultId}/invites`)).body).toEqual([])
      const refused = await guest.post('/api/invites/accept', { token: early.token })
      expect([refused.status, refused.body.code]).toEqual([404, 'INVITE_NOT_FOUND'])
      expect((await register(server.url, { email: uniqueEmail(), invite: late.token })).code).toBe('INVITE_NOT_FOUND')
      expect((await admin.delete(`/api/vaults/${vaultId}/invites/${late.id}`)).status).toBe(404)
      expect((await guest.get(`/api/vaults/${vaultId}`)).status).toBe(404)
    } finally {
      now = start
    }
  })

  test('revocation: admin only; a revoked link answers like an unknown one', async () => {
    const admin = await signUp(server.url)
    const vaultId = await createVault(admin)
    const invite = await linkInvite(admin, vaultId)
    const editor = await signUp(server.url)
    const editorInvite = await linkInvite(admin, vaultId, 'editor')
    expect((await editor.post('/api/invites/accept', { token: editorInvite.token })).status).toBe(200)
    // An editor can neither list, make nor revoke invites; a stranger sees no vault.
    expect((await editor.delete(`/api/vaults/${vaultId}/invites/${invite.id}`)).body.code).toBe('ROLE_REQUIRED')
    expect((await editor.get(`/api/vaults/${vaultId}/invites`)).body.code).toBe('ROLE_REQUIRED')
    expect((await editor.post(`/api/vaults/${vaultId}/invites`, { role: 'admin' })).body.code).toBe('ROLE_REQUIRED')
    const stranger = await signUp(server.url)
    expect((await stranger.post(`/api/vaults/${vaultId}/invites`, { role: 'viewer' })).body.code).toBe('NOT_FOUND')

    expect((await admin.delete(`/api/vaults/${vaultId}/invites/${invite.id}`)).status).toBe(204)
    expect((await admin.delete(`/api/vaults/${vaultId}/invites/${invite.id}`)).body.code).toBe('INVITE_NOT_FOUND')
    const refused = await stranger.post('/api/invites/accept', { token: invite.token })
    expect([refused.status, refused.body.code]).toEqual([404, 'INVITE_NOT_FOUND'])
    expect((await vaultEvents(vaultId)).some((e) => e.action === 'invite.revoke' && e.records[0].id === invite.id)).toBe(true)
  })

  test('an invite for one vault gives nothing else', async () => {
    const admin = await signUp(server.url)
    const vaultId = await createVault(admin, 'one')
    const otherId = await createVault(admin, 'other')
    const personal = await seed(admin, '', `canary-${crypto.randomUUID()}`)
    const invite = await linkInvite(admin, vaultId, 'viewer')
    const guest = await signUp(server.url)
    expect((await guest.post('/api/invites/accept', { token: invite.token })).status).toBe(200)
    expect((await guest.get('/api/vaults')).body.map((v: any) => [v.id, v.role])).toEqual([[vaultId, 'viewer']])
    // Its role only: a viewer cannot write, invite or manage.
    expect((await guest.post(`/api/vaults/${vaultId}/categories`, { name: 'x', keyType: 'simple', envVarName: 'X' })).body.code).toBe('ROLE_REQUIRED')
    expect((await guest.post(`/api/vaults/${vaultId}/invites`, { role: 'viewer' })).body.code).toBe('ROLE_REQUIRED')
    // Not the other vault of the same admin, nor the admin's personal vault.
    expect((await guest.get(`/api/vaults/${otherId}`)).status).toBe(404)
    expect((await guest.get(`/api/vaults/${otherId}/entries`)).status).toBe(404)
    expect((await guest.get(`/api/entries/${personal.entryId}`)).status).toBe(404)
    expect((await guest.get(`/api/vaults/${vaultId}/entries/${personal.entryId}`)).status).toBe(404)
    // Nor another vault's invite management.
    expect((await guest.get(`/api/vaults/${otherId}/invites`)).status).toBe(404)
  })

  test('tokens are not on disk in clear (canary search of the data folder) nor in the logs', async () => {
    const admin = await signUp(server.url)
    const vaultId = await createVault(admin)
    const kept = await linkInvite(admin, vaultId)
    const used = await linkInvite(admin, vaultId)
    const revoked = await linkInvite(admin, vaultId)
    await (await signUp(server.url)).post('/api/invites/accept', { token: used.token })
    await admin.delete(`/api/vaults/${vaultId}/invites/${revoked.id}`)
    const viaRegister = await linkInvite(admin, vaultId)
    expect((await register(server.url, { email: uniqueEmail(), invite: viaRegister.token })).status).toBe(201)
    // The data folder's files, or on the database its rows.
    const stored = await storedTexts(server)
    expect(stored.length).toBeGreaterThan(2)
    // The hash of the token is stored: searching for its random part finds nothing either.
    const canaries = [kept, used, revoked, viaRegister].flatMap((invite) => [invite.token, invite.token.slice('svc_inv_'.length)])
    for (const { where, text } of stored) {
      for (const canary of canaries) expect({ where, found: text.includes(canary) }).toEqual({ where, found: false })
    }
    expect(server.logs.join('\n')).not.toContain(kept.token.slice(8))
  })
})

describe('sign-up through an invite link', () => {
  test.each(['closed', 'first'])('SVC_SIGNUP=%s: the invite is the permission; it joins its vault once; the register limit still applies', async (mode) => {
    const dataDir = tempDir()
    // The admin is made while sign-up is open, then the server restarts with sign-up closed.
    let open = await startTestServer({ dataDir, env: { SVC_SIGNUP: 'open' } })
    const admin = await signUp(open.url)
    const vaultId = await createVault(admin)
    await open.stop()
    const closed = await startTestServer({ dataDir, env: { SVC_SIGNUP: mode, SVC_REGISTER_LIMIT: '2' } })
    try {
      const signedIn = new Client(closed.url, admin.credentials)
      const invite = (await signedIn.post(`/api/vaults/${vaultId}/invites`, { role: 'editor' })).body
      const second = (await signedIn.post(`/api/vaults/${vaultId}/invites`, { role: 'viewer' })).body
      const third = (await signedIn.post(`/api/vaults/${vaultId}/invites`, { role: 'viewer' })).body
      expect((await register(closed.url, { email: uniqueEmail() })).code).toBe('SIGNUP_DISABLED')
      expect((await register(closed.url, { email: uniqueEmail(), invite: 'svc_inv_unknown' })).code).toBe('INVITE_NOT_FOUND')
      // An e-mail that has an account: 409, and the invite is not used up.
      expect((await register(closed.url, { email: admin.email, invite: invite.token })).code).toBe('EMAIL_TAKEN')

      const email = uniqueEmail('invited')
      const joined = await register(closed.url, { email, invite: invite.token })
      expect(joined.status).toBe(201)
      expect((await joined.client.get('/api/vaults')).body.map((v: any) => [v.id, v.role])).toEqual([[vaultId, 'editor']])
      expect((await joined.client.get('/api/auth/me')).status).toBe(200)
      // Single use.
      expect((await register(closed.url, { email: uniqueEmail(), invite: invite.token })).code).toBe('INVITE_NOT_FOUND')
      // SVC_REGISTER_LIMIT=2 new accounts per address an hour: the second invite passes, the third is refused (not used up).
      expect((await register(closed.url, { email: uniqueEmail(), invite: second.token })).status).toBe(201)
      const limited = await register(closed.url, { email: uniqueEmail(), invite: third.token })
      expect([limited.status, limited.code]).toEqual([429, 'TOO_MANY_ATTEMPTS'])
      expect((await signedIn.get(`/api/vaults/${vaultId}/invites`)).body.map((i: any) => i.id)).toEqual([third.id])

      const accepted = (await storedAuditEvents(closed, vaultId)).filter((e) => e.action === 'invite.accept')
      expect(accepted.map((e) => [e.actor.email, e.details.via])).toEqual([
        [email, 'register'],
        [expect.any(String), 'register'],
      ])
    } finally {
      await closed.stop()
    }
  })
})

describe('e-mail invites', () => {
  test('listed by the invitee, accepted or declined; for another e-mail 404; audited', async () => {
    const admin = await signUp(server.url)
    const vaultId = await createVault(admin, 'by mail')
    const alice = await signUp(server.url)
    const bob = await signUp(server.url)
    const made = await admin.post(`/api/vaults/${vaultId}/invites`, { role: 'viewer', email: alice.email.toUpperCase() })
    expect(made.status).toBe(201)
    expect(made.body).toMatchObject({ role: 'viewer', email: alice.email, kind: 'email' })
    expect(made.body.token).toBeUndefined()
    expect(made.body.url).toBeUndefined()
    const toBob = await admin.post(`/api/vaults/${vaultId}/invites`, { role: 'editor', email: bob.email })

    const listed = await alice.get('/api/invites')
    expect(listed.body).toEqual([
      {
        id: made.body.id,
        vaultId,
        vaultName: 'by mail',
        role: 'viewer',
        invitedBy: admin.email,
        createdAt: expect.any(String),
        expiresAt: made.body.expiresAt,
      },
    ])
    // Bob cannot accept or decline Alice's invite.
    expect((await bob.post(`/api/invites/${made.body.id}/accept`)).body.code).toBe('INVITE_NOT_FOUND')
    expect((await bob.delete(`/api/invites/${made.body.id}`)).body.code).toBe('INVITE_NOT_FOUND')

    const accepted = await alice.post(`/api/invites/${made.body.id}/accept`)
    expect(accepted.status).toBe(200)
    expect(accepted.body.vault).toMatchObject({ id: vaultId, role: 'viewer' })
    expect((await alice.get('/api/invites')).body).toEqual([])
    expect((await alice.post(`/api/invites/${made.body.id}/accept`)).status).toBe(404)

    expect((await bob.delete(`/api/invites/${toBob.body.id}`)).status).toBe(204)
    expect((await bob.get('/api/invites')).body).toEqual([])
    expect((await bob.post(`/api/invites/${toBob.body.id}/accept`)).body.code).toBe('INVITE_NOT_FOUND')
    expect((await bob.get(`/api/vaults/${vaultId}`)).status).toBe(404)

    // A member already in: 409; an e-mail of no account: a pending invite all the same (no account is revealed).
    expect((await admin.post(`/api/vaults/${vaultId}/invites`, { role: 'viewer', email: alice.email })).body.code).toBe('ALREADY_MEMBER')
    const nobody = uniqueEmail('nobody')
    const pending = await admin.post(`/api/vaults/${vaultId}/invites`, { role: 'viewer', email: nobody })
    expect(pending.status).toBe(201)
    expect((await admin.post(`/api/vaults/${vaultId}/invites`, { role: 'viewer', email: 'not-an-email' })).status).toBe(400)
    // The account made later with that e-mail sees it (sign-up is open on this server).
    const later = await signUp(server.url, nobody)
    expect((await later.get('/api/invites')).body.map((i: any) => i.id)).toEqual([pending.body.id])
    // A new invite for the same e-mail replaces the older one.
    const again = await admin.post(`/api/vaults/${vaultId}/invites`, { role: 'editor', email: nobody })
    expect((await later.get('/api/invites')).body.map((i: any) => [i.id, i.role])).toEqual([[again.body.id, 'editor']])

    const actions = (await vaultEvents(vaultId)).map((e) => [e.action, e.actor.email ?? null])
    expect(actions).toContainEqual(['invite.accept', alice.email])
    expect(actions).toContainEqual(['invite.decline', bob.email])
    expect(actions.filter(([action]) => action === 'invite.create')).toHaveLength(4)
  })

  test('expire after 7 days; a deleted vault takes its invites with it', async () => {
    const admin = await signUp(server.url)
    const vaultId = await createVault(admin)
    const guest = await signUp(server.url)
    const made = await admin.post(`/api/vaults/${vaultId}/invites`, { role: 'viewer', email: guest.email })
    const start = now
    try {
      now = start + 7 * DAY
      expect((await guest.get('/api/invites')).body).toEqual([])
      expect((await guest.post(`/api/invites/${made.body.id}/accept`)).body.code).toBe('INVITE_NOT_FOUND')
    } finally {
      now = start
    }
    expect((await guest.get('/api/invites')).body).toHaveLength(1)
    expect((await admin.delete(`/api/vaults/${vaultId}`)).status).toBe(204)
    expect((await guest.get('/api/invites')).body).toEqual([])
    expect(server.deps.store.accounts.data.vaultInvites.some((invite) => invite.vaultId === vaultId)).toBe(false)
  })
})
