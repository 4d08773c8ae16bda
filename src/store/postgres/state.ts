// The shared state (../shared-state.ts) in PostgreSQL, so that every instance on the database
// counts the same attempts and takes a single-use value once. Each operation is one statement
// (INSERT ... ON CONFLICT DO UPDATE ... RETURNING: the row lock orders racing instances; a take
// over several keys is the function svc_state_take of migration 3, which locks them together). Keys
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

/** How long (real time) an instance answers a refusal it heard from the database without asking again. */
const REFUSAL_MEMORY_MS = 1000

class PgWindow implements WindowCounter {
  /**
   * Keys the database refused lately: until when (the server's clock: the oldest event leaves the
   * window) and, in real time, for how long this instance believes it. A burst of guesses at one
   * key then costs the database a few statements, not one each (all would wait for one row lock
   * and, past the query bound, answer 503). Counting stays the database's: this only refuses.
   */
  private readonly refused = new Map<string, { freeAt: number; heardAt: number }>()
  /** Takes of the same keys, one at a time on this instance (the next one sees the last refusal). */
  private readonly queues = new Map<string, Promise<unknown>>()

  constructor(
    private readonly db: Database,
    private readonly name: string,
    private readonly windowMs: number,
    private readonly now: () => number,
  ) {}

  /** Seconds to wait, when a key of these was refused lately; else 0. */
  private rememberedRefusal(keys: readonly string[]): number {
    const now = this.now()
    let wait = 0
    for (const key of keys) {
      const refusal = this.refused.get(key)
      if (!refusal) continue
      if (refusal.freeAt <= now || performance.now() - refusal.heardAt > REFUSAL_MEMORY_MS) this.refused.delete(key)
      else wait = Math.max(wait, Math.max(1, Math.ceil((refusal.freeAt - now) / 1000)))
    }
    return wait
  }

  take(limits: readonly Limit[]): Promise<Taken> {
    const wanted = limits.map(({ key, max }) => ({ key: hashKey(this.name, key), max }))
    const keys = wanted.map((w) => w.key)
    const signature = keys.join(',')
    const before = this.queues.get(signature) ?? Promise.resolve()
    const taking = before.then(() => {
      const wait = this.rememberedRefusal(keys)
      return wait > 0 ? { retryAfter: wait } : this.takeNow(wanted)
    })
    const settled = taking.catch(() => {})
    this.queues.set(signature, settled)
    void settled.then(() => {
      if (this.queues.get(signature) === settled) this.queues.delete(signature)
    })
    return taking
  }

  private async takeNow(wanted: readonly Limit[]): Promise<Taken> {
    const now = this.now()
    const since = now - this.windowMs
    const rows: { key: string; events: string; counted: boolean }[] = await this.db.run(
      (sql) =>
        sql`SELECT key, events, counted FROM svc_state_take(${JSON.stringify(wanted)}, ${now}::bigint, ${since}::bigint, ${now + this.windowMs}::bigint)`,
    )
    if (rows.length > 0 && rows[0].counted) return { at: now }
    let retryAfter = 1
    for (const row of rows) {
      const max = wanted.find((w) => w.key === row.key)!.max
      const wait = waitFor(parseEvents(row.events), max, this.windowMs, now)
      if (wait > 0) this.refused.set(row.key, { freeAt: now + wait * 1000, heardAt: performance.now() })
      retryAfter = Math.max(retryAfter, wait)
    }
    if (this.refused.size > 10_000) this.refused.clear()
    return { retryAfter }
  }

  async add(key: string): Promise<{ at: number; count: number }> {
    const now = this.now()
    const since = now - this.windowMs
    const [row] = await this.db.run(
      (sql) => sql`
      INSERT INTO svc_state_windows AS w (key, events, expires_at)
      VALUES (${hashKey(this.name, key)}, ARRAY[${now}::bigint], ${now + this.windowMs}::bigint)
      ON CONFLICT (key) DO UPDATE SET
        events = ARRAY(SELECT e FROM unnest(w.events) e WHERE e > ${since}::bigint ORDER BY e) || ${now}::bigint,
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
    for (const key of keys) this.refused.delete(hashKey(this.name, key))
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
      WHERE key IN (SELECT jsonb_array_elements_text(${list}::text::jsonb))`,
    )
  }

  async clear(key: string): Promise<void> {
    this.refused.delete(hashKey(this.name, key))
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
  /** One counter per purpose: its memory of refusals is kept. */
  private readonly windows = new Map<string, PgWindow>()

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
    const id = `${name}/${windowMs}`
    let counter = this.windows.get(id)
    if (!counter) this.windows.set(id, (counter = new PgWindow(this.db, name, windowMs, this.now)))
    return counter
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
