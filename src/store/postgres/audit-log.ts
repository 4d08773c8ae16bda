// The audit logs in PostgreSQL (migration 2): a row per log in svc_audit_logs (its head, line
// count, bytes and anchor) and its lines in svc_audit_lines, each line's text byte for byte what
// the file store writes (without the newline). An append locks the log's row (SELECT ... FOR
// UPDATE) in the transaction that inserts its lines, seals each line against the head read
// there (not one held in memory) and moves the head: two instances appending to one log at once
// make one chain, never a fork. Events queued while a batch commits go in the next one (group
// commit, as with the file). A line is durable once its transaction commits.
//
// The anchor's head, lines and bytes are the row's own, moved by each append; its start and
// checkpoint change only here (creation, compaction). What the recorder writes through
// writeAnchor adds its keying time only.
import { Buffer } from 'node:buffer'
import type { AnchorHolder, AuditAnchor, AuditLog, AuditLogOpenOptions, AuditLogReadout, AuditLogStore } from '../audit-log-store'
import { checkLogId, newAnchor } from '../audit-log-store'
import { joinAuditLines, SERVER_AUDIT_LOG, type SealedLine, type StoredAuditChain } from '../audit-log'
import { VAULT_LISTS } from '../records'
import type { Database, Sql } from './database'
import { loadDocument } from './document'

/** The server's own log's id (vault ids are UUIDs). */
export const SERVER_LOG_ID = 'server'
/** Lines read per query by the readers (a page of events; an export a chunk at a time). */
const PAGE_LINES = 500
/** Lines per query when a whole log is read (the check at open). */
const READ_PAGE_LINES = 5000

interface LogRow {
  head: string
  lines: number
  bytes: number
  anchor: AuditAnchor
}

const rowId = (id: string | null) => id ?? SERVER_LOG_ID
const bytesOf = (line: string) => Buffer.byteLength(line, 'utf8') + 1

/**
 * A batch's lines as one text, a line each (string_to_table splits it in the statement: cheaper
 * for the database than a JSON array). A sealed line is one line of JSON, as in a data folder,
 * where a newline inside it would cut it in two as well.
 */
function linesText(texts: readonly string[]): string {
  if (texts.some((text) => text.includes('\n'))) throw new Error('an audit line holds a newline')
  return texts.join('\n')
}

function logRow(row: Record<string, unknown>): LogRow {
  const anchor = JSON.parse(row.anchor as string) as AuditAnchor
  const head = row.head as string
  const lines = Number(row.lines)
  const bytes = Number(row.bytes)
  return { head, lines, bytes, anchor: { ...anchor, head, lines, bytes } }
}

async function selectRow(sql: Sql, id: string, lock = false): Promise<LogRow | null> {
  const rows = lock
    ? await sql`SELECT head, lines, bytes, anchor::text AS anchor FROM svc_audit_logs WHERE log_id = ${id} FOR UPDATE`
    : await sql`SELECT head, lines, bytes, anchor::text AS anchor FROM svc_audit_logs WHERE log_id = ${id}`
  return rows.length > 0 ? logRow(rows[0]) : null
}

/** The anchor's own fields (start, checkpoint, keying time); head, lines and bytes are columns. */
export function storedAnchor(anchor: AuditAnchor): string {
  return JSON.stringify({ start: anchor.start, checkpoint: anchor.checkpoint ?? null, keyedSince: anchor.keyedSince ?? null })
}

export class PgAuditLogStore implements AuditLogStore {
  readonly kind = 'postgres'

  constructor(private readonly db: Database) {}

  /** As audit-verify names the file store's logs, so that its output reads the same. */
  nameOf(id: string | null): string {
    checkLogId(id)
    return id === null ? SERVER_AUDIT_LOG : `vaults/${id}.audit.log`
  }

