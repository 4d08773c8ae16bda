// The PostgreSQL store: the same documents as the file store (the accounts, one per vault), kept
// in the database (document.ts) so that two or more instances share them. Nothing of a user is
// written to the data folder. Open vaults are cached like the file store's; every use of one
// first asks the database for newer versions (refresh), so an answer never comes from data
// another instance has changed since. As there, a closed vault that something still holds (a
// request between two awaits, its audit log closing) is the one revived when it is opened again:
// one document per vault in an instance. Two would be two writers on one document in one
// process, each write of one a version conflict for the other, and under a small SVC_OPEN_VAULTS
// an open, close and reopen of vaults whose writes never settle.
import type { DatabaseMetrics, DataStore } from '../data-store'
import { DeletedVaultError } from '../errors'
import { ACCOUNTS_LISTS, FORMAT_VERSION, VAULT_LISTS, type AccountsDocument, type VaultDocument } from '../records'
import { checkVersion, DEFAULT_MAX_OPEN_VAULTS, DEFAULT_VAULT_IDLE_MS, withAllLists, withSessionIds } from '../store'
import type { Change } from '../changes'
import { Database, type DatabaseOptions } from './database'
import { loadDocument, PgDocument } from './document'
import { migrate } from './migrations'
import { PgState } from './state'

export const ACCOUNTS_ID = 'accounts'
/** How long reading the accounts at start may take. */
const START_LOAD_TIMEOUT_MS = 30_000
const VAULT_ID = /^[0-9a-f-]{36}$/

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

interface CachedVault {
  document: PgDocument<VaultDocument> | Promise<PgDocument<VaultDocument>>
  usedAt: number
}

