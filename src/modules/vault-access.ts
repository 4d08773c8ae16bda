// Opens a user's vault document with its cipher. A vault is created, with a fresh data key,
// the first time its owner stores anything.
import type { Keyring, VaultCipher } from '../crypto/keyring'
import type { Document } from '../store/document'
import { FORMAT_VERSION, type VaultDocument } from '../store/records'
import type { Store } from '../store/store'

export interface OpenVault {
  doc: Document<VaultDocument>
  data: VaultDocument
  cipher: VaultCipher
}

export class Vaults {
  constructor(
    private readonly store: Store,
    private readonly keyring: Keyring,
  ) {}

  async open(userId: string): Promise<OpenVault> {
    const doc = await this.store.vault(userId, () => ({
      version: FORMAT_VERSION,
      userId,
      dataKey: this.keyring.createWrappedDataKey(userId),
      categories: [],
      entries: [],
      twoFactor: [],
      envProjects: [],
      envFiles: [],
    }))
    return { doc, data: doc.data, cipher: this.keyring.vault(userId, doc.data.dataKey) }
  }
}
