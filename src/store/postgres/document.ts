// One document (the accounts, or one vault) in PostgreSQL, held in memory like the file store's
// (document.ts), so that reads stay synchronous. The same writer records each change; a commit
// is one row of `svc_changes` at the document's next version. The primary key (document,
// version) is the version check: when another instance wrote that version first, the insert
// fails, the document is brought up to date and the change is made again on the new data
// (update() runs its mutation again). Concurrent commits of one instance share one row (group commit).
//
// Reads after another instance's write: refresh() asks for the versions after the one held
// (one indexed query, usually answering nothing new) and applies them; each request calls it
// before it reads. The documents' refreshes share queries (RefreshWaves), but a request never
// shares one sent before it began. A NOTIFY from the writer starts a refresh in the background.
//
// The document is also kept whole (`snapshot`, packed) as of some version; once the changes
// after it outweigh it as stored, a commit writes a new one and drops the changes from before the
// previous one, so that an instance a little behind still finds every version after its own. An
// instance that stops writes one too, so that the next start reads the document whole.
import { applyChanges, deepFreeze, freezeLists, type Change } from '../changes'
import type { StoredDocument } from '../data-store'
import { CorruptDocumentError, DeletedVaultError, StoreUnavailableError, VersionConflictError } from '../errors'
import { GroupCommit, waiter, type Waiter } from '../group-commit'
import type { Writer } from '../writer'
import { CHANNEL, noteAway, requestArrivedAt, requestAway, sqlState, type Database, type Sql } from './database'

/** A new snapshot once the changes since the last one are this long at least (and as long as it, stored). */
const MIN_CHANGES_TO_SNAPSHOT = 64 * 1024
/** zstd's fastest level: the accounts of 50,000 users packed in some 90 ms off the event loop, to a sixth. */
const PACK_LEVEL = 1
/** How long storing a snapshot may take (no request waits for it), and the pause after one failed. */
const SNAPSHOT_TIMEOUT_MS = 60_000
const SNAPSHOT_RETRY_MS = 60_000
/** Attempts of one update against writes of other instances before it gives up (503). */
const MAX_ATTEMPTS = 20

export interface PgDocumentOptions<T> {
  lists: readonly string[]
  /** Brings data of an older format up to the current one (after a load). */
  migrate?: (data: T) => T
  /** Told after the data was replaced or changed by another instance's writes (indexes rebuild). */
  onReload?: (data: T) => void
  /**
   * Told the changes of other instances' writes once they were applied to the data (indexes
   * follow them instead of being rebuilt: at 50,000 accounts a rebuild took 100-250 ms); absent: onReload.
   */
  onChanges?: (data: T, changes: readonly Change[]) => void
  onWriteError?: (id: string, error: unknown) => void
}

export interface Loaded {
  data: unknown
  version: number
  snapshotVersion: number
  /** Length of the changes after the snapshot (when to write a new one). */
  changeBytes: number
  snapshotBytes: number
  deleted: boolean
  /** performance.now() as the statement that read it was sent (loadDocument). */
  readAt?: number
}

/**
 * Reads a document: its snapshot and the changes after it, in one statement (one point in time).
 * `timeoutMs`: a longer bound than a request's, for the accounts at start (tens of MB with 50,000 users).
 */
export async function loadDocument(db: Database, id: string, lists: readonly string[], timeoutMs?: number): Promise<Loaded | null> {
  const readAt = performance.now()
  const loaded = await db.run((sql) => loadDocumentIn(sql, id, lists), { timeoutMs })
  return loaded && { ...loaded, readAt }
}

/** loadDocument on a connection or in a transaction given (a backup reads all documents in one). */
export async function loadDocumentIn(sql: Sql, id: string, lists: readonly string[]): Promise<Loaded | null> {
  const rows = await sql`
      SELECT 0 AS part, snapshot_version AS version, snapshot AS text, packed, deleted FROM svc_documents WHERE id = ${id}
      UNION ALL
      SELECT 1, c.version, c.changes, NULL, false FROM svc_changes c JOIN svc_documents d ON d.id = c.document_id
        WHERE c.document_id = ${id} AND c.version > d.snapshot_version
      ORDER BY part, version`
  return fromRows(id, await unpacked(rows), lists)
}

