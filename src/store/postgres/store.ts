// The PostgreSQL store: the same documents as the file store (the accounts, one per vault), kept
// in the database (document.ts) so that two or more instances share them. Nothing of a user is
// written to the data folder. Open vaults are cached like the file store's (vault-cache.ts);
// every use of one first asks the database for newer versions (refresh), so an answer never
// comes from data another instance has changed since. As there, a closed vault that something
// still holds is the one revived when it is opened again: one document per vault in an
// instance. Two would be two writers on one document in one process, each write of one a
// version conflict for the other, and under a small SVC_OPEN_VAULTS an open, close and reopen
// of vaults whose writes never settle.
import type { DatabaseMetrics, DataStore } from '../data-store'
import { DeletedVaultError } from '../errors'
import { ACCOUNTS_LISTS, VAULT_LISTS, type AccountsDocument, type VaultDocument } from '../records'
import { checkVersion, newAccounts, withAllLists, withSessionIds } from '../store'
import { VaultCache } from '../vault-cache'
import type { Change } from '../changes'
import { beginRequest, Database, type DatabaseOptions } from './database'
import { loadDocument, loadDocumentIn, PgDocument, type Loaded } from './document'
import { migrate, SCHEMA_VERSION } from './migrations'
import { PgState } from './state'

export const ACCOUNTS_ID = 'accounts'
/**
 * How long each of a start's queries may take: reading the accounts (tens of MB at 50,000 users),
 * or waiting for another instance starting at once to commit them. A start is no request: a
 * request's bound (QUERY_TIMEOUT_MS) failed it on a busy machine.
 */
const START_TIMEOUT_MS = 30_000
const VAULT_ID = /^[0-9a-f-]{36}$/

/**
 * The accounts, read while the schema is checked (migrate), in one snapshot with the schema's
 * version: taken only when that version is this server's, so never data of a schema that another
 * instance was migrating meanwhile. Null when it is not (a first start, an upgrade: read again
 * after the migrations) or the read failed (migrate reports why). At start on 50,000 accounts
 * the schema check, with the first connection some 40 ms, no longer comes before the read.
 */
function readAccountsIfCurrent(db: Database): Promise<Loaded | null> {
  return db
    .run(
      (sql) =>
        sql.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', async (tx) => {
          const [schema] = await tx`SELECT coalesce(max(version), 0)::int AS version FROM svc_schema`
          return Number(schema.version) === SCHEMA_VERSION ? loadDocumentIn(tx, ACCOUNTS_ID, ACCOUNTS_LISTS) : null
        }) as Promise<Loaded | null>,
      { timeoutMs: START_TIMEOUT_MS },
    )
    .catch(() => null)
}

export interface PgStoreOptions extends DatabaseOptions {
  createKeyCheck: () => string
  onWriteError?: (id: string, error: unknown) => void
  onAccountsReload?: (data: AccountsDocument) => void
  /** Told other instances' changes to the accounts, applied (indexes follow them); absent: onAccountsReload. */
  onAccountsChanges?: (data: AccountsDocument, changes: readonly Change[]) => void
  maxOpenVaults?: number
  vaultIdleMs?: number
  onVaultClosed?: (userId: string) => void
  now?: () => number
  /** Read-only tools (backup, the migration's source): no timers, no listening. */
  readOnly?: boolean
}

export class PgStore implements DataStore {
  readonly kind = 'postgres'
  /** The open vaults, and the closed ones still held. */
  private readonly vaults: VaultCache<PgDocument<VaultDocument>>
  private readonly now: () => number
  private stopped = false
  /** Throttle counts, used challenges, pending device sign-ins: in the database, for every instance. */
  readonly state: PgState

  private constructor(
    readonly db: Database,
    readonly accounts: PgDocument<AccountsDocument>,
    private readonly options: PgStoreOptions,
  ) {
    this.now = options.now ?? Date.now
    this.state = new PgState(db, this.now, { sweep: !options.readOnly })
    this.vaults = new VaultCache({
      now: this.now,
      maxOpenVaults: options.maxOpenVaults,
      vaultIdleMs: options.vaultIdleMs,
      onVaultClosed: options.onVaultClosed,
      sweep: !options.readOnly,
      refresh: (document) => document.refresh(),
    })
  }

  static async open(url: string, options: PgStoreOptions): Promise<PgStore> {
    const db = new Database(url, options)
    try {
      // Nothing is served yet: the accounts may take longer than a request's bound to read.
      const early = readAccountsIfCurrent(db)
      await migrate(db, START_TIMEOUT_MS)
      let loaded = await early
      if (!loaded) {
        await createDocument(db, ACCOUNTS_ID, 'accounts', () => newAccounts(options.createKeyCheck()), START_TIMEOUT_MS)
        loaded = await loadDocument(db, ACCOUNTS_ID, ACCOUNTS_LISTS, START_TIMEOUT_MS)
      }
      if (!loaded) throw new Error('the accounts document is missing from the database')
      const check = checkVersion<AccountsDocument>('the accounts document')
      const accounts = new PgDocument<AccountsDocument>(db, ACCOUNTS_ID, loaded, {
        lists: ACCOUNTS_LISTS,
        migrate: (data) => withSessionIds(check(withSessionIds(data))),
        onReload: (data) => options.onAccountsReload?.(data),
        onChanges: options.onAccountsChanges,
        onWriteError: options.onWriteError,
      })
      const store = new PgStore(db, accounts, options)
      if (!options.readOnly) await db.listen((payload) => store.notified(payload))
      return store
    } catch (error) {
      await db.close()
      throw error
    }
  }

