// The database going away mid-load (issue 34): `pg_ctl stop -m fast`, then start, on a cluster of
// the test's own. While it is away every request answers 503 STORE_UNAVAILABLE within a second
// (none hangs) and GET /readyz answers 503; once it is back both instances answer again without a
// restart (the pool reconnects, LISTEN listens again), and nothing they acknowledged is lost.
import { afterAll, expect, test } from 'bun:test'
import { PgStore } from '../../src/store/postgres/store'
import { signUp, type Answer } from '../support/client'
import { removeDir, spawnServer, startTestServer, type SpawnedServer, type TestServer } from '../support/server'
import { ownCluster, type Cluster } from '../support/pg-cluster'
import { at, describeOnPostgres, takenIn, whenEvent } from './support'

const cleanup: (() => Promise<unknown>)[] = []
afterAll(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => {})
})

/** A request and how long its answer took (a refused connection is an answer of status 0). */
async function timed(request: () => Promise<Answer>): Promise<{ answer: Answer | null; ms: number; error?: string }> {
  const started = performance.now()
  try {
    const answer = await request()
    return { answer, ms: performance.now() - started }
  } catch (error) {
    return { answer: null, ms: performance.now() - started, error: String(error) }
  }
}

/** A server stopped (and its folder removed) after the tests. */
function stopLater<S extends { stop(): Promise<unknown>; dataDir: string }>(server: S): S {
  cleanup.push(async () => {
    await server.stop()
    removeDir(server.dataDir)
  })
  return server
}

/** A cluster of the test's own with two instances on it (A in this process, B its own), a user and a category. */
async function twoInstancesOnOwnCluster() {
  const cluster: Cluster = await ownCluster()
  cleanup.push(() => cluster.remove())
  const a: TestServer = stopLater(await startTestServer({ env: { SVC_DATABASE_URL: cluster.url } }))
  const b: SpawnedServer = stopLater(await spawnServer({ env: { SVC_DATABASE_URL: cluster.url } }))
  const user = await signUp(a.url)
  const category = await user.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })
  expect(category.status).toBe(201)
  return { cluster, a, b, both: [a.url, b.url], user, categoryId: category.body.id as string }
}

/** /readyz's status once it answers 200 again by itself (no restart), or its last after 5 s. */
async function readyAgain(base: string): Promise<number> {
  let ready = 0
  for (let tries = 0; tries < 100 && ready !== 200; tries++) {
    ready = (await fetch(`${base}/readyz`)).status
    if (ready !== 200) await Bun.sleep(50)
  }
  return ready
}