type Row = { id?: string; part: number; version: number | string; text: string; packed: Uint8Array | null; deleted: boolean; packedBytes?: number }

/** A snapshot as stored: zstd of its JSON (`packed`), or the JSON itself (`text`, as created or before migration 4). */
export async function pack(text: string): Promise<Uint8Array> {
  return Bun.zstdCompress(Buffer.from(text), { level: PACK_LEVEL })
}

/** The JSON of a stored snapshot, whichever way it is kept. */
export async function snapshotText(row: { text: string; packed: Uint8Array | null }): Promise<string> {
  return row.packed ? (await Bun.zstdDecompress(row.packed)).toString('utf8') : row.text
}

/** Rows with each packed snapshot made text again (off the event loop), noting its stored length. */
async function unpacked(rows: readonly Row[]): Promise<Row[]> {
  return Promise.all(rows.map(async (row) => (row.packed ? { ...row, text: await snapshotText(row), packed: null, packedBytes: row.packed.length } : row)))
}

/** A document from its rows: the snapshot (part 0), then its later changes in order. */
function fromRows(id: string, rows: readonly Row[], lists: readonly string[]): Loaded | null {
  if (rows.length === 0) return null
  const head = rows[0]
  const snapshotVersion = Number(head.version)
  if (head.deleted) return { data: null, version: snapshotVersion, snapshotVersion, changeBytes: 0, snapshotBytes: 0, deleted: true }
  const data = parse(id, head.text)
  let version = snapshotVersion
  let changeBytes = 0
  const batches: Change[][] = []
  for (const row of rows.slice(1)) {
    batches.push(parse(id, row.text as string) as Change[])
    changeBytes += (row.text as string).length
    version = Number(row.version)
  }
  apply(id, data, lists, batches)
  // A snapshot's weight is what it takes stored (read at start): packed, some sixth of the JSON.
  const snapshotBytes = head.packedBytes ?? head.text.length
  return { data, version, snapshotVersion, changeBytes, snapshotBytes, deleted: false }
}

/**
 * Every document of a kind that is not deleted, read in one statement (a backup of many vaults:
 * one round trip, not one per vault); by id, in id order.
 */
export async function loadAllDocumentsIn(sql: Sql, kind: 'accounts' | 'vault', lists: readonly string[]): Promise<Map<string, Loaded>> {
  const found: Row[] = await sql`
      SELECT id, 0 AS part, snapshot_version AS version, snapshot AS text, packed, false AS deleted FROM svc_documents WHERE kind = ${kind} AND NOT deleted
      UNION ALL
      SELECT c.document_id, 1, c.version, c.changes, NULL, false FROM svc_changes c JOIN svc_documents d ON d.id = c.document_id
        WHERE d.kind = ${kind} AND NOT d.deleted AND c.version > d.snapshot_version
      ORDER BY id, part, version`
  const rows = await unpacked(found)
  const documents = new Map<string, Loaded>()
  let start = 0
  for (let i = 1; i <= rows.length; i++) {
    if (i < rows.length && rows[i].id === rows[start].id) continue
    const id = rows[start].id as string
    documents.set(id, fromRows(id, rows.slice(start, i), lists)!)
    start = i
  }
  return documents
}

function parse(id: string, text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw new CorruptDocumentError(`document ${id} in the database is not valid JSON; restore it from a backup`)
  }
}

function apply(id: string, data: unknown, lists: readonly string[], batches: readonly (readonly Change[])[]): void {
  try {
    applyChanges(data as Record<string, unknown>, lists, batches)
  } catch (error) {
    throw new CorruptDocumentError(`the changes of document ${id} in the database do not fit it (${(error as Error).message}); restore from a backup`)
  }
}