  /** Another instance wrote a document: bring a cached one up to date now, not at its next use. */
  private notified(payload: string): void {
    if (payload === '*') {
      void this.accounts.refresh().catch(() => {})
      for (const document of this.vaults.openDocuments()) void document.refresh().catch(() => {})
      return
    }
    const colon = payload.lastIndexOf(':')
    const id = payload.slice(0, colon)
    if (payload.endsWith(':deleted')) {
      this.vaults.deletedElsewhere(id)
      return
    }
    const version = Number(payload.slice(colon + 1))
    const document = id === ACCOUNTS_ID ? this.accounts : this.vaults.peek(id)
    if (!document || document.heldVersion >= version) return
    void document.refresh().catch(() => {})
  }

  get openVaultCount(): number {
    return this.vaults.size
  }

  /** A vault is read only after asking for newer versions: never the cached one alone. */
  openedVault(): undefined {
    return undefined
  }

  async vault(userId: string, create: () => VaultDocument): Promise<PgDocument<VaultDocument>> {
    if (!VAULT_ID.test(userId)) throw new Error('invalid user id')
    // A cached or revived one is refreshed first (the cache's `refresh`); a new one is fresh.
    return this.vaults.vault(userId, () => this.openVault(userId, create))
  }

  private async openVault(userId: string, create: () => VaultDocument): Promise<PgDocument<VaultDocument>> {
    let loaded = await loadDocument(this.db, userId, VAULT_LISTS)
    if (!loaded) {
      await createDocument(this.db, userId, 'vault', create)
      loaded = await loadDocument(this.db, userId, VAULT_LISTS)
    }
    if (!loaded || loaded.deleted) {
      this.vaults.markDeleted(userId)
      throw new DeletedVaultError()
    }
    const check = checkVersion<VaultDocument>(`vault ${userId}`)
    return new PgDocument<VaultDocument>(this.db, userId, loaded, {
      lists: VAULT_LISTS,
      migrate: (data) => withAllLists(check(data)),
      onWriteError: this.options.onWriteError,
    })
  }

  closeIdleVaults(): number {
    return this.vaults.closeIdleVaults()
  }

  async vaultIds(): Promise<string[]> {
    const rows = await this.db.run((sql) => sql`SELECT id FROM svc_documents WHERE kind = 'vault' AND NOT deleted ORDER BY id`)
    return rows.map((row: { id: string }) => row.id)
  }

  wasDeleted(userId: string): boolean {
    return this.vaults.wasDeleted(userId)
  }

  /** Deletes a vault for good: its changes go, a tombstone stays (no instance creates it again). */
  async deleteVault(userId: string): Promise<void> {
    await this.vaults.delete(userId)
    await this.db.run((sql) =>
      sql.begin(async (tx) => {
        await tx`INSERT INTO svc_documents (id, kind, snapshot, snapshot_version, deleted) VALUES (${userId}, 'vault', '{}', 0, true)
          ON CONFLICT (id) DO UPDATE SET deleted = true, snapshot = '{}'`
        await tx`DELETE FROM svc_changes WHERE document_id = ${userId}`
        await tx`SELECT pg_notify('svc_vault', ${`${userId}:deleted`})`
      }),
    )
  }

  /** Throws unless the database answers and takes writes (GET /readyz). */
  async checkWritable(): Promise<void> {
    if (this.stopped) throw new Error('the store is closed')
    const [row] = await this.db.run((sql) => sql`SELECT pg_is_in_recovery() AS standby`)
    if (row.standby) throw new Error('the database is a standby (read-only)')
  }

  databaseMetrics(): DatabaseMetrics {
    const { queries, failures, conflicts, reconnects, notifications } = this.db.stats
    return { poolSize: this.db.poolSize, inFlight: this.db.inFlight, up: this.db.reachable, queries, failures, conflicts, reconnects, notifications }
  }

  /** Waits for every write under way, then closes the connections. */
  beginRequest(): () => void {
    return beginRequest()
  }

  async close(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    this.vaults.stop()
    await this.state.close()
    // The accounts are what a start reads (tens of MB at 50,000 users): stored whole as they stand.
    await (this.options.readOnly ? this.accounts.settle() : this.accounts.snapshotOnClose()).catch(() => {})
    await this.vaults.finishAll((vault) => vault.settle())
    await this.db.close()
  }
}

/**
 * Creates a document at version 0 unless it exists (two instances creating one: the first wins,
 * the other waiting for its commit). `timeoutMs`: the start's bound, for the accounts.
 */
async function createDocument<T>(db: Database, id: string, kind: 'accounts' | 'vault', create: () => T, timeoutMs?: number): Promise<void> {
  const exists = await db.run((sql) => sql`SELECT 1 FROM svc_documents WHERE id = ${id}`, { timeoutMs })
  if (exists.length > 0) return
  const text = JSON.stringify(create())
  await db.run(
    (sql) =>
      sql.begin(async (tx) => {
        const created =
          await tx`INSERT INTO svc_documents (id, kind, snapshot, snapshot_version) VALUES (${id}, ${kind}, ${text}, 0) ON CONFLICT (id) DO NOTHING RETURNING id`
        // Version 0's row: a refresh from version 0 finds where it stands (document.ts).
        if (created.length > 0) await tx`INSERT INTO svc_changes (document_id, version, changes) VALUES (${id}, 0, '[]')`
      }),
    { timeoutMs },
  )
}
