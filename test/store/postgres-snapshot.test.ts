// The PostgreSQL store's snapshots (src/store/postgres/document.ts): once a document's changes
// outweigh its stored whole, the whole is stored again, apart from the write that answers a
// request; a snapshot held up (a large document, a busy database) holds up no write, and a
// document read afresh equals the one in memory. Needs SVC_TEST_POSTGRES (skipped without, except under CI).
import { afterAll, describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { PgStore } from '../../src/store/postgres/store'
import { FORMAT_VERSION, type VaultDocument } from '../../src/store/records'
import { freshDatabase, TEST_POSTGRES } from '../support/postgres'

const CI = process.env.CI === 'true'
if (CI && !TEST_POSTGRES) throw new Error('SVC_TEST_POSTGRES is not set: under CI the PostgreSQL tests must run')
const suite = TEST_POSTGRES ? describe : describe.skip

const opened: { close(): Promise<void> }[] = []
afterAll(async () => {
  for (const thing of opened.reverse()) await thing.close()
})

const emptyVault = () => ({ version: FORMAT_VERSION }) as unknown as VaultDocument
/** A category record of about 2 KB (the store does not look inside records). */
const category = (n: number) => ({ id: crypto.randomUUID(), name: `c${n}`, description: 'x'.repeat(2000) }) as any

async function open(url: string): Promise<PgStore> {
  const store = await PgStore.open(url, { createKeyCheck: () => 'key-check' })
  opened.push(store)
  return store
}

/** A store on a fresh database, an admin connection of the test's own, and one empty vault. */
async function vaultOnFreshDatabase() {
  const url = await freshDatabase()
  const store = await open(url)
  const admin = new SQL(url, { max: 2 })
  opened.push(admin)
  const id = crypto.randomUUID()
  const vault = await store.vault(id, emptyVault)
  const snapshotVersion = async () => Number((await admin`SELECT snapshot_version FROM svc_documents WHERE id = ${id}`)[0].snapshot_version)
  return {
    url,
    admin,
    id,
    vault,
    snapshotVersion,
    /** The snapshot's version once it is past `than` (stored apart from the writes: looked for up to 2 s). */
    async snapshotPast(than: number): Promise<number> {
      let at = await snapshotVersion()
      for (let i = 0; i < 200 && at === than; i++) {
        await Bun.sleep(10)
        at = await snapshotVersion()
      }
      return at
    },
    /**
     * Runs `writes` while another session holds a lock (`lock`, in a transaction of its own), checks
     * that one statement (the snapshot) waits for it meanwhile, then lets go; answers the writes' time.
     */
    async whileLocked(lock: (holder: SQL) => Promise<unknown>, writes: () => Promise<void>): Promise<number> {
      const holder = await admin.reserve()
      try {
        await holder`BEGIN`
        await lock(holder)
        const started = performance.now()
        await writes()
        const took = performance.now() - started
        const [waiting] = await admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`
        expect(waiting.n).toBe(1)
        await holder`COMMIT`
        return took
      } finally {
        holder.release()
      }
    },
  }
}

suite(`PostgreSQL snapshots${TEST_POSTGRES ? '' : ' (skipped: SVC_TEST_POSTGRES is not set)'}`, () => {
  test('a snapshot is stored once the changes outweigh it; a fresh read equals memory; older changes go', async () => {
    const { url, admin, id, vault, snapshotPast } = await vaultOnFreshDatabase()
    // 64 KB of changes: the first snapshot.
    for (let n = 0; n < 40; n++) await vault.update((_, write) => write.categories.push(category(n)))
    const at = await snapshotPast(0)
    expect(at).toBeGreaterThan(0)
    // Enough again for a second one, which takes the changes from before the first away.
    for (let n = 40; n < 140; n++) await vault.update((_, write) => write.categories.push(category(n)))
    expect(await snapshotPast(at)).toBeGreaterThan(at)
    // Read in one statement: more snapshots may follow meanwhile (the writes above are 2 KB each).
    const [{ oldest, latest }] = await admin`
      SELECT (SELECT min(version)::int FROM svc_changes WHERE document_id = ${id}) AS oldest, snapshot_version::int AS latest
      FROM svc_documents WHERE id = ${id}`
    // Kept from the previous snapshot on (an instance a little behind still finds its version).
    expect(oldest).toBeGreaterThanOrEqual(at)
    expect(oldest).toBeLessThan(latest)
    const other = await open(url)
    const copy = await other.vault(id, emptyVault)
    expect(copy.data.categories).toEqual(vault.data.categories)
    expect(copy.data.categories.length).toBe(140)
  })

  test('a snapshot held up by the database holds up no write; it is stored once the database lets it', async () => {
    const { url, id, vault, snapshotPast, whileLocked } = await vaultOnFreshDatabase()
    await vault.update((_, write) => write.categories.push(category(0)))
    // Another session holds the document's row (as a long snapshot of another instance would):
    // a snapshot waits for it; a change row (which only needs the row to exist) does not.
    const took = await whileLocked(
      (holder) => holder`SELECT 1 FROM svc_documents WHERE id = ${id} FOR NO KEY UPDATE`,
      async () => {
        for (let n = 1; n < 80; n++) await vault.update((_, write) => write.categories.push(category(n)))
      },
    )
    // Every write answered, the snapshot among them waiting, each well within the query bound.
    expect(took).toBeLessThan(5000)
    expect(await snapshotPast(0)).toBeGreaterThan(0)
    const copy = await (await open(url)).vault(id, emptyVault)
    expect(copy.data.categories).toEqual(vault.data.categories)
  })

  test('a snapshot under way (holding its document row) holds up no write either', async () => {
    const { url, id, vault, snapshotVersion, whileLocked } = await vaultOnFreshDatabase()
    let n = 0
    while ((await snapshotVersion()) === 0 && n < 400) await vault.update((_, write) => write.categories.push(category(n++)))
    const first = await snapshotVersion()
    expect(first).toBeGreaterThan(0)
    // The next snapshot deletes the changes before the first one; version 0's row is held, so it
    // stops there, after it has taken its document row.
    const until = n + 200
    const took = await whileLocked(
      (holder) => holder`SELECT 1 FROM svc_changes WHERE document_id = ${id} AND version = 0 FOR UPDATE`,
      async () => {
        while (n < until) await vault.update((_, write) => write.categories.push(category(n++)))
      },
    )
    expect(took).toBeLessThan(10_000)
    const copy = await (await open(url)).vault(id, emptyVault)
    expect(copy.data.categories).toEqual(vault.data.categories)
  })

  test('a snapshot is stored packed (zstd of the JSON, no text); one stored as text still loads', async () => {
    const { url, admin, id, vault, snapshotPast } = await vaultOnFreshDatabase()
    // A vault as created is stored as text (version 0): nothing packed yet.
    expect((await admin`SELECT packed FROM svc_documents WHERE id = ${id}`)[0].packed).toBeNull()
    for (let n = 0; n < 40; n++) await vault.update((_, write) => write.categories.push(category(n)))
    expect(await snapshotPast(0)).toBeGreaterThan(0)
    const [row] = await admin`SELECT snapshot, packed, snapshot_version FROM svc_documents WHERE id = ${id}`
    expect(row.snapshot).toBe('')
    const json = Bun.zstdDecompressSync(row.packed).toString('utf8')
    expect(JSON.parse(json).categories.length).toBe(Number(row.snapshot_version))
    // Far smaller than the JSON it holds (the 2 KB descriptions repeat).
    expect(row.packed.length).toBeLessThan(json.length / 10)
    // The same document stored as text (as a database from before packing holds it) reads the same.
    const other = await open(url)
    const packedCopy = await other.vault(id, emptyVault)
    await admin`UPDATE svc_documents SET snapshot = ${json}, packed = NULL WHERE id = ${id}`
    const third = await open(url)
    const textCopy = await third.vault(id, emptyVault)
    expect(packedCopy.data.categories).toEqual(vault.data.categories)
    expect(textCopy.data.categories).toEqual(vault.data.categories)
  })

  test('an instance that stops stores the accounts whole: the next start replays no change; a read-only one writes nothing', async () => {
    const url = await freshDatabase()
    const admin = new SQL(url, { max: 1 })
    opened.push(admin)
    const head = async () =>
      (
        await admin`SELECT d.snapshot_version::int AS snapshot, (SELECT max(version)::int FROM svc_changes WHERE document_id = 'accounts') AS version
          FROM svc_documents d WHERE d.id = 'accounts'`
      )[0]
    const store = await PgStore.open(url, { createKeyCheck: () => 'key-check' })
    // A few changes, under the weight that stores a snapshot while serving.
    for (let n = 0; n < 3; n++)
      await store.accounts.update((_, write) => write.users.push({ id: crypto.randomUUID(), email: `u${n}@example.test`, name: null } as any))
    const before = await head()
    expect(before.version).toBe(3)
    expect(before.snapshot).toBe(0)
    // A read-only tool (a backup) closing writes nothing.
    const tool = await PgStore.open(url, { createKeyCheck: () => 'key-check', readOnly: true })
    await tool.close()
    expect(await head()).toEqual(before)
    await store.close()
    expect(await head()).toEqual({ snapshot: 3, version: 3 })
    const again = await open(url)
    expect(again.accounts.data.users.map((user) => user.email)).toEqual(['u0@example.test', 'u1@example.test', 'u2@example.test'])
  })
})
