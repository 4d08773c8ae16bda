// The shared state (../shared-state.ts) in PostgreSQL, so that every instance on the database
// counts the same attempts and takes a single-use value once. Each operation is one statement
// (INSERT ... ON CONFLICT DO UPDATE ... RETURNING: the row lock orders racing instances). Keys
// are stored as SHA-256 of purpose and key (they may be codes or e-mail addresses); values are
// JSON of what is not secret. Times are the server's clock (the injectable one), in milliseconds.
// Expired rows are deleted by a sweep every minute.
import { createHash } from 'node:crypto'
import type { Entries, Entry, Limit, SharedState, Taken, WindowCounter } from '../shared-state'
import { waitFor } from '../shared-state'
import type { Database } from './database'

const SWEEP_MS = 60_000
/** The first key of background passes' advisory locks (the second: the pass's name); migrations use the one-key space. */
const PASS_LOCK_SPACE = 0x5356_4357

const hashKey = (name: string, key: string) => createHash('sha256').update(name).update('\u0000').update(key).digest('hex')

/** A pass's name as a 32-bit lock key. */
function lockKey(name: string): number {
  return createHash('sha256').update(name).digest().readInt32BE(0)
}

const parseEvents = (text: string | null): number[] =>
  text
    ? text
        .split(',')
        .map(Number)
        .sort((a, b) => a - b)
    : []

class PgWindow implements WindowCounter {
  constructor(
    private readonly db: Database,
    private readonly name: string,
    private readonly windowMs: number,
    private readonly now: () => number,
  ) {}

  async take(limits: readonly Limit[]): Promise<Taken> {
    const now = this.now()
    const since = now - this.windowMs
    const wanted = limits.map(({ key, max }) => ({ key: hashKey(this.name, key), max }))
    // Sorted: two statements lock the rows in one order (no deadlock).
    wanted.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    const input = JSON.stringify(wanted)
    const rows: { key: string; events: string; added: boolean }[] = await this.db.run(
      (sql) => sql`
      WITH input AS (SELECT * FROM jsonb_to_recordset(${input}::jsonb) AS i(key text, max int))
      INSERT INTO svc_state_windows AS w (key, events, added, expires_at)
      SELECT key, ARRAY[${now}::bigint], max > 0, ${now + this.windowMs}::bigint FROM input ORDER BY key
      ON CONFLICT (key) DO UPDATE SET
        events = CASE
          WHEN (SELECT count(*) FROM unnest(w.events) e WHERE e > ${since}::bigint) < (SELECT max FROM input WHERE input.key = w.key)
          THEN ARRAY(SELECT e FROM unnest(w.events) e WHERE e > ${since}::bigint ORDER BY e) || ${now}::bigint
          ELSE ARRAY(SELECT e FROM unnest(w.events) e WHERE e > ${since}::bigint ORDER BY e) END,
        added = (SELECT count(*) FROM unnest(w.events) e WHERE e > ${since}::bigint) < (SELECT max FROM input WHERE input.key = w.key),
        expires_at = ${now + this.windowMs}::bigint
      RETURNING key, array_to_string(events, ',') AS events, added`,
    )
    const refused = rows.filter((row) => !row.added)
    if (refused.length === 0) return { at: now }
    // All or nothing: the keys that took this event give it back.
    const added = rows.filter((row) => row.added).map((row) => row.key)
    if (added.length > 0) await this.removeHashed(added, now)
    let retryAfter = 1
    for (const row of refused) {
      const max = wanted.find((w) => w.key === row.key)!.max
      retryAfter = Math.max(retryAfter, waitFor(parseEvents(row.events), max, this.windowMs, now))
    }
    return { retryAfter }
  }

  async add(key: string): Promise<{ at: number; count: number }> {
    const now = this.now()
    const since = now - this.windowMs
    const [row] = await this.db.run(
      (sql) => sql`
      INSERT INTO svc_state_windows AS w (key, events, added, expires_at)
      VALUES (${hashKey(this.name, key)}, ARRAY[${now}::bigint], true, ${now + this.windowMs}::bigint)
      ON CONFLICT (key) DO UPDATE SET
        events = ARRAY(SELECT e FROM unnest(w.events) e WHERE e > ${since}::bigint ORDER BY e) || ${now}::bigint,
        added = true,
        expires_at = ${now + this.windowMs}::bigint
      RETURNING cardinality(events) AS count`,
    )
    return { at: now, count: Number(row.count) }
  }

  async wait(key: string, max: number): Promise<number> {
    const now = this.now()
    const rows = await this.db.run(
      (sql) => sql`SELECT array_to_string(ARRAY(SELECT e FROM unnest(events) e WHERE e > ${now - this.windowMs}::bigint), ',') AS events
        FROM svc_state_windows WHERE key = ${hashKey(this.name, key)}`,
    )
    return waitFor(parseEvents(rows[0]?.events ?? null), max, this.windowMs, now)
  }

  async remove(keys: readonly string[], at: number): Promise<void> {
    await this.removeHashed(
      keys.map((key) => hashKey(this.name, key)),
      at,
    )
  }