  /**
   * A vault's log also leaves a copy of its anchor in the vault's document (`holder`, as the file
   * store keeps it there), brought up to date when the log is opened, closed and compacted: a log
   * whose row was deleted with its lines is then still known to have had them. Its row is made
   * again from that copy (the anchor is never moved silently): the check at open finds the log
   * missing, and the next line chains from the head it records, so verification keeps failing.
   */
  async open<E>(id: string | null, options: AuditLogOpenOptions<E>): Promise<AuditLog<E>> {
    const name = this.nameOf(id)
    const key = rowId(id)
    const holder = id === null ? undefined : options.holder
    let row = await this.db.run((sql) => selectRow(sql, key))
    let lost: AuditAnchor | null = null
    if (!row) {
      const recorded = holder?.read()
      const from = recorded && (recorded.lines ?? 0) > 0 && recorded.head ? recorded : null
      const anchor = from ?? newAnchor()
      // Two instances opening a new log at once: the first row stays.
      const made = await this.db.run(
        (sql) =>
          sql`INSERT INTO svc_audit_logs (log_id, head, lines, bytes, anchor)
            VALUES (${key}, ${from?.head ?? anchor.start}, ${from?.lines ?? 0}, ${from?.bytes ?? 0}, ${storedAnchor(anchor)}::text::jsonb)
            ON CONFLICT (log_id) DO NOTHING RETURNING log_id`,
      )
      if (made.length > 0) lost = from
      row = await this.db.run((sql) => selectRow(sql, key))
    }
    if (!row) throw new Error(`the audit log ${name} was deleted meanwhile`)
    return new PgAuditLog<E>(this.db, key, name, row, options.seal, holder, lost !== null)
  }

  async *linesBackwards(id: string): AsyncGenerator<string> {
    const key = rowId(id)
    let before: number | null = null
    for (;;) {
      const rows: { seq: string | number; line: string }[] = await this.db.run((sql) =>
        before === null
          ? sql`SELECT seq, line FROM svc_audit_lines WHERE log_id = ${key} ORDER BY seq DESC LIMIT ${PAGE_LINES}`
          : sql`SELECT seq, line FROM svc_audit_lines WHERE log_id = ${key} AND seq < ${before} ORDER BY seq DESC LIMIT ${PAGE_LINES}`,
      )
      for (const row of rows) yield row.line
      if (rows.length < PAGE_LINES) return
      before = Number(rows.at(-1)!.seq)
    }
  }

  stream(id: string, _limit: number, keep?: (line: string) => boolean): ReadableStream<Uint8Array> {
    const key = rowId(id)
    const db = this.db
    // The lines as of the start: appends meanwhile wait for the next export.
    let end: number | null = null
    let after = 0
    return new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          try {
            if (end === null) {
              const [row] = await db.run((sql) => sql`SELECT coalesce(max(seq), 0) AS last FROM svc_audit_lines WHERE log_id = ${key}`)
              end = Number(row.last) + 1
            }
            for (;;) {
              const upTo = end
              const from = after
              const rows: { seq: string | number; line: string }[] = await db.run(
                (sql) => sql`SELECT seq, line FROM svc_audit_lines WHERE log_id = ${key} AND seq > ${from} AND seq < ${upTo} ORDER BY seq LIMIT ${PAGE_LINES}`,
              )
              if (rows.length === 0) return controller.close()
              after = Number(rows.at(-1)!.seq)
              const lines = rows.map((row) => row.line)
              const out = joinAuditLines(keep ? lines.filter(keep) : lines)
              if (out.length > 0) return controller.enqueue(Buffer.from(out))
            }
          } catch (error) {
            controller.error(error)
          }
        },
      },
      { highWaterMark: 0 },
    )
  }

  async serverAnchor(): Promise<AuditAnchor | null> {
    return (await this.db.run((sql) => selectRow(sql, SERVER_LOG_ID)))?.anchor ?? null
  }

  async writeServerAnchor(anchor: AuditAnchor): Promise<void> {
    await this.db.run(async (sql) => {
      await sql`INSERT INTO svc_audit_logs (log_id, head, anchor) VALUES (${SERVER_LOG_ID}, ${anchor.checkpoint ?? anchor.start}, ${storedAnchor(anchor)}::text::jsonb)
        ON CONFLICT (log_id) DO NOTHING`
      await keyedSince(sql, SERVER_LOG_ID, anchor.keyedSince)
    })
  }

  /**
   * The row first: an append under way holds it, so the delete waits for that append to commit,
   * and the lines' delete that follows (a statement of its own, seeing what committed before it)
   * takes that append's lines too. An append after it finds no row and writes nothing.
   */
  async delete(id: string): Promise<void> {
    checkLogId(id)
    await this.db.run((sql) =>
      sql.begin(async (tx) => {
        await tx`DELETE FROM svc_audit_logs WHERE log_id = ${id}`
        await tx`DELETE FROM svc_audit_lines WHERE log_id = ${id}`
      }),
    )
  }

  /** Every log with its anchor (the verifier; the migration), read in one snapshot. */
  async chains(): Promise<StoredAuditChain[]> {
    return readPgAuditChains(this.db)
  }
}

/** Records when keying began, once (an anchor's keying time never moves). */
async function keyedSince(sql: Sql, key: string, since: string | null | undefined): Promise<void> {
  if (!since) return
  await sql`UPDATE svc_audit_logs SET anchor = jsonb_set(anchor, '{keyedSince}', to_jsonb(${since}::text))
    WHERE log_id = ${key} AND coalesce(anchor->>'keyedSince', '') = ''`
}