export class PgDocument<T> extends GroupCommit<T> implements StoredDocument<T> {
  /** The version `current` is at (the last change row applied or written). */
  private version: number
  private snapshotVersion: number
  private changeBytes: number
  private snapshotBytes: number
  /** The snapshot being stored, if one is. */
  private snapshotting: Promise<void> | null = null
  private snapshotRetryAt = 0
  /**
   * performance.now() when a statement was sent whose answer the data is up to date with (a read,
   * or a write of the next version, which only succeeds on the latest): a request that began
   * before it needs no refresh (RefreshWaves).
   */
  freshAsOf: number

  constructor(
    private readonly db: Database,
    readonly id: string,
    loaded: Loaded,
    private readonly options: PgDocumentOptions<T>,
  ) {
    super(options.lists)
    this.current = this.prepare(loaded.data as T)
    this.version = loaded.version
    this.snapshotVersion = loaded.snapshotVersion
    this.changeBytes = loaded.changeBytes
    this.snapshotBytes = loaded.snapshotBytes
    this.freshAsOf = loaded.readAt ?? -Infinity
  }

  private prepare(data: T): T {
    const migrated = this.options.migrate ? this.options.migrate(data) : data
    freezeLists(migrated as Record<string, unknown>, this.options.lists)
    return migrated
  }

  /** The version held (tests and the migration's check). */
  get heldVersion(): number {
    return this.version
  }

  async update<R>(mutate: (data: T, write: Writer<T>) => R): Promise<R> {
    for (let attempt = 1; ; attempt++) {
      const result = mutate(this.current, this.writer)
      try {
        await this.commit()
        return result
      } catch (error) {
        if (!(error instanceof VersionConflictError)) throw error
        this.db.stats.conflicts++
        if (attempt >= MAX_ATTEMPTS) throw new StoreUnavailableError(`${this.id} kept changing under ${MAX_ATTEMPTS} attempts`)
        // fail() brought the data up to date: the mutation runs again on it.
      }
    }
  }

  /**
   * Writes the whole document as its snapshot at the version held and drops every change before
   * it (a re-key: no ciphertext under the old data key stays in a row the document still has).
   */
  async compact(): Promise<void> {
    await this.settle()
    const { id, version } = this
    const packed = await pack(JSON.stringify(this.current))
    await this.db.run((sql) =>
      sql.begin(async (tx) => {
        await tx`UPDATE svc_documents SET snapshot = '', packed = ${packed}, snapshot_version = ${version} WHERE id = ${id}`
        await tx`DELETE FROM svc_changes WHERE document_id = ${id} AND version < ${version}`
        // The row stays as the version's marker (a refresh finds where it stands), emptied: the snapshot holds it.
        await tx`UPDATE svc_changes SET changes = '[]' WHERE document_id = ${id} AND version = ${version}`
      }),
    )
    this.snapshotVersion = version
    this.snapshotBytes = packed.length
    this.changeBytes = 0
  }

  /**
   * When the instance stops: the writes settled, a snapshot at the version held if anything
   * changed since the stored one, so that the next start reads the document whole, without
   * replaying changes (at 50,000 accounts that replay was a third of the start). A failure loses nothing.
   */
  async snapshotOnClose(): Promise<void> {
    await this.settle()
    while (this.snapshotting) await this.snapshotting
    if (this.retired || this.version <= this.snapshotVersion) return
    await this.writeSnapshot(this.version, JSON.stringify(this.current))
  }

  /**
   * Brings the data up to what the database holds: the versions after the one held, applied.
   * The query is shared with the other documents' refreshes of the same moment (RefreshWaves).
   */
  refresh(): Promise<void> {
    if (this.retired) return Promise.reject(this.retired())
    return wavesOf(this.db).refresh(this)
  }

  /** For RefreshWaves: a write of this document under way (the refresh waits for it), or null. */
  get writing(): Promise<void> | null {
    return this.writeUnderWay
  }

