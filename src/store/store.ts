// Every file of the vault: the accounts document and one vault document per user. Only this
// folder touches the data files.
//
// Open vaults are bounded by the active set, not by the number of users (vault-cache.ts): a
// closed vault still held somewhere is revived, never read from its file a second time beside
// it, so there is never more than one writer per file.
import { mkdirSync, readdirSync, unlinkSync } from 'node:fs'
import { fsyncDir } from './atomic-file'
import { join } from 'node:path'
import { isTempFile, onFsync, probeWritable } from './atomic-file'
import type { DataStore } from './data-store'
import { MemoryState } from './shared-state'
import { Document } from './document'
import { acquireLock } from './lock'
import { createHash } from 'node:crypto'
import { ACCOUNTS_LISTS, FORMAT_VERSION, VAULT_LISTS, type AccountsDocument, type VaultDocument } from './records'
import { VaultCache } from './vault-cache'
import { VERSION } from '../version'

export const ACCOUNTS_FILE = 'accounts.json'
export const VAULTS_DIR = 'vaults'
const USER_ID = /^[0-9a-f-]{36}$/

export class UnsupportedFormatError extends Error {}

/** Whether the data folder holds sealed data already: the accounts document or a vault (or their change logs). */
export function holdsVaults(dataDir: string): boolean {
  const names = (dir: string) => {
    try {
      return readdirSync(dir)
    } catch {
      return []
    }
  }
  if (names(dataDir).some((name) => name === ACCOUNTS_FILE || name === `${ACCOUNTS_FILE}.log`)) return true
  return names(join(dataDir, VAULTS_DIR)).some((name) => /\.json(\.log)?$/.test(name))
}

/**
 * Upgrades of the stored format, by the version they upgrade from: MIGRATIONS[n] turns a document
 * of version n into version n + 1 (the accounts document and vault documents alike; each tells
 * them apart by their fields). Version 1 is the first format: none yet. A migrated document is
 * written back at once (Document.open), so the data folder is upgraded in place on first start;
 * test/platform/upgrade.test.ts starts the current code on folders kept from older releases.
 */
const MIGRATIONS: Record<number, (data: Record<string, unknown>) => void> = {}

export function checkVersion<T extends { version: number }>(path: string) {
  return (data: T): T => {
    const version = data?.version
    if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) {
      throw new UnsupportedFormatError(`${path} has no valid format version (${JSON.stringify(version)}): it is not an svc-vault data file`)
    }
    if (version > FORMAT_VERSION) {
      throw new UnsupportedFormatError(
        `${path} was written by a newer svc-vault (data format ${version}; svc-vault ${VERSION} reads formats up to ${FORMAT_VERSION}): run the newer svc-vault, or restore a backup taken before the upgrade`,
      )
    }
    for (let from = version; from < FORMAT_VERSION; from++) {
      const migrate = MIGRATIONS[from]
      if (!migrate) throw new UnsupportedFormatError(`${path} has data format ${from}, which this svc-vault cannot upgrade`)
      migrate(data as unknown as Record<string, unknown>)
      data.version = from + 1
    }
    return data
  }
}

/**
 * Sessions stored before sessions had an id get one derived from their token hash: the same at
 * every load, so the change log (keyed by id) replays over the file that still lacks it.
 */
export function withSessionIds(data: AccountsDocument): AccountsDocument {
  // Read before the format check (Document.open's beforeLog): anything but a list is left to it.
  if (!Array.isArray(data?.sessions))
    return data
    // Written before shared vaults: none.
  ;(data as { sharedVaults?: unknown }).sharedVaults ??= []
  ;(data as { vaultInvites?: unknown }).vaultInvites ??= []
  ;(data as { moves?: unknown }).moves ??= []
  for (const session of data.sessions) {
    if (typeof session.id !== 'string') session.id = createHash('sha256').update(`session-id:${session.tokenHash}`).digest('hex').slice(0, 32)
  }
  return data
}

/** The accounts document of a new data folder (or database): no one yet. */
export function newAccounts(keyCheck: string): AccountsDocument {
  return { version: FORMAT_VERSION, keyCheck, users: [], sessions: [], accessKeys: [], sharedVaults: [], vaultInvites: [], moves: [] }
}

export interface StoreOptions {
  /** Sealed key-check value for a new data folder. */
  createKeyCheck: () => string
  onWriteError?: (path: string, error: unknown) => void
  onAccountsReload?: (data: AccountsDocument) => void
  /** Skip the lock (read-only tools that run beside a live server, such as backup). */
  lock?: boolean
  /** Told the seconds each file sync of a write takes (every store of the process: syncs are the disk's). */
  onFsync?: (seconds: number) => void
  /** Vaults kept open at most (least recently used closed first); default 1,000. */
  maxOpenVaults?: number
  /** A vault unused this long is closed at the next sweep; default 10 minutes. */
  vaultIdleMs?: number
  /** Called when a vault is closed (the data key cache forgets it). */
  onVaultClosed?: (userId: string) => void
  now?: () => number
}

export class Store implements DataStore {
  /** The open vaults, and the closed ones still held. */
  private readonly vaults: VaultCache<Document<VaultDocument>>
  private readonly now: () => number
  /** Set by close(): the store takes no more writes. */
  private stopped = false
  private readonly stopObservingFsync: () => void
  /** Throttle counts, used challenges, pending device sign-ins: in memory (one process). */
  readonly state: MemoryState

