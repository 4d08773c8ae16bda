// Every file of the vault: the accounts document and one vault document per user, each opened
// once per process. Only this folder touches the data files.
import { mkdirSync, readdirSync, unlinkSync } from 'node:fs'
import { fsyncDir } from './atomic-file'
import { join } from 'node:path'
import { isTempFile, onFsync, probeWritable } from './atomic-file'
import { Document } from './document'
import { acquireLock } from './lock'
import { FORMAT_VERSION, VAULT_LISTS, type AccountsDocument, type VaultDocument } from './records'
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

function checkVersion<T extends { version: number }>(path: string) {
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

export interface StoreOptions {
  /** Sealed key-check value for a new data folder. */
  createKeyCheck: () => string
  onWriteError?: (path: string, error: unknown) => void
  onAccountsReload?: (data: AccountsDocument) => void
  /** Skip the lock (read-only tools that run beside a live server, such as backup). */
  lock?: boolean
  /** Told the seconds each file sync of a write takes (every store of the process: syncs are the disk's). */
  onFsync?: (seconds: number) => void
}

export class Store {
  /** Each user's vault: the promise while it opens, the document once open. */
  private readonly vaults = new Map<string, Document<VaultDocument> | Promise<Document<VaultDocument>>>()
  private closed = false
  private readonly stopObservingFsync: () => void

  private constructor(
    readonly dataDir: string,
    readonly accounts: Document<AccountsDocument>,
    private readonly options: StoreOptions,
    private readonly releaseLock: () => void,
  ) {
    this.stopObservingFsync = options.onFsync ? onFsync(options.onFsync) : () => {}
  }

  static async open(dataDir: string, options: StoreOptions): Promise<Store> {
    mkdirSync(join(dataDir, VAULTS_DIR), { recursive: true, mode: 0o700 })
    const release = options.lock === false ? () => {} : acquireLock(dataDir)
    try {
      removeTempFiles(dataDir)
      removeTempFiles(join(dataDir, VAULTS_DIR))
      const path = join(dataDir, ACCOUNTS_FILE)
      const accounts = await Document.open<AccountsDocument>(path, {
        create: () => ({ version: FORMAT_VERSION, keyCheck: options.createKeyCheck(), users: [], sessions: [], accessKeys: [] }),
        migrate: checkVersion(path),
        persistMigration: options.lock !== false,
        onWriteError: options.onWriteError,
        onReload: options.onAccountsReload,
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

  /** The user's vault document when it is open already (no promise to wait on). */
  openedVault(userId: string): Document<VaultDocument> | undefined {
    const vault = this.vaults.get(userId)
    return vault instanceof Document ? vault : undefined
  }

  /** The user's vault document, opened once and kept; `create` makes a new one on first use. */
  vault(userId: string, create: () => VaultDocument): Promise<Document<VaultDocument>> {
    const known = this.vaults.get(userId)
    if (known) return Promise.resolve(known)
    const path = this.vaultPath(userId)
    // Vaults grow (entries, env files up to 1 MiB each): a write appends its changes to a log
    // instead of rewriting the whole vault. The accounts document is small and rewritten.
    const opening = Document.open<VaultDocument>(path, {
      create,
      migrate: (data) => withAllLists(checkVersion<VaultDocument>(path)(data)),
      persistMigration: this.options.lock !== false,
      onWriteError: this.options.onWriteError,
      loggedLists: VAULT_LISTS,
    })
    this.vaults.set(userId, opening)
    opening.then(
      (document) => this.vaults.set(userId, document),
      () => this.vaults.delete(userId),
    )
    return opening
  }

  /** How many user vaults are loaded (GET /metrics). */
  openVaultCount(): number {
    return this.vaults.size
  }

  /** Throws unless the store is open and its data folder takes a durable write (GET /readyz). */
  async checkWritable(): Promise<void> {
    if (this.closed) throw new Error('the store is closed')
    await probeWritable(this.dataDir)
    await probeWritable(join(this.dataDir, VAULTS_DIR))
  }

  /**
   * Deletes a user's vault file and its change log (account deletion). Its writes under way finish
   * first; the folder is synced so the deletion survives a crash.
   */
  async deleteVault(userId: string): Promise<void> {
    const path = this.vaultPath(userId)
    const known = this.vaults.get(userId)
    this.vaults.delete(userId)
    const vault = known ? await Promise.resolve(known).catch(() => null) : null
    await vault?.settle()
    for (const file of [`${path}.log`, path]) {
      try {
        unlinkSync(file)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
      }
    }
    await fsyncDir(join(this.dataDir, VAULTS_DIR))
  }

  /** Ids of every vault on disk. */
  vaultIds(): string[] {
    return readdirSync(join(this.dataDir, VAULTS_DIR))
      .filter((name) => name.endsWith('.json') && !isTempFile(name))
      .map((name) => name.slice(0, -'.json'.length))
      .filter((id) => USER_ID.test(id))
  }

  /** Waits for every write and folds each vault's change log into its file, then releases the lock. */
  async close(): Promise<void> {
    this.closed = true
    this.stopObservingFsync()
    await this.accounts.settle()
    for (const known of this.vaults.values()) {
      const vault = await Promise.resolve(known).catch(() => null)
      await vault?.fold().catch(() => {})
    }
    this.releaseLock()
  }
}

/** Lists added to the vault format later (issue 20: versions, trash) start empty in older vaults. */
function withAllLists(data: VaultDocument): VaultDocument {
  for (const name of VAULT_LISTS) (data as unknown as Record<string, unknown>)[name] ??= []
  return data
}

function removeTempFiles(dir: string): void {
  for (const name of readdirSync(dir)) {
    if (isTempFile(name)) unlinkSync(join(dir, name))
  }
}
