// Envelope encryption. The master key wraps one random data key per user vault; the data key
// seals that vault's secret fields, each bound (AAD) to its user, record kind and record id, so a
// ciphertext copied to another record, or a data key swapped between users, does not open.
import { hkdfSync } from 'node:crypto'
import { open, openAll, seal } from './aead'
import { auditKeyId, auditKeysOf, deriveAuditKey, type AuditKeys } from './audit-mac'
import { constantTimeEqual, randomBytes } from './tokens'

// 'webhook': a user's notification webhook secret (record id: the user id).
export type SecretKind = 'entry' | 'totp' | 'envfile' | 'account-totp' | 'webhook'

const KEY_CHECK_PLAINTEXT = 'svc-vault master key check'
const KEY_CHECK_AAD = 'svc-vault:key-check'
/**
 * The key check is HMAC-SHA-256(master key, label): checking it needs no cipher at start-up.
 * Data folders made before it hold an AES-GCM sealed check instead (no prefix); that one still
 * passes, and the server then replaces it (keyCheckIsCurrent).
 */
const KEY_CHECK_PREFIX = 'hmac-sha256.'
const dataKeyAad = (userId: string) => `svc-vault:data-key:${userId}`
const fieldAad = (userId: string, kind: SecretKind, recordId: string) => `svc-vault:${userId}:${kind}:${recordId}`
/** A previous value of a record: the record's AAD naming the version too. */
const versionAad = (userId: string, kind: SecretKind, recordId: string, version: number) => `${fieldAad(userId, kind, recordId)}:version:${version}`
const stateAad = (purpose: string) => `svc-vault:state:${purpose}`
/** An earlier master key's audit key, kept sealed under the current one (rotate-master-key). */
const AUDIT_KEY_AAD = 'svc-vault:audit-key'

export class MasterKeyMismatchError extends Error {}

/** False for a key check in the format before HMAC (or any other text): replace it once it passed. */
export function keyCheckIsCurrent(check: string): boolean {
  return typeof check === 'string' && check.startsWith(KEY_CHECK_PREFIX)
}

/** Stored as the key check while rotate-master-key re-wraps data keys: no master key passes it. */
export const KEY_CHECK_ROTATING = 'rotation-in-progress'
/** The same while `rotate-master-key --rekey` gives every vault a new data key. */
export const KEY_CHECK_REKEYING = 'rekey-in-progress'

/** A vault's new data key (wrapped) and how to move one sealed field to it. */
export interface VaultRekey {
  /** The new data key, wrapped by the new master key. */
  wrapped: string
  /** The field sealed again under the new data key; null when it did not open under the old one. */
  reseal(kind: SecretKind, recordId: string, sealed: string): string | null
  /** The same for a kept earlier value (version history: its AAD names the version too). */
  resealVersion(kind: SecretKind, recordId: string, version: number, sealed: string): string | null
}

/**
 * Seals and opens the secret fields of one user's vault. The data key is unwrapped on the first
 * seal or open: listing a vault needs no key.
 */
export class VaultCipher {
  private key: Uint8Array | null | undefined

  constructor(
    readonly userId: string,
    private readonly unwrapDataKey: () => Uint8Array | null,
  ) {}

  private get dataKey(): Uint8Array | null {
    if (this.key === undefined) this.key = this.unwrapDataKey()
    return this.key
  }

  seal(kind: SecretKind, recordId: string, plaintext: string): string {
    const dataKey = this.dataKey
    if (!dataKey) throw new Error('vault data key cannot be opened')
    return seal(dataKey, plaintext, fieldAad(this.userId, kind, recordId))
  }

  /** The plaintext, or null when the ciphertext (or the vault's data key) does not open. */
  open(kind: SecretKind, recordId: string, sealed: string): string | null {
    const dataKey = this.dataKey
    if (!dataKey) return null
    return open(dataKey, sealed, fieldAad(this.userId, kind, recordId))?.toString('utf8') ?? null
  }