  private constructor(
    readonly dataDir: string,
    readonly accounts: Document<AccountsDocument>,
    private readonly options: StoreOptions,
    private readonly releaseLock: () => void,
  ) {
    this.stopObservingFsync = options.onFsync ? onFsync(options.onFsync) : () => {}
    this.now = options.now ?? Date.now
    this.state = new MemoryState(this.now)
    this.vaults = new VaultCache({
      now: this.now,
      maxOpenVaults: options.maxOpenVaults,
      vaultIdleMs: options.vaultIdleMs,
      onVaultClosed: options.onVaultClosed,
      sweep: options.lock !== false,
    })
  }

  static async open(dataDir: string, options: StoreOptions): Promise<Store> {
    mkdirSync(join(dataDir, VAULTS_DIR), { recursive: true, mode: 0o700 })
    const release = options.lock === false ? () => {} : acquireLock(dataDir)
    try {
      removeTempFiles(dataDir)
      removeTempFiles(join(dataDir, VAULTS_DIR))
      const path = join(dataDir, ACCOUNTS_FILE)
      const checkAccounts = checkVersion<AccountsDocument>(path)
      // Like a vault, a write appends what changed (a session, a key) to a log: its cost does not
      // grow with the number of accounts.
      const accounts = await Document.open<AccountsDocument>(path, {
        create: () => newAccounts(options.createKeyCheck()),
        beforeLog: withSessionIds,
        migrate: (data) => withSessionIds(checkAccounts(data)),
        persistMigration: options.lock !== false,
        onWriteError: options.onWriteError,
        onReload: options.onAccountsReload,
        loggedLists: ACCOUNTS_LISTS,
      })
      return new Store(dataDir, accounts, options, release)
    } catch (error) {
      release()
      throw error
    }
  }

  vaultPath(userId: string): string {
    if (!USER_ID.test(userId)) throw new Error('invalid user id')
    return join(this.dataDir, VAULTS_DIR, `${userId}.json`)
  }

  /** How many vaults are open (a gauge for metrics). */
  get openVaultCount(): number {
    return this.vaults.size
  }

  /** The user's vault document when it is open already (no promise to wait on). */
  openedVault(userId: string): Document<VaultDocument> | undefined {
    return this.vaults.opened(userId)
  }

  /** The user's vault document, opened on first use and kept while used; `create` makes a new one. */
  vault(userId: string, create: () => VaultDocument): Promise<Document<VaultDocument>> {
    return this.vaults.vault(userId, () => {
      const path = this.vaultPath(userId)
      // Vaults grow (entries, env files up to 1 MiB each): a write appends its changes to a log
      // instead of rewriting the whole vault. The accounts document is small and rewritten.
      return Document.open<VaultDocument>(path, {
        create,
        migrate: (data) => withAllLists(checkVersion<VaultDocument>(path)(data)),
        persistMigration: this.options.lock !== false,
        onWriteError: this.options.onWriteError,
        loggedLists: VAULT_LISTS,
      })
    })
  }

  /** Throws unless the store is open and its data folder takes a durable write (GET /readyz). */
  async checkWritable(): Promise<void> {
    if (this.stopped) throw new Error('the store is closed')
    await probeWritable(this.dataDir)
    await probeWritable(join(this.dataDir, VAULTS_DIR))
  }

  /**
   * Deletes a user's vault file and its change log (account deletion). Its writes under way finish
   * first; the folder is synced so the deletion survives a crash.
   */
  async deleteVault(userId: string): Promise<void> {
    const path = this.vaultPath(userId)
    await this.vaults.delete(userId)
    for (const file of [`${path}.log`, path]) {
      try {
        unlinkSync(file)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
      }
    }
    await fsyncDir(join(this.dataDir, VAULTS_DIR))
  }

  /** Closes every vault unused for the idle time (run by a timer; tests call it with their clock). */
  closeIdleVaults(): number {
    return this.vaults.closeIdleVaults()
  }

  /** Whether the vault was deleted since start (a pass over vaultIds() skips it). */
  wasDeleted(userId: string): boolean {
    return this.vaults.wasDeleted(userId)
  }

  /** Ids of every vault on disk. */
  async vaultIds(): Promise<string[]> {
    return this.vaultIdsSync()
  }

  vaultIdsSync(): string[] {
    return readdirSync(join(this.dataDir, VAULTS_DIR))
      .filter((name) => name.endsWith('.json') && !isTempFile(name))
      .map((name) => name.slice(0, -'.json'.length))
      .filter((id) => USER_ID.test(id))
  }

  /** Waits for every write and folds each change log into its file, then releases the lock. */
  async close(): Promise<void> {
    this.stopped = true
    this.stopObservingFsync()
    // Folded too: after a clean stop each file alone holds its document.
    await this.accounts.fold().catch(() => {})
    this.vaults.stop()
    await this.vaults.finishAll((vault) => vault.fold())
    this.releaseLock()
  }
}

/** Lists added to the vault format later (versions, trash) start empty in older vaults. */
export function withAllLists(data: VaultDocument): VaultDocument {
  for (const name of VAULT_LISTS) (data as unknown as Record<string, unknown>)[name] ??= []
  return data
}

function removeTempFiles(dir: string): void {
  for (const name of readdirSync(dir)) {
    if (isTempFile(name)) unlinkSync(join(dir, name))
  }
}
