// The audit chain's key (issue 29): HKDF-SHA-256 of the master key under its own label, so that
// whoever can write the data folder but does not hold the master key cannot produce a chain that
// verifies. Only a MAC function leaves this file, never the key.

/** The HKDF `info` label of the audit chain key (docs/audit.md); salt: none (zero-length). */
export const AUDIT_KEY_LABEL = 'svc-vault:audit-chain'

/** Hex HMAC-SHA-256 of a text (UTF-8) under the audit chain key. */
export type AuditMac = (text: string) => string

export function auditMacFromMasterKey(masterKey: Uint8Array): AuditMac {
  // node:crypto loads only when needed (aead.ts).
  const { hkdfSync } = process.getBuiltinModule('node:crypto')
  const key = new Uint8Array(hkdfSync('sha256', masterKey, new Uint8Array(0), AUDIT_KEY_LABEL, 32))
  return (text) => new Bun.CryptoHasher('sha256', key).update(text).digest('hex')
}