  /** Seals a previous value of a record: same data key, AAD naming the version. */
  sealVersion(kind: SecretKind, recordId: string, version: number, plaintext: string): string {
    const dataKey = this.dataKey
    if (!dataKey) throw new Error('vault data key cannot be opened')
    return seal(dataKey, plaintext, versionAad(this.userId, kind, recordId, version))
  }

  /** The plaintext of a previous value, or null when it does not open as this record's version. */
  openVersion(kind: SecretKind, recordId: string, version: number, sealed: string): string | null {
    const dataKey = this.dataKey
    if (!dataKey) return null
    return open(dataKey, sealed, versionAad(this.userId, kind, recordId, version))?.toString('utf8') ?? null
  }

  /** open() of many records of one kind (`sealed[i]` belongs to `recordIds[i]`). */
  openAll(kind: SecretKind, recordIds: readonly string[], sealed: readonly string[]): (string | null)[] {
    const dataKey = this.dataKey
    if (!dataKey) return sealed.map(() => null)
    const aads = recordIds.map((id) => fieldAad(this.userId, kind, id))
    return openAll(dataKey, sealed, aads).map((plaintext) => plaintext?.toString('utf8') ?? null)
  }
}

export class Keyring {
  private readonly ciphers = new Map<string, { wrapped: string; cipher: VaultCipher }>()
  private readonly stateKeys = new Map<string, Uint8Array>()

  constructor(private masterKey: Uint8Array) {}

  /**
   * The audit chain's keys (audit-mac.ts): this master key's, and the earlier ones `sealed` holds
   * (accounts.json `auditKeys`; one that does not open under this master key is left out).
   */
  auditKeys(sealed: readonly string[] = []): AuditKeys {
    const earlier = sealed.map((text) => open(this.masterKey, text, AUDIT_KEY_AAD)).filter((key): key is Buffer => key !== null && key.length === 32)
    return auditKeysOf(
      deriveAuditKey(this.masterKey),
      earlier.map((key) => new Uint8Array(key)),
    )
  }

  /**
   * For rotation: the earlier audit keys sealed under `newMaster`, and this master key's own audit
   * key with them, so that lines keyed before the rotation still verify after it. Ones already
   * sealed under `newMaster` (an interrupted rotation run again) are kept as they are.
   */
  rewrapAuditKeys(sealed: readonly string[], newMaster: Keyring): string[] {
    const out: string[] = []
    const ids = new Set<string>()
    for (const text of sealed) {
      const already = open(newMaster.masterKey, text, AUDIT_KEY_AAD)
      const key = already ?? open(this.masterKey, text, AUDIT_KEY_AAD)
      if (!key || key.length !== 32) continue
      ids.add(auditKeyId(new Uint8Array(key)))
      out.push(already ? text : seal(newMaster.masterKey, key, AUDIT_KEY_AAD))
    }
    const own = deriveAuditKey(this.masterKey)
    const newId = auditKeyId(deriveAuditKey(newMaster.masterKey))
    if (!ids.has(auditKeyId(own)) && auditKeyId(own) !== newId) out.push(seal(newMaster.masterKey, own, AUDIT_KEY_AAD))
    return out
  }

  /** A value stored beside the data that only this master key reproduces. */
  createKeyCheck(): string {
    return KEY_CHECK_PREFIX + new Bun.CryptoHasher('sha256', this.masterKey).update(KEY_CHECK_PLAINTEXT).digest('hex')
  }

  async assertKeyCheck(check: string): Promise<void> {
    if (check === KEY_CHECK_ROTATING) {
      throw new MasterKeyMismatchError('a master key rotation was interrupted; run `bun run rotate-master-key` again to finish it')
    }
    if (check === KEY_CHECK_REKEYING) {
      throw new MasterKeyMismatchError('a master key rotation was interrupted; run `bun run rotate-master-key --rekey` again to finish it')
    }
    const passes = keyCheckIsCurrent(check)
      ? constantTimeEqual(check, this.createKeyCheck())
      : open(this.masterKey, check, KEY_CHECK_AAD)?.toString() === KEY_CHECK_PLAINTEXT
    if (!passes) throw new MasterKeyMismatchError('the master key does not match the data in the data folder')
  }

