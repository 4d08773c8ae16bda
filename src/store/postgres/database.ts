// The connection to PostgreSQL (Bun.sql: Bun's own client, no dependency), with what the store
// needs around it: a time bound on every query (a cut network must not hang a request: it
// answers 503 STORE_UNAVAILABLE), the figures /metrics shows, and LISTEN with a reconnect.
import { SQL } from 'bun'
import { StoreUnavailableError } from '../errors'

/** How long a query may take before its request answers 503 (the pool reconnects by itself). */
export const QUERY_TIMEOUT_MS = 1000
/** The channel instances tell each other about written documents on. */
export const CHANNEL = 'svc_vault'

export interface DatabaseStats {
  queries: number
  querySeconds: number[]
  conflicts: number
  reconnects: number
  failures: number
  notifications: number
}

export type Sql = InstanceType<typeof SQL>

export interface DatabaseOptions {
  /** Pool size; default 10. */
  max?: number
  /** A slow query's bound; default QUERY_TIMEOUT_MS. */
  timeoutMs?: number
  /** Told each query's (or transaction's) time, answered or failed: the latency histogram of /metrics. */
  onQuery?: (seconds: number) => void
  /** How long a connection attempt may take; default the query bound (operator commands: shorter than their long one). */
  connectTimeoutMs?: number
}

/** PostgreSQL's error code of a thrown query error (SQLSTATE), if it is one. */
export function sqlState(error: unknown): string | undefined {
  const errno = (error as { errno?: unknown })?.errno
  return typeof errno === 'string' && /^[0-9A-Z]{5}$/.test(errno) ? errno : undefined
}

/** Integrity errors are the data's (a unique key taken), not the database's being away. */
const DATA_ERRORS = /^(23|22|42|40)/

export class Database {
  readonly sql: Sql
  readonly stats: DatabaseStats = { queries: 0, querySeconds: [], conflicts: 0, reconnects: 0, failures: 0, notifications: 0 }
  private readonly timeoutMs: number
  private listeners: ((payload: string) => void)[] = []
  private unlisten: (() => Promise<void>) | null = null
  private listenTimer: ReturnType<typeof setTimeout> | null = null
  private closed = false
  private readonly onQuery: ((seconds: number) => void) | undefined
  /** The pool's size (connections at most). */
  readonly poolSize: number
  /** Queries and transactions under way: each holds a connection of the pool, or waits for one. */
  inFlight = 0
  /** Whether the last query reached the database (a failure turns it false until one does again). */
  reachable = true

  constructor(
    readonly url: string,
    options: DatabaseOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? QUERY_TIMEOUT_MS
    this.onQuery = options.onQuery
    this.poolSize = options.max ?? 10
    this.sql = new SQL(url, {
      max: this.poolSize,
      // Seconds: a connection attempt to a stopped or unreachable server gives up within the bound.
      connectionTimeout: Math.max(1, Math.ceil((options.connectTimeoutMs ?? this.timeoutMs) / 1000)),
      idleTimeout: 60,
      onclose: () => {
        if (!this.closed) this.reachable = false
      },
    })
  }

  /**
   * Runs a query (or a transaction) within the time bound (`timeoutMs`: a longer one for work no
   * request waits on, such as a large snapshot). A database that is away, or slower than the
   * bound, is a StoreUnavailableError (503); errors of the data itself pass unchanged.
   */
  async run<R>(query: (sql: Sql) => Promise<R>, options: { timeoutMs?: number } = {}): Promise<R> {
    if (this.closed) throw new StoreUnavailableError('the store is closed')
    const started = performance.now()
    this.inFlight++
    const bound = options.timeoutMs ?? this.timeoutMs
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StoreUnavailableError(`the database did not answer within ${bound} ms`)), bound)
    })
    try {
      const result = await Promise.race([query(this.sql), timeout])
      this.recovered()
      return result
    } catch (error) {
      const state = sqlState(error)
      if (state !== undefined && DATA_ERRORS.test(state)) {
        this.recovered()
        throw error
      }
      this.stats.failures++
      this.reachable = false
      if (error instanceof StoreUnavailableError) throw error
      throw new StoreUnavailableError(`the database is unavailable (${describe(error)})`)
    } finally {
      clearTimeout(timer)
      this.inFlight--
      this.stats.queries++
      const seconds = (performance.now() - started) / 1000
      if (this.stats.querySeconds.length < 10_000) this.stats.querySeconds.push(seconds)
      this.onQuery?.(seconds)
    }
  }

  private recovered(): void {
    if (this.reachable) return
    this.reachable = true
    this.stats.reconnects++
    // Notifications sent while away were lost: listen again, and let the listeners know.
    void this.relisten()
  }

  /** Calls `onPayload` for each notification on the channel; kept across reconnects. */
  async listen(onPayload: (payload: string) => void): Promise<void> {
    this.listeners.push(onPayload)
    if (this.listeners.length === 1) await this.relisten()
  }

  private async relisten(): Promise<void> {
    if (this.closed || this.listeners.length === 0) return
    if (this.listenTimer) clearTimeout(this.listenTimer)
    this.listenTimer = null
    const old = this.unlisten
    this.unlisten = null
    await old?.().catch(() => {})
    try {
      const unlisten = await this.sql.listen(CHANNEL, (payload: string) => {
        this.stats.notifications++
        for (const listener of this.listeners) listener(payload)
      })
      this.unlisten = typeof unlisten === 'function' ? unlisten : null
      // Whatever was sent while nobody listened: every listener treats '*' as "drop everything".
      for (const listener of this.listeners) listener('*')
    } catch {
      this.listenTimer = setTimeout(() => void this.relisten(), 1000)
      this.listenTimer.unref?.()
    }
  }

  async close(): Promise<void> {
    if (this.closed) return
    if (this.listenTimer) clearTimeout(this.listenTimer)
    await this.unlisten?.().catch(() => {})
    this.closed = true
    await this.sql.close({ timeout: 2 }).catch(() => {})
  }
}

function describe(error: unknown): string {
  const message = (error as Error)?.message ?? String(error)
  // Never the URL: it may carry the password.
  return message.replace(/postgres(ql)?:\/\/\S+/g, 'postgres://…').slice(0, 200)
}
