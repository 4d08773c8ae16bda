// Version history: when the value of an entry, env file or 2FA token changes, the
// value it had is kept as a version record in the vault document, sealed again with the same data
// key under an AAD naming the record and the version. The current value stays on the record, as
// before; versions count from 1 per record (`valueVersion` on the record: its current one).
import type { AuthContext } from '../../auth/guard'
import type { VaultCipher } from '../../crypto/keyring'
import { NotFound } from '../../http/errors'
import type { EntryRecord, EnvFileRecord, TwoFactorRecord, VaultDocument, VersionedKind, VersionRecord } from '../../store/records'
import type { Writer } from '../../store/writer'

/** Who made a change, as a version or trash record names it (not the audit actor): "session" (the web interface, the owner signed in) or "key:<name>" (an access key). */
export function versionAuthor(auth: Pick<AuthContext, 'method' | 'accessKey'>): string {
  return auth.method === 'access-key' && auth.accessKey ? `key:${auth.accessKey.name}` : 'session'
}

export type VersionedRecord = EntryRecord | EnvFileRecord | TwoFactorRecord

/** The sealed current value of a record of this kind. */
export function sealedValueOf(kind: VersionedKind, record: VersionedRecord): string {
  if (kind === 'entry') return (record as EntryRecord).encryptedValue
  if (kind === 'envfile') return (record as EnvFileRecord).encryptedContent
  return (record as TwoFactorRecord).encryptedSecret
}

export const versionId = (kind: VersionedKind, recordId: string, version: number) => `${kind}:${recordId}:${version}`

export interface VersionSummary {
  version: number
  createdAt: string
  actor: string
}

/** The record's previous versions, newest first (never a value). */
export function listVersions(data: VaultDocument, kind: VersionedKind, recordId: string): VersionSummary[] {
  return data.versions
    .filter((v) => v.kind === kind && v.recordId === recordId)
    .sort((a, b) => b.version - a.version)
    .map((v) => ({ version: v.version, createdAt: v.createdAt, actor: v.actor }))
}

/** The version record, or VERSION_NOT_FOUND. */
export function findVersion(data: VaultDocument, kind: VersionedKind, recordId: string, version: number): VersionRecord {
  const found = data.versions.find((v) => v.kind === kind && v.recordId === recordId && v.version === version)
  if (!found) throw NotFound.version()
  return found
}

/** The plaintext of a previous version; VERSION_NOT_FOUND when it does not open. */
export function openVersion(cipher: VaultCipher, record: VersionRecord): string {
  const plaintext = cipher.openVersion(record.kind, record.recordId, record.version, record.encryptedValue)
  if (plaintext === null) throw NotFound.version()
  return plaintext
}

/**
 * Prepares keeping the record's current value as a version, before its value changes: returns
 * what to store on the new record (its version number, when and by whom its value was set) and
 * `apply`, which adds the version and drops the oldest beyond `limit`. Nothing changes until
 * `apply` is called: call it only once every check of the change has passed.
 */
export function prepareVersion(
  data: VaultDocument,
  write: Writer<VaultDocument>,
  cipher: VaultCipher,
  kind: VersionedKind,
  current: VersionedRecord,
  change: { actor: string; at: string; limit: number },
): { fields: { valueVersion: number; valueSetBy: string; rotatedAt: string }; apply: () => void } {
  const version = current.valueVersion ?? 1
  const fields = { valueVersion: version + 1, valueSetBy: change.actor, rotatedAt: change.at }
  const plaintext = cipher.open(kind, current.id, sealedValueOf(kind, current))
  // A value that does not open (tampered with) cannot be kept: the change goes ahead without it.
  if (plaintext === null || change.limit <= 0) return { fields, apply: () => {} }
  const token = kind === 'totp' ? (current as TwoFactorRecord) : null
  const record: VersionRecord = {
    id: versionId(kind, current.id, version),
    kind,
    recordId: current.id,
    version,
    encryptedValue: cipher.sealVersion(kind, current.id, version, plaintext),
    createdAt: current.rotatedAt ?? current.createdAt,
    actor: current.valueSetBy ?? 'unknown',
    ...(token
      ? {
          totp: {
            algorithm: token.algorithm ?? 'SHA1',
            digits: token.digits ?? 6,
            period: token.period ?? 30,
            ...(token.type === 'hotp' ? { type: 'hotp' as const, counter: token.counter ?? 0 } : token.type === 'steam' ? { type: 'steam' as const } : {}),
          },
        }
      : {}),
  }
  return {
    fields,
    apply: () => {
      write.versions.push(record)
      const kept = data.versions.filter((v) => v.kind === kind && v.recordId === current.id)
      if (kept.length > change.limit) {
        const oldest = new Set(kept.sort((a, b) => a.version - b.version).slice(0, kept.length - change.limit))
        write.versions.removeWhere((v) => oldest.has(v))
      }
    },
  }
}

/** Drops every version of these records (their record is purged for good). */
export function dropVersions(data: VaultDocument, write: Writer<VaultDocument>, recordIds: ReadonlySet<string>): void {
  if (recordIds.size === 0 || !data.versions.some((v) => recordIds.has(v.recordId))) return
  write.versions.removeWhere((v) => recordIds.has(v.recordId))
}
