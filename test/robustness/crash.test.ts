// Crash safety: kill -9 the real server in the middle of hundreds of concurrent writes, restart it
// on the same data folder, and find every acknowledged write, at several kill points.
import { afterAll, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { signUp } from '../support/client'
import { ON_POSTGRES } from '../support/postgres'
import { removeDir, spawnServer, tempDir, type SpawnedServer } from '../support/server'
import { listFiles, makeActor, modules, startWorkload, unparsableJson, verifyLanes, type Actor, type Lane } from './support'

const dataDir = tempDir('svc-vault-crash-')
let server: SpawnedServer | undefined
afterAll(async () => {
  await server?.kill()
  removeDir(dataDir)
})

test('every acknowledged write survives kill -9, at several kill points', async () => {
  server = await spawnServer({ dataDir, env: { SVC_SIGNUP: 'open' } })
  const mods = await modules(server.url)
  const actors: Actor[] = []
  for (let i = 0; i < 3; i++) actors.push(await makeActor(await signUp(server.url), mods))
  const lanes: Lane[] = []

  // Kill after a few, after many, and at a random point of the acknowledged writes.
  for (const [round, killAfter] of [5, 150, 60 + Math.floor(Math.random() * 200)].entries()) {
    // Clients keep their cookies and keys; only the address changes with each start.
    for (const actor of actors) for (const client of actor.writers) (client as { base: string }).base = server.url
    const load = startWorkload(actors, mods, 120, `r${round}`)
    lanes.push(...load.lanes)
    let finished = false
    void load.done.then(() => (finished = true))
    while (load.acked() < killAfter && !finished) await Bun.sleep(1)
    const finishedFirst = finished
    await server.kill()
    await load.done
    if (process.env.DEBUG_ROBUSTNESS)
      console.log(`round ${round}: killed after ${load.acked()} acknowledged, ${load.lanes.reduce((n, l) => n + l.sent.length, 0)} sent`)
    // Killed at the chosen point (or after the whole load, when it finished first).
    const total = load.lanes.reduce((n, lane) => n + lane.sent.length, 0)
    expect(load.acked()).toBeGreaterThanOrEqual(finishedFirst ? total : killAfter)

    // Whatever the moment, every document on disk is whole (on PostgreSQL nothing of a user is in the folder).
    expect(unparsableJson(dataDir)).toEqual([])
    expect(existsSync(join(dataDir, 'accounts.json'))).toBe(!ON_POSTGRES)

    server = await spawnServer({ dataDir, env: { SVC_SIGNUP: 'open' } })
    // The restart cleared the temporary files the crash left behind.
    expect(listFiles(dataDir).filter((name) => name.endsWith('.tmp'))).toEqual([])
    for (const actor of actors) for (const client of actor.writers) (client as { base: string }).base = server.url
    // Every acknowledged write of every round so far: each lane's record shows its last
    // acknowledged state (or a later one that was sent but not answered before the kill).
    expect(lanes.filter((lane) => lane.acked > 0 && !lane.id)).toEqual([])
    expect(await verifyLanes(lanes)).toEqual([])
  }
  expect(lanes.reduce((n, lane) => n + lane.acked, 0)).toBeGreaterThan(0)
  await server.stop()
}, 30_000)