  /**
   * For RefreshWaves: the rows read for the version held then (`held`) applied, or the document
   * read again. False when a write of ours began meanwhile and the rows were left (not up to date with them).
   */
  async applyNewer(held: number, rows: readonly ChangeRow[]): Promise<boolean> {
    if (this.retired) throw this.retired()
    // A write of ours began meanwhile: it holds what it needs; the next refresh looks again.
    if (this.version !== held || this.writeUnderWay) return false
    if (rows.length === 1) return true
    if (rows.length === 0 || Number(rows[0].version) !== held) {
      await this.reload()
      return true
    }
    const batches = rows.slice(1).map((row) => parse(this.id, row.changes) as Change[])
    apply(this.id, this.current, this.options.lists, batches)
    // Only the records just read are new: the rest were frozen when they came in.
    for (const batch of batches) for (const change of batch) if (change[0] === 'put') deepFreeze(change[2])
    for (const row of rows.slice(1)) this.changeBytes += row.changes.length
    this.version = Number(rows[rows.length - 1].version)
    if (this.options.onChanges) this.options.onChanges(this.current, batches.flat())
    else this.options.onReload?.(this.current)
    return true
  }

  /** Reads the whole document again (far behind, or after a failed write). */
  private async reload(): Promise<void> {
    const loaded = await loadDocument(this.db, this.id, this.options.lists)
    if (!loaded || loaded.deleted) {
      this.retire(() => new DeletedVaultError())
      throw new DeletedVaultError()
    }
    this.current = this.prepare(loaded.data as T)
    this.version = loaded.version
    this.snapshotVersion = loaded.snapshotVersion
    this.changeBytes = loaded.changeBytes
    this.snapshotBytes = loaded.snapshotBytes
    this.freshAsOf = Math.max(this.freshAsOf, loaded.readAt ?? -Infinity)
    // Whatever was staged is dropped with the data it was made on; the updates waiting to write it
    // run again on the data just read (update() makes its mutation again on a conflict).
    this.dropStaged(new VersionConflictError(this.id))
    this.options.onReload?.(this.current)
  }

  /** Writes everything changed so far as the next version (synchronously taken: one instant). */
  protected async write(): Promise<void> {
    const changes = this.pending.take()
    if (changes.length === 0) return
    const version = this.version + 1
    const json = JSON.stringify(changes)
    // The whole document as of this version, taken now (before anything else changes it).
    const snapshot = this.wantsSnapshot(json.length) ? JSON.stringify(this.current) : null
    const id = this.id
    const notice = `${id}:${version}`
    const sentAt = performance.now()
    try {
      await this.db.run(
        (sql) => sql`
          WITH written AS (INSERT INTO svc_changes (document_id, version, changes) VALUES (${id}, ${version}, ${json}) RETURNING version)
          SELECT pg_notify(${CHANNEL}, ${notice}) FROM written`,
      )
    } catch (error) {
      // The version was taken: another instance wrote first.
      if (sqlState(error) === '23505') throw new VersionConflictError(id)
      throw error
    }
    this.version = version
    this.freshAsOf = Math.max(this.freshAsOf, sentAt)
    this.changeBytes += json.length
    if (snapshot !== null) void this.writeSnapshot(version, snapshot)
  }

  private wantsSnapshot(adding: number): boolean {
    if (this.snapshotting !== null || Date.now() < this.snapshotRetryAt) return false
    return this.changeBytes + adding >= Math.max(this.snapshotBytes, MIN_CHANGES_TO_SNAPSHOT)
  }

