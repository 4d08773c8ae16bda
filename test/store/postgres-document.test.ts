// The PostgreSQL store's documents, two stores on one database standing for two instances:
// the version check (a write made on stale data is made again on the new data, never lost),
// the refresh before a read, and the NOTIFY that brings a document up to date by itself.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { StoreUnavailableError } from '../../src/store/errors'
import { beginRequest, QUERY_TIMEOUT_MS } from '../../src/store/postgres/database'
import { PgStore } from '../../src/store/postgres/store'
import { FORMAT_VERSION, type VaultDocument } from '../../src/store/records'
import { freshDatabase, missingPostgres } from '../support/postgres'
import { describeNeeding } from '../support/requirements'

const vaultOf = (userId: string): VaultDocument =>
  ({
    version: FORMAT_VERSION,
    userId,
    dataKey: 'sealed-data-key',
    categories: [],
    entries: [],
    twoFactor: [],
    envProjects: [],
    envFiles: [],
    versions: [],
    trash: [],
  }) as unknown as VaultDocument

const category = (id: string, name: string) =>
  ({ id, userId: 'u', name, keyType: 'simple', envVarName: null, icon: null, createdAt: '', updatedAt: '' }) as never

describeNeeding(missingPostgres)('PostgreSQL documents', () => {
  let a: PgStore
  let b: PgStore
  const userId = crypto.randomUUID()
  beforeAll(async () => {
    const url = await freshDatabase()
    a = await PgStore.open(url, { createKeyCheck: () => 'check' })
    b = await PgStore.open(url, { createKeyCheck: () => 'other' })
  })
  afterAll(async () => {
    await a?.close()
    await b?.close()
  })

  /**
   * A new vault that B has written once (a category named `name`) since instance C read it. C has
   * no listener: only its own reads (a refresh, a write's conflict) bring B's write in.
   */
  async function behindB(name: string) {
    const id = crypto.randomUUID()
    await a.vault(id, () => vaultOf(id))
    const c = await PgStore.open(a.db.url, { createKeyCheck: () => 'x', readOnly: true })
    const onC = await c.vault(id, () => vaultOf(id))
    const onB = await b.vault(id, () => vaultOf(id))
    await onB.update((_, write) => write.categories.push(category(crypto.randomUUID(), name)))
    return { id, c, onC, db: c.db, run: c.db.run.bind(c.db) }
  }

  test('both instances see one accounts document (the first key check wins)', () => {
    expect(a.accounts.data.keyCheck).toBe('check')
    expect(b.accounts.data.keyCheck).toBe('check')
  })

  test('a write on one is read on the other after its refresh', async () => {
    const onA = await a.vault(userId, () => vaultOf(userId))
    await onA.update((_, write) => write.categories.push(category(crypto.randomUUID(), 'first')))
    const onB = await b.vault(userId, () => vaultOf(userId))
    expect(onB.data.categories.map((c) => c.name)).toContain('first')
  })

  test('writes made at once on both, each on data the other has not seen: none is lost', async () => {
    const onA = await a.vault(userId, () => vaultOf(userId))
    const onB = await b.vault(userId, () => vaultOf(userId))
    const names = Array.from({ length: 20 }, (_, i) => `n${i}`)
    await Promise.all(names.map((name, i) => (i % 2 ? onA : onB).update((_, write) => write.categories.push(category(crypto.randomUUID(), name)))))
    await onA.refresh()
    await onB.refresh()
    for (const doc of [onA, onB]) expect(doc.data.categories.map((c) => c.name)).toEqual(expect.arrayContaining(names))
    expect(onA.data.categories.map((c) => c.id)).toEqual(onB.data.categories.map((c) => c.id))
    expect(a.db.stats.conflicts + b.db.stats.conflicts).toBeGreaterThan(0)
  })

  test('a mutation that checks the data runs again on the new data after a conflict', async () => {
    const onA = await a.vault(userId, () => vaultOf(userId))
    const onB = await b.vault(userId, () => vaultOf(userId))
    // Both try to take one name; the check inside the mutation must see the other's write.
    const take = (doc: typeof onA) =>
      doc.update((data, write) => {
        if (data.categories.some((c) => c.name === 'unique')) return false
        write.categories.push(category(crypto.randomUUID(), 'unique'))
        return true
      })
    const results = await Promise.all([take(onA), take(onB)])
    expect(results.filter(Boolean)).toHaveLength(1)
    await onA.refresh()
    expect(onA.data.categories.filter((c) => c.name === 'unique')).toHaveLength(1)
  })

  test('a read that begins while a refresh is under way waits for one that began after it (never shares an older one)', async () => {
    const id = crypto.randomUUID()
    const onA = await a.vault(id, () => vaultOf(id))
    const onB = await b.vault(id, () => vaultOf(id))
    // A's refresh has read the database, and its answer is held back (a busy instance).
    const db = a.db
    const run = db.run.bind(db)
    let read!: () => void
    const queried = new Promise<void>((resolve) => (read = resolve))
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    db.run = (async (query: never, options?: never) => {
      const rows = await run(query, options)
      read()
      await gate
      return rows
    }) as typeof db.run
    try {
      const first = onA.refresh()
      await Promise.race([queried, first.then(() => Promise.reject(new Error('the refresh answered without reading the database')))])
      // B's write is acknowledged after A's query read; then a request reaches A.
      await onB.update((_, write) => write.categories.push(category(crypto.randomUUID(), 'after-the-read')))
      const answered = beginRequest()
      const second = onA.refresh()
      answered()
      db.run = run
      release()
      await first
      await second
      expect(onA.data.categories.map((c) => c.name)).toContain('after-the-read')
    } finally {
      db.run = run
      release()
    }
  })

  test('a refresh that ended before a request began does not serve it (the request reads again)', async () => {
    const id = crypto.randomUUID()
    await a.vault(id, () => vaultOf(id))
    // No listener: nothing but the request's own refresh can bring the write in.
    const c = await PgStore.open(a.db.url, { createKeyCheck: () => 'x', readOnly: true })
    try {
      const onC = await c.vault(id, () => vaultOf(id))
      await onC.refresh()
      const onB = await b.vault(id, () => vaultOf(id))
      await onB.update((_, write) => write.categories.push(category(crypto.randomUUID(), 'after-the-refresh')))
      const answered = beginRequest()
      try {
        await onC.refresh()
      } finally {
        answered()
      }
      expect(onC.data.categories.map((c) => c.name)).toContain('after-the-refresh')
      // A request that began before the last read needs none of its own.
      const queries = c.db.stats.queries
      const again = beginRequest()
      await onC.refresh()
      await onC.refresh()
      again()
      expect(c.db.stats.queries - queries).toBe(1)
    } finally {
      await c.close()
    }
  })

  test('a write of its own that begins while its refresh is under way: the request waits for it, then reads what another instance acknowledged first', async () => {
    const { c, onC, db, run } = await behindB('acknowledged-first')
    try {
      // The refresh's answer is held at the first gate; whatever C reads after it, at the second.
      let read!: () => void
      const queried = new Promise<void>((resolve) => (read = resolve))
      const gates = [Promise.withResolvers<void>(), Promise.withResolvers<void>()]
      let calls = 0
      db.run = (async (query: never, options?: never) => {
        const gate = gates[Math.min(calls++, 1)]
        const rows = await run(query, options)
        read()
        await gate.promise
        return rows
      }) as typeof db.run
      const answered = beginRequest()
      const refreshed = onC.refresh()
      answered()
      const seen = refreshed.then(() => onC.data.categories.map((c) => c.name))
      await Promise.race([queried, refreshed.then(() => Promise.reject(new Error('the refresh answered without reading the database')))])
      // C writes on the version it holds (B's is newer): its write is under way when the answer comes.
      const written = onC.update((_, write) => write.categories.push(category(crypto.randomUUID(), 'mine')))
      while (!onC.writing) await new Promise((resolve) => setImmediate(resolve))
      gates[0].resolve()
      await new Promise((resolve) => setImmediate(resolve))
      gates[1].resolve()
      expect(await seen).toContain('acknowledged-first')
      await written
      await onC.refresh()
      expect(onC.data.categories.map((c) => c.name)).toEqual(expect.arrayContaining(['acknowledged-first', 'mine']))
    } finally {
      db.run = run
      await c.close()
    }
  })

  test('an update that comes while a conflict is being read again is made on the new data: never acknowledged unwritten', async () => {
    const { id, c, onC, db, run } = await behindB('theirs')
    try {
      // C's first write conflicts (B took the version); the read of the document that follows is
      // held until a second update has been made, on the data C held before that read.
      const reading = Promise.withResolvers<void>()
      const gate = Promise.withResolvers<void>()
      let calls = 0
      db.run = (async (query: never, options?: never) => {
        if (calls++ === 1) {
          reading.resolve()
          await gate.promise
        }
        return run(query, options)
      }) as typeof db.run
      const first = onC.update((_, write) => write.categories.push(category(crypto.randomUUID(), 'one')))
      await reading.promise
      const second = onC.update((_, write) => write.categories.push(category(crypto.randomUUID(), 'two')))
      gate.resolve()
      await Promise.all([first, second])
      db.run = run
      // Both acknowledged: both in the database (read by an instance that holds nothing of it yet).
      const d = await PgStore.open(a.db.url, { createKeyCheck: () => 'y', readOnly: true })
      try {
        const stored = await d.vault(id, () => vaultOf(id))
        expect(stored.data.categories.map((c) => c.name).sort()).toEqual(['one', 'theirs', 'two'])
      } finally {
        await d.close()
      }
      await onC.refresh()
      expect(onC.data.categories.map((c) => c.name).sort()).toEqual(['one', 'theirs', 'two'])
    } finally {
      db.run = run
      await c.close()
    }
  })

  test('a request that began before a refresh was sent shares it (one query)', async () => {
    const id = crypto.randomUUID()
    await a.vault(id, () => vaultOf(id))
    // No listener: a notification of an earlier test's write (a refresh in the background) cannot
    // add a query to the count (that made this test fail now and then on a busy machine).
    const c = await PgStore.open(a.db.url, { createKeyCheck: () => 'x', readOnly: true })
    let answered = () => {}
    try {
      const onC = await c.vault(id, () => vaultOf(id))
      answered = beginRequest()
      const queries = c.db.stats.queries
      const first = onC.refresh()
      const second = onC.refresh()
      await Promise.all([first, second])
      expect(c.db.stats.queries - queries).toBe(1)
    } finally {
      answered()
      await c.close()
    }
  })

  test('a refresh the database does not answer fails each request waiting on it as its own query would: its later reads and queries fail at once', async () => {
    const { c, onC, db, run } = await behindB('while-away')
    try {
      // The wave's query: the database does not answer it (as a cut network, past the bound).
      let away = true
      db.run = ((query: never, options?: never) => {
        if (!away) return run(query, options)
        away = false
        return Promise.reject(new StoreUnavailableError(`the database did not answer within ${QUERY_TIMEOUT_MS} ms`))
      }) as typeof db.run
      const answered = beginRequest()
      try {
        expect(
          await onC.refresh().then(
            () => 'read',
            (error) => error,
          ),
        ).toBeInstanceOf(StoreUnavailableError)
        // Nothing more of this request reaches the database: no query, no refresh.
        const queries = db.stats.queries
        expect(
          await db
            .run((sql) => sql`SELECT 1`)
            .then(
              () => 'queried',
              (error) => error,
            ),
        ).toBeInstanceOf(StoreUnavailableError)
        expect(
          await onC.refresh().then(
            () => 'read',
            (error) => error,
          ),
        ).toBeInstanceOf(StoreUnavailableError)
        expect(db.stats.queries).toBe(queries)
      } finally {
        answered()
      }
      // The next request reads again.
      const next = beginRequest()
      await onC.refresh()
      next()
      expect(onC.data.categories.map((category) => category.name)).toContain('while-away')
    } finally {
      db.run = run
      await c.close()
    }
  })

  test('a NOTIFY brings the other instance up to date without a read of its own', async () => {
    const onA = await a.vault(userId, () => vaultOf(userId))
    const onB = await b.vault(userId, () => vaultOf(userId))
    const before = onB.heldVersion
    await onA.update((_, write) => write.categories.push(category(crypto.randomUUID(), 'pushed')))
    const deadline = Date.now() + 5000
    while (onB.heldVersion === before && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5))
    expect(onB.data.categories.map((c) => c.name)).toContain('pushed')
  })

  test('many commits: a snapshot is written and a far-behind reader still loads every record', async () => {
    const id = crypto.randomUUID()
    const onA = await a.vault(id, () => vaultOf(id))
    for (let i = 0; i < 60; i++) await onA.update((_, write) => write.categories.push(category(crypto.randomUUID(), `c${i}-${'x'.repeat(2000)}`)))
    const fresh = await PgStore.open(onA['db'].url, { createKeyCheck: () => 'x', readOnly: true })
    try {
      const read = await fresh.vault(id, () => vaultOf(id))
      expect(read.data.categories).toHaveLength(60)
    } finally {
      await fresh.close()
    }
  })

  test('a deleted vault is gone on both and never created again', async () => {
    const id = crypto.randomUUID()
    await (await a.vault(id, () => vaultOf(id))).update((_, write) => write.categories.push(category(crypto.randomUUID(), 'doomed')))
    await b.vault(id, () => vaultOf(id))
    await a.deleteVault(id)
    expect(a.vault(id, () => vaultOf(id))).rejects.toThrow('deleted')
    const deadline = Date.now() + 5000
    while (!b.wasDeleted(id) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5))
    expect(b.vault(id, () => vaultOf(id))).rejects.toThrow('deleted')
    expect(await a.vaultIds()).not.toContain(id)
  })
})
