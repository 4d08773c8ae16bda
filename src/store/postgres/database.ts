// The connection to PostgreSQL (Bun.sql: Bun's own client, no dependency), with what the store
// needs around it: a time bound on every query and on all of a request's queries together (a cut
// network must not hang a request: it answers 503 STORE_UNAVAILABLE within a second), the figures
// /metrics shows, and LISTEN with a reconnect.
import { AsyncLocalStorage } from 'node:async_hooks'
import { SQL } from 'bun'
import { StoreUnavailableError } from '../errors'

/**
 * How long a query may take before its request answers 503 (the pool reconnects by itself): with
 * a request's later queries failing at once after it (beginRequest), the request answers within
 * a second with the time the server itself takes around them.
 */
export const QUERY_TIMEOUT_MS = 700
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

/**
 * Bun.sql's own codes for a connection that failed, closed or timed out, and the system's for a
 * socket that did (a cluster stopped: its Unix socket is gone; a network cut: reset, timed out).
 */
const CONNECTION_CODES = new Set([
  'ERR_POSTGRES_CONNECTION_CLOSED',
  'ERR_POSTGRES_CONNECTION_REFUSED',
  'ERR_POSTGRES_CONNECTION_FAILED',
  'ERR_POSTGRES_CONNECTION_TIMEOUT',
  'ERR_POSTGRES_IDLE_TIMEOUT',
  'ERR_POSTGRES_LIFETIME_TIMEOUT',
  'ERR_POSTGRES_TLS_UPGRADE_FAILED',
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOENT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
])

/**
 * Whether an error says the database cannot be reached (503, the instance marks it away) rather
 * than that something is wrong with a query or with our code (passed on unchanged: a unique key
 * taken is the caller's to handle, a syntax or type error is a 500 like any other bug). SQLSTATE
 * classes 08 (connection exception), 28 (the server refuses our role: pg_hba.conf, a password
 * changed; no query can run until an operator acts) and 53 (insufficient resources), and
 * 57P01-57P03 (the server shutting down or not yet accepting connections: a restart or a failover).
 */
export function isConnectionFailure(error: unknown): boolean {
  if (error instanceof StoreUnavailableError) return true
  const state = sqlState(error)
  if (state !== undefined) return /^(08|28|53)/.test(state) || /^57P0[123]$/.test(state)
  const code = (error as { code?: unknown })?.code
  return typeof code === 'string' && CONNECTION_CODES.has(code)
}

/** One request's queries (beginRequest): whether one found the database away; `open` until it answered. */
interface RequestState {
  away: boolean
  open: boolean
  /** performance.now() as the request began: a refresh sent after it may serve it (document.ts). */
  arrivedAt: number
}

const requests = new AsyncLocalStorage<RequestState>()

/**
 * Called as a request begins (app.ts, on the PostgreSQL store): once a query of the request found
 * the database away (its bound passed, or the connection failed), the request's later queries
 * fail at once instead of each waiting a bound of its own: a cut network answers 503 within
 * QUERY_TIMEOUT_MS and a little, however many queries the request would run (an error handled
 * on its way, a write after a read). Slow queries that answer are not charged: a busy database
 * is not an absent one, and a request of many quick queries (a long audit log read page by
 * page) is work. Answers the call that closes it once the request has answered: work it left
 * running (an audit summary, a listener) then runs as any background work does.
 */
export function beginRequest(): () => void {
  const state: RequestState = { away: false, open: true, arrivedAt: performance.now() }
  requests.enterWith(state)
  return () => {
    state.open = false
  }
}

/**
 * Counts the database away for the request under way when `error` says so (a query shared with
 * other requests found it away): its later queries fail at once, as after a query of its own.
 */
export function noteAway(error: unknown): void {
  const state = requests.getStore()
  if (state?.open && error instanceof StoreUnavailableError) state.away = true
}

/** A request's failure once a query of it found the database away. */
const awayError = () => new StoreUnavailableError('the database did not answer this request')

/** The request under way's failure once a query of it found the database away, else null. */
export function requestAway(): StoreUnavailableError | null {
  const state = requests.getStore()
  return state?.open && state.away ? awayError() : null
}

/**
 * When the request under way began (performance.now()), or undefined outside one: every write
 * another instance acknowledged before the request reached this one was committed before it.
 */
export function requestArrivedAt(): number | undefined {
  const state = requests.getStore()
  return state?.open ? state.arrivedAt : undefined
}

export class Database {
  readonly sql: Sql
  readonly stats: DatabaseStats = { queries: 0, querySeconds: [], conflicts: 0, reconnects: 0, failures: 0, notifications: 0 }
  /** A query's bound (QUERY_TIMEOUT_MS unless given). */
  readonly timeoutMs: number
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
   * Runs a query (or a transaction) within the time bound: within a request, what is left of the
   * request's (beginRequest); else the database's; `timeoutMs` gives work no request waits on a
   * longer one of its own (a large snapshot). A database that is away, or slower than the bound,
   * is a StoreUnavailableError (503); any other error (the data's, such as a unique key taken, or
   * a bug) passes unchanged.
   */
  async run<R>(query: (sql: Sql) => Promise<R>, options: { timeoutMs?: number } = {}): Promise<R> {
    if (this.closed) throw new StoreUnavailableError('the store is closed')
    const request = options.timeoutMs === undefined ? requests.getStore() : undefined
    const state = request?.open ? request : undefined
    if (state?.away) throw awayError()
    const bound = options.timeoutMs ?? this.timeoutMs
    const started = performance.now()
    this.inFlight++
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StoreUnavailableError(`the database did not answer within ${bound} ms`)), bound)
    })
    try {
      const result = await Promise.race([query(this.sql), timeout])
      this.recovered()
      return result
    } catch (error) {
      if (!isConnectionFailure(error)) {
        // The server answered (a data error): it is reachable. A bug of ours says nothing either way.
        if (sqlState(error) !== undefined) this.recovered()
        throw error
      }
      this.stats.failures++
      this.reachable = false
      // The request's later queries (an error handled on its way) fail at once: it has had its bound.
      if (state) state.away = true
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