  /** Takes one event at `at` out of each key's list (one: two events of the same millisecond count twice). */
  private async removeHashed(keys: readonly string[], at: number): Promise<void> {
    const list = JSON.stringify([...keys].sort())
    await this.db.run(
      (sql) => sql`
      UPDATE svc_state_windows AS w SET events = ARRAY(
        SELECT e FROM unnest(w.events) WITH ORDINALITY AS u(e, i)
        WHERE i IS DISTINCT FROM (SELECT min(j) FROM unnest(w.events) WITH ORDINALITY AS v(f, j) WHERE f = ${at}::bigint)
        ORDER BY i)
      WHERE key IN (SELECT jsonb_array_elements_text(${list}::jsonb))`,
    )
  }

  async clear(key: string): Promise<void> {
    await this.db.run((sql) => sql`DELETE FROM svc_state_windows WHERE key = ${hashKey(this.name, key)}`)
  }
}

class PgEntries implements Entries {
  constructor(
    private readonly db: Database,
    private readonly name: string,
    private readonly now: () => number,
  ) {}

  async get<T>(key: string): Promise<Entry<T> | undefined> {
    const [row] = await this.db.run(
      (sql) => sql`SELECT value, version FROM svc_state_entries WHERE key = ${hashKey(this.name, key)} AND expires_at > ${this.now()}::bigint`,
    )
    return row ? { value: JSON.parse(row.value) as T, version: Number(row.version) } : undefined
  }

  async create<T>(key: string, value: T, expiresAt: number): Promise<boolean> {
    const rows = await this.db.run(
      (sql) => sql`
      INSERT INTO svc_state_entries AS s (key, value, version, count, expires_at)
      VALUES (${hashKey(this.name, key)}, ${JSON.stringify(value)}, 1, 0, ${expiresAt}::bigint)
      ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, version = s.version + 1, count = 0, expires_at = EXCLUDED.expires_at
        WHERE s.expires_at <= ${this.now()}::bigint
      RETURNING 1`,
    )
    return rows.length > 0
  }

  async replace<T>(key: string, version: number, value: T, expiresAt?: number): Promise<boolean> {
    const rows = await this.db.run(
      (sql) => sql`
      UPDATE svc_state_entries SET value = ${JSON.stringify(value)}, version = version + 1, expires_at = coalesce(${expiresAt ?? null}::bigint, expires_at)
      WHERE key = ${hashKey(this.name, key)} AND version = ${version} AND expires_at > ${this.now()}::bigint
      RETURNING 1`,
    )
    return rows.length > 0
  }

  async remove(key: string, version?: number): Promise<boolean> {
    const rows = await this.db.run(
      (sql) => sql`
      DELETE FROM svc_state_entries
      WHERE key = ${hashKey(this.name, key)} AND (${version ?? null}::bigint IS NULL OR version = ${version ?? null}::bigint) AND expires_at > ${this.now()}::bigint
      RETURNING 1`,
    )
    return rows.length > 0
  }

  async increment(key: string, delta: number, expiresAt: number): Promise<number> {
    const [row] = await this.db.run(
      (sql) => sql`
      INSERT INTO svc_state_entries AS s (key, value, version, count, expires_at)
      VALUES (${hashKey(this.name, key)}, 'null', 1, ${delta}, ${expiresAt}::bigint)
      ON CONFLICT (key) DO UPDATE SET
        count = CASE WHEN s.expires_at <= ${this.now()}::bigint THEN ${delta} ELSE s.count + ${delta} END,
        expires_at = CASE WHEN s.expires_at <= ${this.now()}::bigint THEN EXCLUDED.expires_at ELSE s.expires_at END,
        version = s.version + 1
      RETURNING count`,
    )
    return Number(row.count)
  }
}

export class PgState implements SharedState {
  readonly shared = true
  private sweepTimer: ReturnType<typeof setInterval> | null = null

  constructor(
    private readonly db: Database,
    private readonly now: () => number,
    options: { sweep?: boolean } = {},
  ) {
    if (options.sweep !== false) {
      this.sweepTimer = setInterval(() => void this.sweep().catch(() => {}), SWEEP_MS)
      this.sweepTimer.unref?.()
    }
  }

  window(name: string, windowMs: number): WindowCounter {
    return new PgWindow(this.db, name, windowMs, this.now)
  }

  entries(name: string): Entries {
    return new PgEntries(this.db, name, this.now)
  }

  /** Deletes what expired (any instance may: a row gone twice is gone). */
  async sweep(): Promise<number> {
    const now = this.now()
    return this.db.run(async (sql) => {
      const windows = await sql`DELETE FROM svc_state_windows WHERE expires_at <= ${now}::bigint`
      const entries = await sql`DELETE FROM svc_state_entries WHERE expires_at <= ${now}::bigint`
      return (windows.count ?? 0) + (entries.count ?? 0)
    })
  }

  /**
   * Runs the pass holding a session-level advisory lock on a connection of its own; another
   * instance trying meanwhile skips its pass (answers undefined).
   */
  async exclusive<R>(name: string, pass: () => Promise<R>): Promise<R | undefined> {
    const reserved = await this.db.run((sql) => sql.reserve())
    try {
      const [row] = await this.db.run(() => reserved`SELECT pg_try_advisory_lock(${PASS_LOCK_SPACE}::int, ${lockKey(name)}::int) AS locked`)
      if (!row.locked) return undefined
      try {
        return await pass()
      } finally {
        await reserved`SELECT pg_advisory_unlock(${PASS_LOCK_SPACE}::int, ${lockKey(name)}::int)`.catch(() => {})
      }
    } finally {
      reserved.release()
    }
  }

  async close(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer)
  }
}