export class PgStore implements DataStore {
  readonly kind = 'postgres'
  private readonly vaults = new Map<string, CachedVault>()
  /** Closed vaults, reachable while something still holds them (see the top of this file). */
  private readonly closed = new Map<string, WeakRef<PgDocument<VaultDocument>>>()
  private readonly forgetClosed = new FinalizationRegistry<string>((userId) => {
    if (this.closed.get(userId)?.deref() === undefined) this.closed.delete(userId)
  })
  private readonly deleted = new Set<string>()
  private readonly now: () => number
  private sweepTimer: ReturnType<typeof setInterval> | null = null
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
    if (!options.readOnly) {
      const idle = options.vaultIdleMs ?? DEFAULT_VAULT_IDLE_MS
      this.sweepTimer = setInterval(() => this.closeIdleVaults(), Math.min(Math.max(idle / 4, 1000), 60_000))
      this.sweepTimer.unref?.()
    }
  }

  static async open(url: string, options: PgStoreOptions): Promise<PgStore> {
    const db = new Database(url, options)
    try {
      await migrate(db)
      await createDocument(db, ACCOUNTS_ID, 'accounts', () => ({
        version: FORMAT_VERSION,
        keyCheck: options.createKeyCheck(),
        users: [],
        sessions: [],
        accessKeys: [],
        sharedVaults: [],
        vaultInvites: [],
        moves: [],
      }))
      // Nothing is served yet: the accounts may take longer than a request's bound to read.
      const loaded = await loadDocument(db, ACCOUNTS_ID, ACCOUNTS_LISTS, START_LOAD_TIMEOUT_MS)
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
      for (const [, cached] of this.vaults) if (cached.document instanceof PgDocument) void cached.document.refresh().catch(() => {})
      return
    }
    const colon = payload.lastIndexOf(':')
    const id = payload.slice(0, colon)
    if (payload.endsWith(':deleted')) {
      this.deleted.add(id)
      const known = this.vaults.get(id)?.document
      if (known instanceof PgDocument) known.retire(() => new DeletedVaultError())
      this.closed
        .get(id)
        ?.deref()
        ?.retire(() => new DeletedVaultError())
      this.closed.delete(id)
      if (this.vaults.delete(id)) this.options.onVaultClosed?.(id)
      return
    }
    const version = Number(payload.slice(colon + 1))
    const document = id === ACCOUNTS_ID ? this.accounts : this.vaults.get(id)?.document
    if (!(document instanceof PgDocument) || document.heldVersion >= version) return
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
    if (this.deleted.has(userId)) throw new DeletedVaultError()
    const known = this.vaults.get(userId)
    if (known) {
      this.touch(userId, known)
      const document = await known.document
      await document.refresh()
      return document
    }
    // Still held somewhere since it was closed: the same document, never a second one.
    const revived = this.closed.get(userId)?.deref()
    if (revived) {
      this.closed.delete(userId)
      this.vaults.set(userId, { document: revived, usedAt: this.now() })
      this.closeBeyondLimit()
      await revived.refresh()
      return revived
    }
    const opening = this.openVault(userId, create)
    const cached: CachedVault = { document: opening, usedAt: this.now() }
    this.vaults.set(userId, cached)
    opening.then(
      (document) => {
        cached.document = document
        this.closeBeyondLimit()
      },
      () => {
        if (this.vaults.get(userId) === cached) this.vaults.delete(userId)
      },
    )
    return opening
  }

  private async openVault(userId: string, create: () => VaultDocument): Promise<PgDocument<VaultDocument>> {
    let loaded = await loadDocument(this.db, userId, VAULT_LISTS)
    if (!loaded) {
      await createDocument(this.db, userId, 'vault', create)
      loaded = await loadDocument(this.db, userId, VAULT_LISTS)
    }
    if (!loaded || loaded.deleted) {
      this.deleted.add(userId)
      throw new DeletedVaultError()
    }
    const check = checkVersion<VaultDocument>(`vault ${userId}`)
    return new PgDocument<VaultDocument>(this.db, userId, loaded, {
      lists: VAULT_LISTS,
      migrate: (data) => withAllLists(check(data)),
      onWriteError: this.options.onWriteError,
    })
  }

  private touch(userId: string, cached: CachedVault): void {
    const now = this.now()
    if (now - cached.usedAt < 1000) return
    cached.usedAt = now
    this.vaults.delete(userId)
    this.vaults.set(userId, cached)
  }

  /** Closes one open vault: out of the cache, its key forgotten; kept reachable while held. */
  private closeVault(userId: string, document: PgDocument<VaultDocument>): void {
    this.vaults.delete(userId)
    this.closed.set(userId, new WeakRef(document))
    this.forgetClosed.register(document, userId)
    this.options.onVaultClosed?.(userId)
  }

  private closeBeyondLimit(): void {
    let excess = this.vaults.size - (this.options.maxOpenVaults ?? DEFAULT_MAX_OPEN_VAULTS)
    for (const [userId, cached] of this.vaults) {
      if (excess <= 0) break
      if (!(cached.document instanceof PgDocument)) continue
      this.closeVault(userId, cached.document)
      excess--
    }
  }

  closeIdleVaults(): number {
    const before = this.now() - (this.options.vaultIdleMs ?? DEFAULT_VAULT_IDLE_MS)
    let closed = 0
    for (const [userId, cached] of this.vaults) {
      if (cached.usedAt > before) break
      if (!(cached.document instanceof PgDocument)) continue
      this.closeVault(userId, cached.document)
      closed++
    }
    return closed
  }

  async vaultIds(): Promise<string[]> {
    const rows = await this.db.run((sql) => sql`SELECT id FROM svc_documents WHERE kind = 'vault' AND NOT deleted ORDER BY id`)
    return rows.map((row: { id: string }) => row.id)
  }

  wasDeleted(userId: string): boolean {
    return this.deleted.has(userId)
  }

  /** Deletes a vault for good: its changes go, a tombstone stays (no instance creates it again). */
  async deleteVault(userId: string): Promise<void> {
    this.deleted.add(userId)
    const known = this.vaults.get(userId)?.document ?? this.closed.get(userId)?.deref()
    this.vaults.delete(userId)
    this.closed.delete(userId)
    const vault = known ? await Promise.resolve(known).catch(() => null) : null
    await vault?.settle()
    vault?.retire(() => new DeletedVaultError())
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
  async close(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    if (this.sweepTimer) clearInterval(this.sweepTimer)
    await this.state.close()
    // The accounts are what a start reads (tens of MB at 50,000 users): stored whole as they stand.
    await (this.options.readOnly ? this.accounts.settle() : this.accounts.snapshotOnClose()).catch(() => {})
    const documents = [...[...this.vaults.values()].map((cached) => cached.document), ...[...this.closed.values()].map((ref) => ref.deref())]
    for (const known of documents) {
      const vault = await Promise.resolve(known).catch(() => null)
      await vault?.settle().catch(() => {})
    }
    await this.db.close()
  }
}

/** Creates a document at version 0 unless it exists (two instances creating one: the first wins). */
async function createDocument<T>(db: Database, id: string, kind: 'accounts' | 'vault', create: () => T): Promise<void> {
  const exists = await db.run((sql) => sql`SELECT 1 FROM svc_documents WHERE id = ${id}`)
  if (exists.length > 0) return
  const text = JSON.stringify(create())
  await db.run((sql) =>
    sql.begin(async (tx) => {
      const created =
        await tx`INSERT INTO svc_documents (id, kind, snapshot, snapshot_version) VALUES (${id}, ${kind}, ${text}, 0) ON CONFLICT (id) DO NOTHING RETURNING id`
      // Version 0's row: a refresh from version 0 finds where it stands (document.ts).
      if (created.length > 0) await tx`INSERT INTO svc_changes (document_id, version, changes) VALUES (${id}, 0, '[]')`
    }),
  )
}
