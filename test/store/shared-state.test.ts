// The shared state's contract (src/store/shared-state.ts), the same for the memory one (file
// store) and the database one (src/store/postgres/state.ts): windows count all or nothing and
// take back, entries are claimed once and changed only at their version, expired ones are gone
// (and, in the database, deleted by the sweep), keys are stored as hashes.
import { afterAll, describe, expect, test } from 'bun:test'
import { Database } from '../../src/store/postgres/database'
import { migrate } from '../../src/store/postgres/migrations'
import { PgState } from '../../src/store/postgres/state'
import { MemoryState, type SharedState } from '../../src/store/shared-state'
import { freshDatabase, TEST_POSTGRES } from '../support/postgres'
import { describeNeeding } from '../support/requirements'

const missing = TEST_POSTGRES ? null : 'SVC_TEST_POSTGRES is not set (a PostgreSQL cluster: scripts/test.sh starts one)'
const databases: Database[] = []
afterAll(async () => {
  for (const db of databases) await db.close()
})

function contract(make: (now: () => number) => Promise<SharedState>) {
  test('a window counts all keys or none, answers the wait, and takes back', async () => {
    let clock = 1_000_000
    const state = await make(() => clock)
    const window = state.window('test', 60_000)
    const limits = [
      { key: 'pair', max: 2 },
      { key: 'wide', max: 3 },
    ]
    const first = await window.take(limits)
    expect(first).toEqual({ at: clock })
    clock += 1000
    expect(await window.take(limits)).toEqual({ at: clock })
    // The pair is full: nothing is counted, not even under the wider key.
    clock += 1000
    expect(await window.take(limits)).toEqual({ retryAfter: 58 })
    expect(await window.wait('wide', 3)).toBe(0)
    expect(await window.take([{ key: 'wide', max: 3 }])).toEqual({ at: clock })
    expect(await window.wait('wide', 3)).toBe(58)
    // Taking back the first frees a place.
    await window.remove(['pair'], 1_000_000)
    expect(await window.wait('pair', 2)).toBe(0)
    expect((await window.add('pair')).count).toBe(2)
    await window.clear('pair')
    expect(await window.wait('pair', 1)).toBe(0)
    // The window slides.
    clock += 60_000
    expect(await window.wait('wide', 1)).toBe(0)
  })

  test('entries: claimed once, changed at their version only, gone when expired', async () => {
    let clock = 5_000_000
    const state = await make(() => clock)
    const entries = state.entries('test')
    expect(await entries.create('code', { step: 1 }, clock + 1000)).toBe(true)
    expect(await entries.create('code', { step: 2 }, clock + 1000)).toBe(false)
    const entry = await entries.get<{ step: number }>('code')
    expect(entry?.value).toEqual({ step: 1 })
    expect(await entries.replace('code', entry!.version, { step: 3 })).toBe(true)
    expect(await entries.replace('code', entry!.version, { step: 4 })).toBe(false)
    expect(await entries.remove('code', entry!.version)).toBe(false)
    expect(await entries.remove('code')).toBe(true)
    expect(await entries.remove('code')).toBe(false)
    expect(await entries.increment('tries', 1, clock + 1000)).toBe(1)
    expect(await entries.increment('tries', 1, clock + 1000)).toBe(2)
    expect(await entries.create('late', true, clock + 1000)).toBe(true)
    clock += 1000
    expect(await entries.get('late')).toBeUndefined()
    expect(await entries.create('late', true, clock + 1000)).toBe(true)
    expect(await entries.increment('tries', 1, clock + 1000)).toBe(1)
  })

  test('parallel claims of one key: exactly one wins', async () => {
    const state = await make(() => 1_000)
    const entries = state.entries('race')
    const wins = await Promise.all(Array.from({ length: 50 }, () => entries.create('once', true, 10_000)))
    expect(wins.filter(Boolean)).toHaveLength(1)
    const window = state.window('race', 60_000)
    const taken = await Promise.all(Array.from({ length: 50 }, () => window.take([{ key: 'k', max: 7 }])))
    expect(taken.filter((t) => 'at' in t)).toHaveLength(7)
  })
}

describe('in memory (the file store)', () => {
  contract(async (now) => new MemoryState(now))
})

describeNeeding(missing)('in PostgreSQL', () => {
  const open = async (now: () => number) => {
    const db = new Database(await freshDatabase())
    databases.push(db)
    await migrate(db)
    return new PgState(db, now, { sweep: false })
  }
  contract(open)

  test('two instances share it; keys are hashes; the sweep deletes what expired', async () => {
    let clock = 1_000
    const url = await freshDatabase()
    const [one, two] = [new Database(url), new Database(url)]
    databases.push(one, two)
    await migrate(one)
    const a = new PgState(one, () => clock, { sweep: false })
    const b = new PgState(two, () => clock, { sweep: false })
    expect(await a.entries('device').create('ABCD-SECRET-CODE', { name: 'box' }, clock + 1000)).toBe(true)
    expect(await b.entries('device').create('ABCD-SECRET-CODE', { name: 'other' }, clock + 1000)).toBe(false)
    expect((await b.entries('device').get('ABCD-SECRET-CODE'))?.value).toEqual({ name: 'box' })
    await a.window('sign-in', 10_000).add('e:alice@example.test')
    const stored = JSON.stringify([
      ...(await one.run((sql) => sql`SELECT * FROM svc_state_entries`)),
      ...(await one.run((sql) => sql`SELECT * FROM svc_state_windows`)),
    ])
    expect(stored).not.toContain('ABCD-SECRET-CODE')
    expect(stored).not.toContain('alice')
    clock += 10_000
    expect(await a.sweep()).toBe(2)
    const [{ n }] = await one.run((sql) => sql`SELECT (SELECT count(*) FROM svc_state_entries) + (SELECT count(*) FROM svc_state_windows) AS n`)
    expect(Number(n)).toBe(0)
  })
})