describeOnPostgres({ ownCluster: true })('the database going away', () => {
  test('stopped and started mid-load: 503 STORE_UNAVAILABLE within a second, /readyz 503, recovery without a restart, nothing acknowledged lost', async () => {
    const { cluster, a, b, both, user, categoryId } = await twoInstancesOnOwnCluster()

    type Phase = 'up' | 'stopping' | 'down' | 'starting' | 'back'
    let phase: Phase = 'up'
    const acknowledged: { id: string; value: string }[] = []
    const whileDown: { base: string; status: number; code?: string; ms: number; error?: string }[] = []
    const ackedIn: Record<Phase, number> = { up: 0, stopping: 0, down: 0, starting: 0, back: 0 }
    let n = 0
    const write = async (base: string) => {
      const i = n++
      const value = `sk_away_${i}_${crypto.randomUUID()}`
      const began = phase
      const { answer, ms, error } = await timed(() => at(user, base).post('/api/entries', { categoryId, name: `away-${i}`, value }))
      if (answer?.status === 201) {
        acknowledged.push({ id: answer.body.id, value })
        ackedIn[phase]++
      }
      // Only requests begun and ended while it was away: the bound holds for those.
      if (began === 'down' && phase === 'down') whileDown.push({ base, status: answer?.status ?? 0, code: answer?.body?.code, ms, error })
      for (const listener of progress) listener()
    }
    const progress: (() => void)[] = []
    const until = (check: () => boolean, what: string) => whenEvent((fire) => progress.push(fire), check, 30_000, what)
    // Four writers, alternating between the instances, until enough was written after the return.
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let k = w; ackedIn.back < 20; k++) {
        await write(both[k % 2])
      }
    })
    const driver = (async () => {
      await until(() => ackedIn.up >= 20, '20 writes acknowledged before the stop')
      phase = 'stopping'
      await cluster.stop()
      phase = 'down'
      // While away: /readyz and a read answer 503 on both, within a second.
      for (const base of both) {
        const ready = await timed(() => at(user, base).anonymous().get('/readyz'))
        expect(ready.answer?.status).toBe(503)
        expect(ready.ms).toBeLessThan(1000)
        const read = await timed(() => at(user, base).get('/api/entries'))
        expect({ status: read.answer?.status, code: read.answer?.body?.code }).toEqual({ status: 503, code: 'STORE_UNAVAILABLE' })
        expect(read.ms).toBeLessThan(1000)
      }
      await until(() => whileDown.length >= 20, '20 answers while away')
      phase = 'starting'
      await cluster.start()
      // Back: both instances answer /readyz 200 again by themselves (no restart).
      for (const base of both) expect(await readyAgain(base)).toBe(200)
      phase = 'back'
    })()
    await Promise.all([driver, ...writers])

    expect(whileDown.length).toBeGreaterThanOrEqual(20)
    for (const answer of whileDown) {
      expect({ status: answer.status, code: answer.code, error: answer.error }).toEqual({ status: 503, code: 'STORE_UNAVAILABLE', error: undefined })
      expect(answer.ms).toBeLessThan(1000)
    }
    expect(new Set(whileDown.map((answer) => answer.base))).toEqual(new Set(both))
    expect(ackedIn.back).toBeGreaterThanOrEqual(20)
    expect(ackedIn.down).toBe(0)

    // Nothing acknowledged lost: read through both, and through an instance started now.
    const fresh = stopLater(await startTestServer({ env: { SVC_DATABASE_URL: cluster.url } }))
    for (const base of [...both, fresh.url]) {
      const listed = await at(user, base).get('/api/entries')
      expect(listed.status).toBe(200)
      const ids = new Set((listed.body as { id: string }[]).map((entry) => entry.id))
      expect(acknowledged.filter((entry) => !ids.has(entry.id))).toEqual([])
    }
    for (const entry of acknowledged) expect((await at(user, fresh.url).post(`/api/entries/${entry.id}/reveal`)).body.value).toBe(entry.value)

    // LISTEN is on again: a sign-out on B reaches A by notification, without a request to A.
    const store = a.deps.store as PgStore
    expect(store.db.stats.reconnects).toBeGreaterThan(0)
    const signedIn = await signUp(b.url)
    expect((await at(signedIn, a.url).get('/api/auth/me')).status).toBe(200)
    const holds = () => store.accounts.data.sessions.some((session) => session.userId === signedIn.user.id)
    await takenIn(
      a,
      async () => expect((await signedIn.post('/api/auth/logout')).status).toBe(204),
      () => !holds(),
      'A took in the sign-out by notification after the reconnect',
    )
    console.log(
      `acknowledged ${acknowledged.length} writes; ${whileDown.length} answers while away, slowest ${Math.max(...whileDown.map((x) => x.ms)).toFixed(0)} ms`,
    )
  }, 60_000)

  test('a cut network (every process of the cluster stopped, nothing answers): 503 STORE_UNAVAILABLE within a second, never hanging; back by itself', async () => {
    const { cluster, both, user, categoryId } = await twoInstancesOnOwnCluster()
    const acknowledged: { id: string; value: string }[] = []
    let n = 0
    const write = (base: string) => {
      const value = `sk_cut_${n++}`
      return at(user, base)
        .post('/api/entries', { categoryId, name: value, value })
        .then((answer) => {
          if (answer.status === 201) acknowledged.push({ id: answer.body.id, value })
          return answer
        })
    }
    for (const base of both) expect((await write(base)).status).toBe(201)

    cluster.pause()
    const cut: { what: string; status?: number; code?: string; ms: number; error?: string }[] = []
    try {
      // Two rounds (the second finds the pool's connections still held by the first's queries).
      for (let round = 0; round < 2; round++) {
        const asked = both.flatMap((base) => [
          ['read', () => at(user, base).get('/api/entries')],
          ['write', () => write(base)],
          ['readyz', () => at(user, base).anonymous().get('/readyz')],
        ]) as [string, () => Promise<Answer>][]
        const answers = await Promise.all(asked.map(([, request]) => timed(request)))
        answers.forEach((answer, i) =>
          cut.push({ what: asked[i][0], status: answer.answer?.status, code: answer.answer?.body?.code, ms: answer.ms, error: answer.error }),
        )
      }
    } finally {
      cluster.resume()
    }
    for (const answer of cut) {
      expect({ what: answer.what, status: answer.status, error: answer.error }).toEqual({ what: answer.what, status: 503, error: undefined })
      if (answer.what !== 'readyz') expect(answer.code).toBe('STORE_UNAVAILABLE')
      // Within a second, whatever the request's queries (they share one bound, under a second).
      expect(answer.ms).toBeLessThan(1000)
    }

    for (const base of both) {
      expect(await readyAgain(base)).toBe(200)
      expect((await write(base)).status).toBe(201)
    }
    for (const base of both) {
      const ids = new Set(((await at(user, base).get('/api/entries')).body as { id: string }[]).map((entry) => entry.id))
      expect(acknowledged.filter((entry) => !ids.has(entry.id))).toEqual([])
    }
    console.log(`cut network: answers in ${Math.min(...cut.map((x) => x.ms)).toFixed(0)} to ${Math.max(...cut.map((x) => x.ms)).toFixed(0)} ms`)
  }, 60_000)
})