/** Every log in the database with its anchor, in one read-only snapshot (REPEATABLE READ). */
export async function readPgAuditChains(db: Database): Promise<StoredAuditChain[]> {
  const read = async (sql: Sql) => {
    const logs = await sql`SELECT log_id, head, lines, bytes, anchor::text AS anchor FROM svc_audit_logs ORDER BY log_id`
    const chains: StoredAuditChain[] = []
    for (const row of logs as Record<string, unknown>[]) {
      const id = row.log_id as string
      const lines: { line: string }[] = await sql`SELECT line FROM svc_audit_lines WHERE log_id = ${id} ORDER BY seq`
      chains.push({
        file: id === SERVER_LOG_ID ? SERVER_AUDIT_LOG : `vaults/${id}.audit.log`,
        lines: lines.map((line) => line.line),
        torn: 0,
        missing: false,
        anchor: logRow(row).anchor,
      })
    }
    // Vaults whose document records lines of a log that has no row: the log was deleted.
    const orphans: { id: string }[] =
      await sql`SELECT id FROM svc_documents WHERE kind = 'vault' AND NOT deleted AND id NOT IN (SELECT log_id FROM svc_audit_logs) ORDER BY id`
    // The server's log first, as in a data folder.
    return {
      chains: chains.sort((a, b) => (a.file === SERVER_AUDIT_LOG ? -1 : b.file === SERVER_AUDIT_LOG ? 1 : 0)),
      orphans: orphans.map((row) => row.id),
    }
  }
  // A long read: not bound by the request timeout (an operator command).
  const { chains, orphans } = (await db.sql.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', read)) as Awaited<ReturnType<typeof read>>
  for (const id of orphans) {
    const vault = await loadDocument(db, id, VAULT_LISTS)
    const anchor = (vault?.data as { auditChain?: AuditAnchor } | null)?.auditChain
    if (anchor && (anchor.lines ?? 0) > 0) chains.push({ file: `vaults/${id}.audit.log`, lines: [], torn: 0, missing: true, anchor })
  }
  return chains
}

interface Pending<E> {
  event: E
  resolve: () => void
  reject: (error: unknown) => void
}

class PgAuditLog<E> implements AuditLog<E> {
  private queue: Pending<E>[] = []
  private writing: Promise<void> | null = null
  private scheduled = false
  /** Compaction under way: appends wait for it. */
  private paused = false
  private head: string
  private lines: number
  private bytes: number
  private anchorNow: AuditAnchor

  constructor(
    private readonly db: Database,
    private readonly key: string,
    readonly name: string,
    row: LogRow,
    private readonly seal: (event: E, prev: string) => SealedLine,
    private readonly holder: AnchorHolder | undefined,
    /** The row was made again from the vault's copy of the anchor: its lines are gone. */
    private lost: boolean,
  ) {
    this.head = row.head
    this.lines = row.lines
    this.bytes = row.bytes
    this.anchorNow = row.anchor
  }

  async begin(): Promise<void> {
    this.lost = false
    await this.copyAnchor()
  }

  /** The vault's copy of the anchor brought up to the row's (best effort: the row is what counts). */
  private async copyAnchor(): Promise<void> {
    const held = this.holder?.read()
    const now = this.anchorNow
    const copy = {
      start: now.start,
      checkpoint: now.checkpoint ?? null,
      head: now.head,
      lines: now.lines,
      bytes: now.bytes,
      keyedSince: now.keyedSince ?? null,
    }
    if (!this.holder || (held && JSON.stringify({ ...held, keyedSince: held.keyedSince ?? null }) === JSON.stringify(copy))) return
    await this.holder.write(copy).catch(() => {})
  }

  get durableHead(): string {
    return this.head
  }
  get durableLines(): number {
    return this.lines
  }
  /** The line count is the row's; the check at open does not change it. */
  set durableLines(_lines: number) {}
  /** Bytes of the lines as the file store would hold them (the anchor's `bytes`); every committed line is durable, readers need no bound. */
  get durableBytes(): number {
    return this.bytes
  }

  private taken(row: LogRow): void {
    this.head = row.head
    this.lines = row.lines
    this.bytes = row.bytes
    this.anchorNow = row.anchor
  }

  async current(): Promise<{ head: string; lines: number }> {
    const row = await this.db.run((sql) => selectRow(sql, this.key))
    if (row) this.taken(row)
    return { head: this.head, lines: this.lines }
  }

  append(event: E): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ event, resolve, reject })
      this.schedule()
    })
  }

  private schedule(): void {
    if (this.scheduled || this.paused || this.writing) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      this.flush()
    })
  }

  /**
   * Writes what is queued: sealed against the head this instance holds, in one statement that
   * moves the head only if the row still holds it (one round trip: every audited request waits on
   * it); when another instance appended meanwhile, it moved nothing, and one transaction locks the
   * row, seals against the head found there, inserts and moves it.
   */
  private flush(): void {
    if (this.paused || this.writing || this.queue.length === 0) return
    const batch = this.queue
    this.queue = []
    this.writing = (async () => {
      try {
        const row = (await this.appendAtHeld(batch)) ?? (await this.appendLocked(batch))
        this.taken(row)
        for (const pending of batch) pending.resolve()
      } catch (error) {
        for (const pending of batch) pending.reject(error)
      }
    })()
    void this.writing.finally(() => {
      this.writing = null
      this.flush()
    })
  }

  /**
   * The batch sealed against the head held, written if the row still holds that head, line count
   * and size (nothing appended or cut by another instance since): the row update and the lines in
   * one statement. Row-level locking makes a concurrent append of another instance wait, and the
   * condition is checked again on the row it committed. Null when the row had moved on.
   */
  private async appendAtHeld(batch: readonly { event: E }[]): Promise<LogRow | null> {
    const [held, lines, bytes] = [this.head, this.lines, this.bytes]
    const { texts, head, added } = this.sealBatch(batch, held)
    const rows = await this.db.run(
      (sql) => sql`
        WITH moved AS (
          UPDATE svc_audit_logs SET head = ${head}, lines = lines + ${texts.length}, bytes = bytes + ${added}
          WHERE log_id = ${this.key} AND (head, lines, bytes) = (${held}, ${lines}, ${bytes})
          RETURNING head, lines, bytes, anchor::text AS anchor
        ), written AS (
          INSERT INTO svc_audit_lines (log_id, seq, line)
          SELECT ${this.key}, (SELECT coalesce(max(seq), 0) FROM svc_audit_lines WHERE log_id = ${this.key}) + t.n, t.line
          FROM moved, string_to_table(${linesText(texts)}::text, E'\\n') WITH ORDINALITY AS t (line, n)
          RETURNING 1
        )
        SELECT head, lines, bytes, anchor FROM moved`,
    )
    return rows.length > 0 ? logRow(rows[0]) : null
  }

  /** The batch's lines sealed in order from `from`: their texts, the head after them, their bytes as a file holds them. */
  private sealBatch(batch: readonly { event: E }[], from: string): { texts: string[]; head: string; added: number } {
    let head = from
    let added = 0
    const texts = batch.map((pending) => {
      const sealed = this.seal(pending.event, head)
      head = sealed.hash
      added += bytesOf(sealed.text)
      return sealed.text
    })
    return { texts, head, added }
  }

  /** One transaction: lock the row, seal against its head, insert, move the head. */
  private async appendLocked(batch: readonly { event: E }[]): Promise<LogRow> {
    const row = await this.db.run((sql) =>
      sql.begin(async (tx) => {
        const row = await selectRow(tx, this.key, true)
        if (!row) throw new Error(`the audit log ${this.name} was deleted`)
        const { texts, head, added } = this.sealBatch(batch, row.head)
        const bytes = row.bytes + added
        const next = { ...row, head, lines: row.lines + texts.length, bytes }
        // One statement (a round trip less on every audited request): the lines go after the
        // last one stored (the row lock keeps other appends out meanwhile), and the head moves.
        await tx`WITH added AS (
            INSERT INTO svc_audit_lines (log_id, seq, line)
            SELECT ${this.key}, (SELECT coalesce(max(seq), 0) FROM svc_audit_lines WHERE log_id = ${this.key}) + t.n, t.line
            FROM string_to_table(${linesText(texts)}::text, E'\\n') WITH ORDINALITY AS t (line, n)
            RETURNING 1
          )
          UPDATE svc_audit_logs SET head = ${head}, lines = ${next.lines}, bytes = ${bytes} WHERE log_id = ${this.key}`
        return { ...next, anchor: { ...row.anchor, head, lines: next.lines, bytes } }
      }),
    )
    return row
  }

  async settle(): Promise<void> {
    while ((this.queue.length > 0 && !this.paused) || this.writing) {
      this.flush()
      await this.writing
    }
  }

  async close(): Promise<void> {
    await this.settle()
    await this.copyAnchor()
  }

  anchor(): AuditAnchor {
    return this.anchorNow
  }

  /** Head, lines and bytes are the row's (moved by appends); this records the keying time only. */
  async writeAnchor(anchor: AuditAnchor): Promise<void> {
    await this.db.run((sql) => keyedSince(sql, this.key, anchor.keyedSince))
    const row = await this.db.run((sql) => selectRow(sql, this.key))
    if (row) this.taken(row)
  }

  /**
   * The cut is found first, a page (and a query) at a time: lines never change once written, so
   * this needs no lock, and a long log does not hold one transaction past its time bound. Then one
   * short transaction with the row locked deletes up to the cut and moves the checkpoint and counts
   * together; another instance that compacted meanwhile is taken into account (only the rows still
   * there are counted, and a cut it passed already changes nothing).
   */
  async dropBefore(keep: (line: string) => boolean, checkpointOf: (lastDropped: string) => string): Promise<void> {
    this.paused = true
    try {
      while (this.writing) await this.writing
      let lastDropped: { seq: number; line: string } | null = null
      let after = 0
      scan: for (;;) {
        const from = after
        const rows = await this.page(from)
        for (const found of rows) {
          if (keep(found.line)) break scan
          lastDropped = { seq: Number(found.seq), line: found.line }
        }
        if (rows.length < PAGE_LINES) break
        after = Number(rows.at(-1)!.seq)
      }
      if (!lastDropped) return
      const cut = lastDropped
      const checkpoint = checkpointOf(cut.line)
      const row = await this.db.run((sql) =>
        sql.begin(async (tx) => {
          const row = await selectRow(tx, this.key, true)
          if (!row) return null
          const gone: { n: number }[] =
            await tx`DELETE FROM svc_audit_lines WHERE log_id = ${this.key} AND seq <= ${cut.seq} RETURNING octet_length(line) + 1 AS n`
          if (gone.length === 0) return row
          const anchor = { ...row.anchor, checkpoint }
          const next = { ...row, lines: row.lines - gone.length, bytes: row.bytes - gone.reduce((sum, one) => sum + Number(one.n), 0) }
          await tx`UPDATE svc_audit_logs SET lines = ${next.lines}, bytes = ${next.bytes}, anchor = ${storedAnchor(anchor)}::text::jsonb WHERE log_id = ${this.key}`
          return { ...next, anchor: { ...anchor, lines: next.lines, bytes: next.bytes } }
        }),
      )
      if (row) this.taken(row)
      await this.copyAnchor()
    } finally {
      this.paused = false
      this.flush()
    }
  }

  /** Lines after `seq`, oldest first, a page of them (each page one query within the time bound). */
  private page(after: number, size = PAGE_LINES): Promise<{ seq: string | number; line: string }[]> {
    return this.db.run((sql) => sql`SELECT seq, line FROM svc_audit_lines WHERE log_id = ${this.key} AND seq > ${after} ORDER BY seq LIMIT ${size}`)
  }

  /** The whole log, read a page at a time (a long one is no single query past the time bound). */
  async read(): Promise<AuditLogReadout> {
    if (this.lost) return { lines: [], bytes: 0, torn: 0, missing: true }
    const lines: string[] = []
    for (let after = 0; ; ) {
      const rows = await this.page(after, READ_PAGE_LINES)
      for (const row of rows) lines.push(row.line)
      if (rows.length < READ_PAGE_LINES) break
      after = Number(rows.at(-1)!.seq)
    }
    return { lines, bytes: lines.reduce((sum, line) => sum + bytesOf(line), 0), torn: 0, missing: false }
  }

  /** The line at the anchor's line count and how many follow it. */
  async lineAtAnchor(anchor: AuditAnchor): Promise<{ line: string | null; after: number } | null> {
    const want = anchor.lines ?? 0
    const [count] = await this.db.run((sql) => sql`SELECT count(*)::int AS n FROM svc_audit_lines WHERE log_id = ${this.key}`)
    const total = Number(count.n)
    if (want === 0) return { line: null, after: total }
    if (total < want) return { line: null, after: 0 }
    const [row] = await this.db.run((sql) => sql`SELECT line FROM svc_audit_lines WHERE log_id = ${this.key} ORDER BY seq OFFSET ${want - 1} LIMIT 1`)
    return { line: (row?.line as string | undefined) ?? null, after: total - want }
  }

  async firstLine(): Promise<string | null> {
    const [row] = await this.db.run((sql) => sql`SELECT line FROM svc_audit_lines WHERE log_id = ${this.key} ORDER BY seq LIMIT 1`)
    return (row?.line as string | undefined) ?? null
  }
}
