// The audit chain's key: HKDF-SHA-256 of the master key under its own label, so that
// whoever can write the data folder but does not hold the master key cannot produce a chain that
// verifies. Only MAC functions and key ids leave this file (and keyring.ts), never a key.
// rotate-master-key keeps the audit keys of earlier master keys, sealed under the current one
// (accounts.json `auditKeys`), so that lines keyed before a rotation still verify.

/** The HKDF `info` label of the audit chain key (docs/audit.md); salt: none (zero-length). */
export const AUDIT_KEY_LABEL = 'svc-vault:audit-chain'
/** What a key id is the MAC of: it names the key a line was keyed with, and tells nothing of it. */
const KEY_ID_INPUT = 'svc-vault audit key id'

/** Hex HMAC-SHA-256 of a text (UTF-8) under an audit key. */
export type AuditMac = (text: string) => string

/** The audit keys at hand: the current one (lines are keyed with it) and earlier ones, by id. */
export interface AuditKeys {
  /** The current key's id (a keyed line's `key`). */
  id: string
  mac: AuditMac
  /** Every known key's MAC by id, oldest first, the current one last. */
  macs: ReadonlyMap<string, AuditMac>
}

export function deriveAuditKey(masterKey: Uint8Array): Uint8Array {
  // node:crypto loads only when needed (aead.ts).
  const { hkdfSync } = process.getBuiltinModule('node:crypto')
  return new Uint8Array(hkdfSync('sha256', masterKey, new Uint8Array(0), AUDIT_KEY_LABEL, 32))
}

export function macWith(key: Uint8Array): AuditMac {
  return (text) => new Bun.CryptoHasher('sha256', key).update(text).digest('hex')
}

/** 16 hex digits: the first of HMAC-SHA-256(key, "svc-vault audit key id"). */
export function auditKeyId(key: Uint8Array): string {
  return macWith(key)(KEY_ID_INPUT).slice(0, 16)
}

/** The audit keys from the current key and earlier ones (oldest first). */
export function auditKeysOf(current: Uint8Array, earlier: readonly Uint8Array[] = []): AuditKeys {
  const macs = new Map<string, AuditMac>()
  for (const key of earlier) macs.set(auditKeyId(key), macWith(key))
  const id = auditKeyId(current)
  const mac = macWith(current)
  macs.delete(id)
  macs.set(id, mac)
  return { id, mac, macs }
}
