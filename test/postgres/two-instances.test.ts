// Two instances on one database behind Caddy (round robin, no sticky sessions), issue 34: a write
// on one is read on the other right after it answers; a sign-out, key revoke, password change,
// member removal and session cap on one are honoured by the other before its next answer with
// the old credential; concurrent writes to one vault through both lose nothing (the version
// check); an instance takes in a revocation by notification, without a request of its own.
// Instance A runs in this process (its state can be looked at), B is its own process.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startBalancer, type Balancer } from '../support/caddy'
import { Client, PASSWORD, sessionCookie, signUp, type Answer } from '../support/client'
import { PgStore } from '../../src/store/postgres/store'
import { freshDatabase } from '../support/postgres'
import { removeDir, spawnServer, startTestServer, type SpawnedServer, type TestServer } from '../support/server'
import { at, describeOnPostgres, login, takenIn, upstreamOf } from './support'

let a: TestServer
let b: SpawnedServer
let lb: Balancer

const suite = describeOnPostgres({ caddy: true })

suite('two instances on one database, behind Caddy', () => {
  beforeAll(async () => {
    const url = await freshDatabase()
    a = await startTestServer({ env: { SVC_DATABASE_URL: url } })
    b = await spawnServer({ env: { SVC_DATABASE_URL: url } })
    lb = await startBalancer([a.url, b.url])
  }, 30_000)
  afterAll(async () => {
    await lb?.stop()
    await b?.stop()
    await a?.stop()
    for (const server of [a, b]) if (server) removeDir(server.dataDir)
  })

  /** Both instances, each directly. */
  const both = () => [a.url, b.url]

  /**
   * Makes `change` through the balancer on B, then asks `after` through it: round robin sends it
   * to A, which must honour the change before it answers. A's notifications are held meanwhile:
   * it learns of B's write only by the refresh each request makes (NOTIFY is its own test below).
   */
  async function onOneThenOther(change: () => Promise<Answer>, after: () => Promise<Answer>) {
    const [hostA, hostB] = [new URL(a.url).host, new URL(b.url).host]
    // Round robin: once A has answered, the next request goes to B.
    for (let i = 0; i < 2; i++) if (upstreamOf(await lbProbe()) === hostA) break
    const store = a.deps.store as unknown as { notified: (payload: string) => void }
    const notified = store.notified
    store.notified = () => {}
    let changed: Answer
    let next: Answer
    try {
      changed = await change()
      next = await after()
    } finally {
      store.notified = notified
    }
    expect([upstreamOf(changed), upstreamOf(next)]).toEqual([hostB, hostA])
    return { changed, next }
  }
  const lbProbe = async (): Promise<Answer> => {
    const response = await fetch(`${lb.url}/healthz`)
    return { status: response.status, body: await response.text(), text: '', headers: response.headers }
  }

  async function userThroughBalancer() {
    const user = await signUp(lb.url)
    const category = await user.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })
    expect(category.status).toBe(201)
    return { user, categoryId: category.body.id as string }
  }

  test('a write on one is read on the other right after it answers', async () => {
    const { user, categoryId } = await userThroughBalancer()
    for (let i = 0; i < 6; i++) {
      const { changed, next } = await onOneThenOther(
        () => user.post('/api/entries', { categoryId, name: `shop-${i}`, value: `sk_live_${i}` }),
        () => user.get('/api/entries'),
      )
      expect(changed.status).toBe(201)
      const created = changed.body.id
      expect(next.body.map((entry: { id: string }) => entry.id)).toContain(created)
      // A change of the value, revealed on the other instance.
      const { next: revealed } = await onOneThenOther(
        () => user.put(`/api/entries/${created}`, { value: `sk_live_${i}_rotated` }),
        () => user.post(`/api/entries/${created}/reveal`),
      )
      expect(revealed.body.value).toBe(`sk_live_${i}_rotated`)
      // A deletion, gone on the other.
      const { next: gone } = await onOneThenOther(
        () => user.delete(`/api/entries/${created}`),
        () => user.get(`/api/entries/${created}`),
      )
      expect(gone.status).toBe(404)
    }
  })

  test('a sign-out on one: the other refuses the session at its next answer', async () => {
    const { user } = await userThroughBalancer()
    for (const base of both()) expect((await at(user, base).get('/api/auth/me')).status).toBe(200)
    const { changed, next } = await onOneThenOther(
      () => user.post('/api/auth/logout'),
      () => user.get('/api/auth/me'),
    )
    expect(changed.status).toBe(204)
    expect(next.status).toBe(401)
    for (const base of both()) expect((await at(user, base).get('/api/auth/me')).status).toBe(401)
  })

  test('a key revoked on one: the other refuses it at its next answer', async () => {
    const { user } = await userThroughBalancer()
    await user.reauth()
    const created = await user.post('/api/access-keys', { name: 'deploy', scopes: ['entries:read'] })
    expect(created.status).toBe(201)
    const key = user.withKey(created.body.key)
    for (const base of both()) expect((await at(key, base).get('/api/entries')).status).toBe(200)
    const { changed, next } = await onOneThenOther(
      () => user.delete(`/api/access-keys/${created.body.id}`),
      () => key.get('/api/entries'),
    )
    expect(changed.status).toBe(204)
    expect(next.status).toBe(401)
    for (const base of both()) expect((await at(key, base).get('/api/entries')).status).toBe(401)
  })

  test('a password change on one: the other refuses the other sessions and the old password at once', async () => {
    const { user } = await userThroughBalancer()
    const other = await login(lb.url, user.email)
    for (const base of both()) expect((await at(other, base).get('/api/auth/me')).status).toBe(200)
    const { changed, next } = await onOneThenOther(
      () => user.post('/api/account/password', { currentPassword: PASSWORD, newPassword: 'a new horse battery' }),
      () => other.get('/api/auth/me'),
    )
    expect(changed.status).toBe(204)
    expect(next.status).toBe(401)
    for (const base of both()) {
      expect((await at(other, base).get('/api/auth/me')).status).toBe(401)
      // The session that changed it stays.
      expect((await at(user, base).get('/api/auth/me')).status).toBe(200)
      expect((await at(user, base).anonymous().post('/api/auth/login', { email: user.email, password: PASSWORD })).status).toBe(401)
      expect((await at(user, base).anonymous().post('/api/auth/login', { email: user.email, password: 'a new horse battery' })).status).toBe(200)
    }
  })

  test('a member removed on one: the other refuses them (and their bound key) at its next answer', async () => {
    const { user: admin } = await userThroughBalancer()
    const member = await signUp(lb.url)
    const vault = await admin.post('/api/vaults', { name: 'team' })
    expect(vault.status).toBe(201)
    const base = `/api/vaults/${vault.body.id}`
    const invite = await admin.post(`${base}/invites`, { role: 'editor' })
    expect(invite.status).toBe(201)
    expect((await member.post('/api/invites/accept', { token: invite.body.token })).status).toBe(200)
    const category = await admin.post(`${base}/categories`, { name: 'api', keyType: 'simple', envVarName: 'API_KEY' })
    expect(category.status).toBe(201)
    await member.reauth()
    const bound = await member.post('/api/access-keys', { name: 'ci', scopes: ['entries:read'], vaultId: vault.body.id })
    expect(bound.status).toBe(201)
    const key = member.withKey(bound.body.key)
    for (const origin of both()) {
      expect((await at(member, origin).get(`${base}/entries`)).status).toBe(200)
      expect((await at(key, origin).get(`${base}/entries`)).status).toBe(200)
    }
    const { changed, next } = await onOneThenOther(
      () => admin.delete(`${base}/members/${member.user.id}`),
      () => member.get(`${base}/entries`),
    )
    expect(changed.status).toBe(204)
    expect(next.status).toBe(404)
    const { next: keyAnswer } = await onOneThenOther(
      () => admin.get(`${base}/members`),
      () => key.get(`${base}/entries`),
    )
    expect(keyAnswer.status).toBe(401)
    for (const origin of both()) {
      expect((await at(member, origin).get(`${base}/entries`)).status).toBe(404)
      expect((await at(member, origin).post(`${base}/entries`, { categoryId: category.body.id, name: 'late', value: 'x' })).status).toBe(404)
      expect((await at(key, origin).get(`${base}/entries`)).status).toBe(401)
    }
  })

  test('the session cap reached on one: the other refuses the oldest session at its next answer', async () => {
    const { user } = await userThroughBalancer()
    const oldest = user
    // 49 more sessions made directly on A (a password sign-in each would take seconds): 50 in all.
    const record = a.deps.accounts.userById(user.user.id)!
    for (let i = 0; i < 49; i++) await a.deps.accounts.startSession(record)
    for (const base of both()) expect((await at(oldest, base).get('/api/auth/me')).status).toBe(200)
    // The 51st, by a sign-in through the balancer, ends the oldest.
    const { changed, next } = await onOneThenOther(
      () => user.anonymous().post('/api/auth/login', { email: user.email, password: PASSWORD }),
      () => oldest.get('/api/auth/me'),
    )
    expect(changed.status).toBe(200)
    const newest = new Client(lb.url, { cookie: sessionCookie(changed.headers) })
    expect((await newest.get('/api/account/sessions')).body).toHaveLength(50)
    expect(next.status).toBe(401)
    for (const base of both()) expect((await at(oldest, base).get('/api/auth/me')).status).toBe(401)
  })

  test('concurrent writes to one vault through both instances: none lost (the version check, a reload and a retry)', async () => {
    const { user, categoryId } = await userThroughBalancer()
    // 40 at once, alternating between the instances: each commit races the other's for the next version.
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => at(user, both()[i % 2]).post('/api/entries', { categoryId, name: `race-${i}`, value: `sk_race_${i}` })),
    )
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 201))
    const ids = answers.map((answer) => answer.body.id as string).sort()
    for (const base of both()) {
      const listed = await at(user, base).get('/api/entries')
      expect(listed.body.map((entry: { id: string }) => entry.id).sort()).toEqual(ids)
    }
    // Values too, each read on the instance that did not write it.
    for (let i = 0; i < answers.length; i += 7) {
      expect((await at(user, both()[(i + 1) % 2]).post(`/api/entries/${answers[i].body.id}/reveal`)).body.value).toBe(`sk_race_${i}`)
    }
  })

  test("a write that lost the race for its version is made again on the winner's data, not over it", async () => {
    const { user, categoryId } = await userThroughBalancer()
    expect((await at(user, a.url).get('/api/entries')).status).toBe(200)
    const store = a.deps.store as PgStore
    const vault = (await store.vault(user.user.id, () => {
      throw new Error('the vault exists')
    })) as unknown as { write: () => Promise<void> }
    // Hold A's next write at the database's door until B has written the same version.
    let reached!: () => void
    const atDoor = new Promise<void>((resolve) => (reached = resolve))
    let open!: () => void
    const door = new Promise<void>((resolve) => (open = resolve))
    const write = vault.write
    vault.write = async function (this: unknown) {
      vault.write = write
      reached()
      await door
      return write.call(this)
    }
    const conflicts = store.db.stats.conflicts
    const onA = at(user, a.url).post('/api/entries', { categoryId, name: 'from-a', value: 'sk_from_a' })
    await atDoor
    const onB = await at(user, b.url).post('/api/entries', { categoryId, name: 'from-b', value: 'sk_from_b' })
    expect(onB.status).toBe(201)
    open()
    expect((await onA).status).toBe(201)
    for (const base of both()) {
      const names = (await at(user, base).get('/api/entries')).body.map((entry: { name: string }) => entry.name)
      expect(names.sort()).toEqual(['from-a', 'from-b'])
    }
    expect(store.db.stats.conflicts).toBeGreaterThan(conflicts)
    expect((await at(user, b.url).post(`/api/entries/${(await onA).body.id}/reveal`)).body.value).toBe('sk_from_a')
    expect((await at(user, a.url).post(`/api/entries/${onB.body.id}/reveal`)).body.value).toBe('sk_from_b')
  })

  test('a revocation reaches an instance by notification, without a request of its own', async () => {
    const { user } = await userThroughBalancer()
    for (const base of both()) expect((await at(user, base).get('/api/auth/me')).status).toBe(200)
    const holds = () => a.deps.store.accounts.data.sessions.some((session) => session.userId === user.user.id)
    expect(holds()).toBe(true)
    // A takes in other instances' writes into its account indexes (takeIn): wait for that event.
    // No request reaches A meanwhile: only B's NOTIFY can tell it.
    await takenIn(
      a,
      async () => expect((await at(user, b.url).post('/api/auth/logout')).status).toBe(204),
      () => !holds(),
      'A dropped the session B ended',
    )
    expect((await at(user, a.url).get('/api/auth/me')).status).toBe(401)
  })
})