  /**
   * Stores the whole document as of `version`, once that version is committed, apart from the
   * write that answers a request: a large document (the accounts of 50,000 users are some 32 MB
   * of JSON) takes seconds to store, past the bound a request's query has, and a write waiting on
   * it would answer 503 again and again. Its changes are all in the database already, so a
   * snapshot that fails loses nothing (it is tried again later). Two instances may both write
   * one: the newer version wins. The changes from before the previous snapshot go with it; an
   * instance a little behind still finds its version.
   */
  private writeSnapshot(version: number, text: string): Promise<void> {
    const id = this.id
    const bytesUpTo = this.changeBytes
    const stored = pack(text).then((packed) =>
      this.db
        .run(
          (sql) =>
            sql.begin(async (tx) => {
              // NO KEY UPDATE: change rows (whose foreign key takes KEY SHARE on this row) go on meanwhile.
              const [row] = await tx`SELECT snapshot_version FROM svc_documents WHERE id = ${id} FOR NO KEY UPDATE`
              if (!row || Number(row.snapshot_version) >= version) return false
              await tx`UPDATE svc_documents SET snapshot = '', packed = ${packed}, snapshot_version = ${version} WHERE id = ${id}`
              await tx`DELETE FROM svc_changes WHERE document_id = ${id} AND version < ${Number(row.snapshot_version)}`
              return true
            }),
          { timeoutMs: SNAPSHOT_TIMEOUT_MS },
        )
        .then((written) => {
          if (!written) return
          this.snapshotVersion = Math.max(this.snapshotVersion, version)
          this.snapshotBytes = packed.length
          this.changeBytes = Math.max(0, this.changeBytes - bytesUpTo)
        }),
    )
    this.snapshotting = stored
      .catch(() => {
        this.snapshotRetryAt = Date.now() + SNAPSHOT_RETRY_MS
      })
      .finally(() => {
        this.snapshotting = null
      })
    return this.snapshotting
  }

  /** The document read again from the database (what was staged goes with it). */
  protected recover(error: unknown): Promise<void> {
    this.pending.take()
    if (!(error instanceof VersionConflictError)) this.options.onWriteError?.(this.id, error)
    // The data goes back to what the database holds before anyone is told (update() runs its
    // mutation again on it). Unreachable: the reload fails too, and the next refresh tries again.
    return this.reload().catch(() => {
      this.version = -1
    })
  }
}

type ChangeRow = { version: number | string; changes: string }
interface Refreshable {
  readonly id: string
  readonly heldVersion: number
  readonly writing: Promise<void> | null
  freshAsOf: number
  applyNewer(held: number, rows: readonly ChangeRow[]): Promise<boolean>
}
interface Wave {
  documents: Map<Refreshable, Waiter>
  sentAt: number
}
/**
 * The refreshes of one database's documents in shared queries ("waves"), one under way at a time:
 * every document asked for goes into the next wave, which starts once the one under way ends (the
 * accounts for one request and a vault for another: one round trip). A request needs none when the
 * document is fresh as of a statement sent after the request began (`freshAsOf`), and may share
 * the wave under way only if it was sent after the request began: one sent before may have read
 * before a write another instance acknowledged since, and the request may come from the client
 * who saw that answer. Outside a request (a notification), only a wave sent from now on serves.
 * A wave the database does not answer fails its callers and those queued for the next one (they
 * came while it was away), and each request counts that as its own query's failure.
 * Two waves under way at once (a request starting its own at once) took twice the queries per
 * audited reveal under load and answered no faster (docs/scaling.md).
 */
class RefreshWaves {
  /** The wave whose query is under way (with when it was sent), and the one to start next. */
  private running: Wave | null = null
  private next: Map<Refreshable, Waiter> | null = null

  constructor(private readonly db: Database) {}

  refresh(document: Refreshable): Promise<void> {
    const arrived = requestArrivedAt() ?? Infinity
    if (document.freshAsOf >= arrived) return Promise.resolve()
    // A request that found the database away fails its later reads at once (database.ts).
    const away = requestAway()
    if (away) return Promise.reject(away)
    const running = this.running
    const under = running && running.sentAt >= arrived ? running.documents.get(document) : undefined
    // A wave's query is shared: when it finds the database away, so has each request waiting on it.
    return (under?.promise ?? this.enqueue(document)).catch((error) => {
      noteAway(error)
      throw error
    })
  }

