// No lost updates: hundreds of interleaved writes from several users, each through its session
// and two access keys at once. Afterwards, and again after a kill -9 and a restart (so what is
// checked is what the files and change logs on disk hold, not what a clean stop rewrote from
// memory), every count and value is exact.
import { afterAll, expect, test } from 'bun:test'
import { signUp, type Client } from '../support/client'
import { removeDir, spawnServer, tempDir, type SpawnedServer } from '../support/server'
import { makeActor, modules, startWorkload, unparsableJson, verifyLanes, type Actor } from './support'

const dataDir = tempDir('svc-vault-concurrency-')
const ENV = { SVC_SIGNUP: 'open' }
let server: SpawnedServer
afterAll(async () => {
  await server?.kill().catch(() => {})
  removeDir(dataDir)
})

const pick = <T>(items: T[]) => items[Math.floor(Math.random() * items.length)]

async function counts(actor: Actor) {
  const s = actor.session
  return {
    categories: (await s.get('/api/categories')).body.length as number,
    keys: (await s.get('/api/access-keys')).body.length as number,
  }
}

/** Every category of the actor, as { id: [name, description, icon] }: the values, not only the count. */
async function categoryValues(actor: Actor) {
  const listed = (await actor.session.get('/api/categories')).body as { id: string; name: string; description: string | null; icon: string | null }[]
  return Object.fromEntries(listed.map((c) => [c.id, [c.name, c.description, c.icon]]))
}

test('interleaved writes from several users and keys lose nothing', async () => {
  server = await spawnServer({ dataDir, env: ENV })
  const mods = await modules(server.url)
  const actors: Actor[] = []
  for (let i = 0; i < 3; i++) actors.push(await makeActor(await signUp(server.url), mods))
  const before = await Promise.all(actors.map(counts))

  // Lanes (create, updates, delete on one record each) and bursts of plain creates, all at once.
  const load = startWorkload(actors, mods, 90, 'lane')
  const burst = actors.map((actor, a) =>
    Promise.all([
      ...Array.from({ length: 60 }, (_, i) =>
        pick(actor.writers).post('/api/categories', { name: `burst-${a}-${i}`, keyType: 'simple', envVarName: `B_${i}` }),
      ),
      ...Array.from({ length: 20 }, (_, i) => actor.session.post('/api/access-keys', { name: `burst-${a}-${i}`, scopes: ['stats:read'] })),
    ]),
  )
  const answers = await Promise.all(burst)
  await load.done

  for (const [a, actorAnswers] of answers.entries()) {
    expect(actorAnswers.map((x) => x.status).filter((s) => s !== 201)).toEqual([])
    const categoryLanes = load.lanes.filter((lane) => lane.actor === actors[a] && lane.kind === 'category')
    const keyLanes = load.lanes.filter((lane) => lane.actor === actors[a] && lane.kind === 'access-key')
    expect(categoryLanes.every((lane) => lane.acked === lane.sent.length)).toBe(true)
    // Lanes end by deleting their record: only the bursts remain.
    expect(await counts(actors[a])).toEqual({ categories: before[a].categories + 60, keys: before[a].keys + 20 })
    expect(categoryLanes.length + keyLanes.length).toBeGreaterThan(0)
    const names = new Set((await actors[a].session.get('/api/categories')).body.map((c: { name: string }) => c.name))
    for (let i = 0; i < 60; i++) expect(names.has(`burst-${a}-${i}`)).toBe(true)
  }
  expect(load.lanes.filter((lane) => lane.acked !== lane.sent.length || lane.broken)).toEqual([])
  expect(await verifyLanes(load.lanes, (lane) => [lane.sent[lane.sent.length - 1]])).toEqual([])

  // Values exact: every record updated by its own sequence ends at that sequence's last value.
  const updates = await Promise.all(
    actors.map(async (actor, a) => {
      const made = await actor.session.post('/api/categories', { name: `counter-${a}`, keyType: 'group' })
      let last = ''
      for (let round = 0; round < 5; round++) {
        // Concurrent updates of different fields of the same record never undo one another.
        const writes = await Promise.all(
          actor.writers.map((w, i) =>
            w.put(
              `/api/categories/${made.body.id}`,
              i === 0 ? { name: `counter-${a}-${round}` } : i === 1 ? { description: `d${round}` } : { icon: `icon-${round}` },
            ),
          ),
        )
        expect(writes.map((x) => x.status)).toEqual(actor.writers.map(() => 200))
        last = `counter-${a}-${round}`
      }
      return { id: made.body.id as string, name: last }
    }),
  )
  const check = async (client: Client, id: string, name: string, round = 4) => {
    const got = (await client.get(`/api/categories/${id}`)).body
    expect(got).toMatchObject({ name, description: `d${round}`, icon: `icon-${round}` })
  }
  for (const [a, u] of updates.entries()) await check(actors[a].session, u.id, u.name)

  // The same after kill -9 and a restart: it was all on disk. No clean stop, which would rewrite
  // every vault from memory and hide a change log that lost or garbled lines.
  const expected = await Promise.all(actors.map(counts))
  const expectedValues = await Promise.all(actors.map(categoryValues))
  // lastUsedAt is bookkeeping that reaches disk later (commitSoon): left out.
  const keyValues = (actor: Actor) => actor.session.get('/api/access-keys').then((a) => a.body.map(({ lastUsedAt: _, ...key }: { lastUsedAt: unknown }) => key))
  const expectedKeys = await Promise.all(actors.map(keyValues))
  await server.kill()
  expect(unparsableJson(dataDir)).toEqual([])
  server = await spawnServer({ dataDir, env: ENV })
  for (const actor of actors) for (const client of actor.writers) (client as { base: string }).base = server.url
  expect(await Promise.all(actors.map(counts))).toEqual(expected)
  expect(await Promise.all(actors.map(categoryValues))).toEqual(expectedValues)
  expect(await Promise.all(actors.map(keyValues))).toEqual(expectedKeys)
  for (const [a, u] of updates.entries()) await check(actors[a].session, u.id, u.name)
  expect(await verifyLanes(load.lanes, (lane) => [lane.sent[lane.sent.length - 1]])).toEqual([])
  if (mods.stats) {
    for (const actor of actors) {
      const stats = (await actor.session.get('/api/stats')).body
      expect(stats.totalCategories).toBe((await actor.session.get('/api/categories')).body.length)
    }
  }
  await server.kill()
}, 30_000)