  /** A new random data key for a user's vault, wrapped by the master key. */
  createWrappedDataKey(userId: string): string {
    return seal(this.masterKey, randomBytes(32), dataKeyAad(userId))
  }

  /** The cipher for a vault; unwrapped once and cached while the wrapped key stays the same. */
  vault(userId: string, wrappedDataKey: string): VaultCipher {
    const cached = this.ciphers.get(userId)
    if (cached && cached.wrapped === wrappedDataKey) return cached.cipher
    const cipher = new VaultCipher(userId, () => {
      const dataKey = open(this.masterKey, wrappedDataKey, dataKeyAad(userId))
      return dataKey && dataKey.length === 32 ? new Uint8Array(dataKey) : null
    })
    this.ciphers.set(userId, { wrapped: wrappedDataKey, cipher })
    return cipher
  }

  /** Drops a closed vault's cipher and with it the unwrapped data key (store.ts closes idle vaults). */
  forgetVault(userId: string): void {
    this.ciphers.delete(userId)
  }

  /** Re-wraps a data key under another master key, for rotation. Throws when it does not open. */
  rewrapDataKey(userId: string, wrappedDataKey: string, newMaster: Keyring): string {
    const dataKey = open(this.masterKey, wrappedDataKey, dataKeyAad(userId))
    if (!dataKey) throw new MasterKeyMismatchError(`the data key of vault ${userId} does not open with the current master key`)
    return seal(newMaster.masterKey, dataKey, dataKeyAad(userId))
  }

  /**
   * A new random data key for a vault, wrapped by `newMaster`, for rotate-master-key --rekey: every
   * field is opened with the vault's current data key (under this master key) and sealed again with
   * the new one, bound to the same user, kind and record. Afterwards neither this master key nor the
   * old data key opens anything sealed under the new one. Throws when the current data key does not open.
   */
  rekeyVault(userId: string, wrappedDataKey: string, newMaster: Keyring): VaultRekey {
    const oldKey = open(this.masterKey, wrappedDataKey, dataKeyAad(userId))
    if (!oldKey || oldKey.length !== 32) throw new MasterKeyMismatchError(`the data key of vault ${userId} does not open with the current master key`)
    const newKey = randomBytes(32)
    return {
      wrapped: seal(newMaster.masterKey, newKey, dataKeyAad(userId)),
      reseal(kind, recordId, sealed) {
        const aad = fieldAad(userId, kind, recordId)
        const plaintext = open(oldKey, sealed, aad)
        return plaintext ? seal(newKey, plaintext, aad) : null
      },
      resealVersion(kind, recordId, version, sealed) {
        const aad = versionAad(userId, kind, recordId, version)
        const plaintext = open(oldKey, sealed, aad)
        return plaintext ? seal(newKey, plaintext, aad) : null
      },
    }
  }

  /**
   * Seals short-lived server state that travels through the browser (such as the OIDC sign-in
   * cookie), under a key derived from the master key for that one purpose (HKDF-SHA-256), so it
   * can be neither read nor altered by the client and never opens as vault data.
   */
  sealState(purpose: string, plaintext: string): string {
    return seal(this.stateKey(purpose), plaintext, stateAad(purpose))
  }

  /** The plaintext of sealState, or null when it was tampered with or sealed for another purpose. */
  openState(purpose: string, sealed: string): string | null {
    return open(this.stateKey(purpose), sealed, stateAad(purpose))?.toString('utf8') ?? null
  }

  private stateKey(purpose: string): Uint8Array {
    let key = this.stateKeys.get(purpose)
    if (!key) {
      key = new Uint8Array(hkdfSync('sha256', this.masterKey, new Uint8Array(0), stateAad(purpose), 32))
      this.stateKeys.set(purpose, key)
    }
    return key
  }
}
