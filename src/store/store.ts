// Every file of the vault: the accounts document and one vault document per user, each opened
// once per process. Only this folder touches the data files.
import { mkdirSync, readdirSync, unlinkSync } from 'node:fs'
import { join } from 'node:path'
import { isTempFile } from './atomic-file'
import { Document } from './document'
import { acquireLock } from './lock'
import { createHash } from 'node:crypto'
import { ACCOUNTS_LISTS, FORMAT_VERSION, VAULT_LISTS, type AccountsDocument, type VaultDocument } from './records'

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

function checkVersion<T extends { version: number }>(path: string) {
  return (data: T): T => {
    if (typeof data?.version !== 'number' || data.version > FORMAT_VERSION) {
      throw new UnsupportedFormatError(`${path} has format version ${data?.version}; this svc-vault reads up to ${FORMAT_VERSION}`)
    }
    // Version 1 is the first format: nothing to migrate yet.
    return data
  }
}

/**
 * Sessions stored before sessions had an id get one derived from their token hash: the same at
 * every load, so the change log (keyed by id) replays over the file that still lacks it.
 */
function withSessionIds(data: AccountsDocument): AccountsDocument {
  for (const session of data.sessions) {
    if (typeof session.id !== 'string') session.id = createHash('sha256').update(`session-id:${session.tokenHash}`).digest('hex').slice(0, 32)
  }
  return data
}

export interface StoreOptions {
  /** Sealed key-check value for a new data folder. */
  createKeyCheck: () => string
  onWriteError?: (path: string, error: unknown) => void
  onAccountsReload?: (data: AccountsDocument) => void
  /** Skip the lock (read-only tools that run beside a live server, such as backup). */
  lock?: boolean
}

export class Store {
  /** Each user's vault: the promise while it opens, the document once open. */
  private readonly vaults = new Map<string, Document<VaultDocument> | Promise<Document<VaultDocument>>>()

  private constructor(
    readonly dataDir: string,
    readonly accounts: Document<AccountsDocument>,
    private readonly options: StoreOptions,
    private readonly releaseLock: () => void,
  ) {}

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
        create: () => ({ version: FORMAT_VERSION, keyCheck: options.createKeyCheck(), users: [], sessions: [], accessKeys: [] }),
        migrate: (data) => withSessionIds(checkAccounts(data)),
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
      migrate: checkVersion(path),
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

  /** Ids of every vault on disk. */
  vaultIds(): string[] {
    return readdirSync(join(this.dataDir, VAULTS_DIR))
      .filter((name) => name.endsWith('.json') && !isTempFile(name))
      .map((name) => name.slice(0, -'.json'.length))
      .filter((id) => USER_ID.test(id))
  }

  /** Waits for every write and folds each change log into its file, then releases the lock. */
  async close(): Promise<void> {
    // Folded too: after a clean stop each file alone holds its document.
    await this.accounts.fold().catch(() => {})
    for (const known of this.vaults.values()) {
      const vault = await Promise.resolve(known).catch(() => null)
      await vault?.fold().catch(() => {})
    }
    this.releaseLock()
  }
}

function removeTempFiles(dir: string): void {
  for (const name of readdirSync(dir)) {
    if (isTempFile(name)) unlinkSync(join(dir, name))
  }
}
