// Opens a user's vault document with its cipher. A vault is created, with a fresh data key,
// the first time its owner stores anything.
import type { Keyring, VaultCipher } from './crypto/keyring'
import type { DataStore, StoredDocument } from './store/data-store'
import { FORMAT_VERSION, type VaultDocument } from './store/records'

export interface OpenVault {
  doc: StoredDocument<VaultDocument>
  data: VaultDocument
  cipher: VaultCipher
}

export class Vaults {
  constructor(
    private readonly store: DataStore,
    private readonly keyring: Keyring,
  ) {}

  /**
   * Runs `use` on the user's vault, at once when it is open already (nearly always): the hot
   * reveals then answer without a promise to wait on, a measurable part of their rate (docs/performance.md).
   */
  withVault<R>(userId: string, use: (vault: OpenVault) => R): R | Promise<R> {
    const doc = this.store.openedVault(userId)
    return doc ? use(this.access(userId, doc)) : this.openDocument(userId).then((opened) => use(this.access(userId, opened)))
  }

  async open(userId: string): Promise<OpenVault> {
    return this.withVault(userId, (vault) => vault)
  }

  private access(userId: string, doc: StoredDocument<VaultDocument>): OpenVault {
    return { doc, data: doc.data, cipher: this.keyring.vault(userId, doc.data.dataKey) }
  }

  private openDocument(userId: string): Promise<StoredDocument<VaultDocument>> {
    return this.store.vault(userId, () => ({
      version: FORMAT_VERSION,
      userId,
      dataKey: this.keyring.createWrappedDataKey(userId),
      categories: [],
      entries: [],
      twoFactor: [],
      envProjects: [],
      envFiles: [],
      versions: [],
      trash: [],
    }))
  }
}