  /** Puts the document in the next wave (`waiting`: a caller's place carried over from a wave it could not go in). */
  private enqueue(document: Refreshable, waiting?: Waiter): Promise<void> {
    const documents = (this.next ??= new Map())
    const found = documents.get(document)
    if (found) {
      if (waiting) found.promise.then(waiting.resolve, waiting.reject)
      return found.promise
    }
    waiting ??= waiter()
    documents.set(document, waiting)
    this.start()
    return waiting.promise
  }

  private start(): void {
    if (!this.next || this.running) return
    // Not sent yet: nobody shares it until it is.
    const wave: Wave = { documents: this.next, sentAt: -Infinity }
    this.next = null
    this.running = wave
    void this.run(wave).finally(() => {
      this.running = null
      this.start()
    })
  }

  private async run(wave: Wave): Promise<void> {
    const held: [Refreshable, Waiter, number][] = []
    for (const [document, waiting] of wave.documents) {
      // Its own write under way must not be applied over: it goes in a wave after that write.
      const writing = document.writing
      if (writing)
        void writing
          .catch(() => {})
          .then(() => {
            this.enqueue(document, waiting)
          })
      else held.push([document, waiting, document.heldVersion])
    }
    if (held.length === 0) return
    wave.sentAt = performance.now()
    let rows: (ChangeRow & { id: string })[]
    try {
      const asked = JSON.stringify(held.map(([document, , version]) => ({ id: document.id, v: version })))
      // One indexed range per document (LATERAL): the versions from the one held on.
      // Bound by the database's own bound, whoever started the wave: its callers are many requests
      // (each counts a failure as its own, refresh()), or none (a notification's refresh).
      rows = await this.db.run(
        (sql) => sql`
          SELECT h.id, c.version, c.changes FROM json_to_recordset(${asked}::text::json) AS h (id text, v bigint)
          CROSS JOIN LATERAL (
            SELECT version, CASE WHEN version = h.v THEN '' ELSE changes END AS changes FROM svc_changes
            WHERE document_id = h.id AND version >= h.v ORDER BY version
          ) c
          ORDER BY h.id, c.version`,
        { timeoutMs: this.db.timeoutMs },
      )
    } catch (error) {
      for (const [, waiting] of held) waiting.reject(error)
      // The database did not answer: what queued behind this wave came while it was away, and
      // would otherwise wait a bound of its own after this one (some 1.4 s in all, not one).
      if (error instanceof StoreUnavailableError) {
        for (const waiting of this.next?.values() ?? []) waiting.reject(error)
        this.next = null
      }
      return
    }
    const byId = new Map<string, typeof rows>()
    for (const row of rows) {
      const list = byId.get(row.id)
      if (list) list.push(row)
      else byId.set(row.id, [row])
    }
    await Promise.all(
      held.map(([document, waiting, version]) =>
        document.applyNewer(version, byId.get(document.id) ?? []).then((fresh) => {
          if (fresh) document.freshAsOf = Math.max(document.freshAsOf, wave.sentAt)
          // Not applied: a write of its own began after the query was sent. Once it has written
          // (or read the document again after a conflict) the data is fresh as of a statement sent
          // after every caller of this wave began; if it failed, the next wave looks again.
          if (document.freshAsOf >= wave.sentAt) return waiting.resolve()
          void (document.writing ?? Promise.resolve())
            .catch(() => {})
            .then(() => {
              if (document.freshAsOf >= wave.sentAt) waiting.resolve()
              else this.enqueue(document, waiting)
            })
        }, waiting.reject),
      ),
    )
  }
}

const waves = new WeakMap<Database, RefreshWaves>()
function wavesOf(db: Database): RefreshWaves {
  let found = waves.get(db)
  if (!found) waves.set(db, (found = new RefreshWaves(db)))
  return found
}
