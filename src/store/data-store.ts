// What the rest of the service needs from storage, so that a second implementation (a
// PostgreSQL-backed store beside this file store: docs/scaling.md) is an addition, not a rewrite.
//
// A document is the service's unit of consistency: one user's vault, or the accounts. Services
// read `data` synchronously (readonly all the way down: records.ts) and change it only through
// the writer `update` hands them (writer.ts), whose promise resolves once the change is durable.
// The writer records each change as a record put or delete or a field set (changes.ts), which a
// file store appends to a change log and a database store would write as row upserts and
// deletes in one transaction.
import type { AccountsDocument, VaultDocument } from './records'
import type { SharedState } from './shared-state'
import type { Writer } from './writer'

export interface StoredDocument<T> {
  /** The current data; records in its lists are frozen: the writer replaces one to change it. */
  readonly data: T
  /** Applies a synchronous mutation made through `write` and resolves once it is durable (fails, changing nothing durable, when it cannot be). */
  update<R>(mutate: (data: T, write: Writer<T>) => R): Promise<R>
  /** Applies a synchronous mutation now; it becomes durable with the next commit (bookkeeping: commitSoon). */
  stage<R>(mutate: (data: T, write: Writer<T>) => R): R
  /** Resolves once the current data is durable. */
  commit(): Promise<void>
  /** For bookkeeping that may become durable later (lastSeenAt, lastUsedAt): commits within `delayMs`. */
  commitSoon(delayMs: number): void
  /** Runs `apply` just before each write, with the write: its changes go into that write. */
  beforeWrite(apply: (data: T, write: Writer<T>) => void): void
  /** Waits for every write under way or queued. */
  settle(): Promise<void>
  /**
   * Brings the data up to date with writes made elsewhere (another instance on the same
   * database) before a request reads it; absent where nothing else writes (the file store).
   */
  refresh?(): Promise<void>
}

/** A database store's figures for /metrics (the file store has none). */
export interface DatabaseMetrics {
  /** Connections the pool may open. */
  poolSize: number
  /** Queries and transactions under way (each holds a connection, or waits for one). */
  inFlight: number
  /** Whether the last query reached the database. */
  up: boolean
  queries: number
  /** Queries that failed for the database's sake (away, or slower than the bound): each a 503. */
  failures: number
  /** Writes that found their version taken by another instance (reloaded and made again). */
  conflicts: number
  /** Times the database was reached again after a failure. */
  reconnects: number
  /** Notifications of other instances' writes received. */
  notifications: number
}

export interface DataStore {
  readonly accounts: StoredDocument<AccountsDocument>
  /** What lives between requests outside the documents (throttles, used challenges, device sign-ins): shared-state.ts. */
  readonly state: SharedState
  /** The user's vault, opened (or created with `create`) on first use and kept while used. */
  vault(userId: string, create: () => VaultDocument): Promise<StoredDocument<VaultDocument>>
  /** The user's vault when it is open already (no promise to wait on: the hot reads). */
  openedVault(userId: string): StoredDocument<VaultDocument> | undefined
  /** How many vaults are open (a gauge for metrics). */
  readonly openVaultCount: number
  /** Closes the vaults unused for the idle time; returns how many. */
  closeIdleVaults(): number
  /** Ids of every vault stored. */
  vaultIds(): Promise<string[]>
  /** Whether the vault was deleted since start (a pass over vaultIds() skips it). */
  wasDeleted(userId: string): boolean
  /** Deletes a vault for good (account or shared vault deletion); it is never created again. */
  deleteVault(userId: string): Promise<void>
  /** Throws unless the store is open and takes a durable write (GET /readyz). */
  checkWritable(): Promise<void>
  /** The database's figures for /metrics; absent on the file store. */
  databaseMetrics?(): DatabaseMetrics
  /**
   * Starts one request's time bound for all its queries together; answers the call that ends it.
   * Absent on the file store (no query to bound).
   */
  beginRequest?(): () => void
  /** Waits for every write, then releases what the store holds (the data folder's lock). */
  close(): Promise<void>
}
