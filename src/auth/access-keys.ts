// Access keys: "svc_" + 32 random bytes (base64url), shown once. Stored as SHA-256 of the whole
// key and found through an in-memory Map (no scan, no slow hash per request). Each user's keys
// are indexed apart, so listing and revoking do not walk every account's keys.
import { constantTimeEqual, randomToken, sha256Hex } from '../crypto/tokens'
import { AppError, NotFound, validationError } from '../http/errors'
import type { StoredDocument } from '../store/data-store'
import type { AccessKeyRecord, AccountsDocument } from '../store/records'
import type { Writer } from '../store/writer'
import { isScope, type Scope } from './scopes'

export const KEY_PREFIX = 'svc_'
const PREFIX_LENGTH = KEY_PREFIX.length + 8
// lastUsedAt reaches disk lazily; every answer already shows the in-memory value.
const LAST_USED_FLUSH_MS = 30_000

export interface PublicAccessKey {
  id: string
  name: string
  keyPrefix: string
  scopes: Scope[]
  expiresAt: string | null
  lastUsedAt: string | null
  createdAt: string
  vaultId?: string
}

export const publicAccessKey = (record: AccessKeyRecord, lastUsedAt = record.lastUsedAt): PublicAccessKey => ({
  id: record.id,
  name: record.name,
  keyPrefix: record.keyPrefix,
  // Only known scopes are ever stored (create checks each).
  scopes: [...record.scopes] as Scope[],
  expiresAt: record.expiresAt,
  lastUsedAt,
  createdAt: record.createdAt,
  // Only on a key bound to a shared vault: a personal key's answer is as it always was.
  ...(record.vaultId ? { vaultId: record.vaultId } : {}),
})

export class AccessKeys {
  private readonly byHash = new Map<string, AccessKeyRecord>()
  /** Each user's keys in creation order. */
  private readonly byUser = new Map<string, AccessKeyRecord[]>()
  /**
   * Uses not yet in the stored records, by key hash: answers show them at once; they go into the
   * records, through the writer, with the document's next write (at the latest 30 s later). Kept
   * apart rather than staged per use: a key is used on every request, a record replaced per
   * request would cost a copy and a logged put each.
   */
  private readonly lastUsed = new Map<string, string>()
  // The ISO text of the last millisecond a key was used in: under load, many uses share one
  // millisecond, and formatting a date was a few per cent of a reveal.
  private usedAtMs = Number.NaN
  private usedAtText = ''

  constructor(
    private readonly doc: StoredDocument<AccountsDocument>,
    private readonly now: () => number = Date.now,
  ) {
    this.reindex(doc.data)
    doc.beforeWrite((_, write) => this.storeLastUsed(write))
  }

  reindex(data: AccountsDocument): void {
    this.byHash.clear()
    this.byUser.clear()
    for (const record of data.accessKeys) this.index(record)
  }

  private index(record: AccessKeyRecord): void {
    this.byHash.set(record.keyHash, record)
    const ofUser = this.byUser.get(record.userId)
    if (ofUser) ofUser.push(record)
    else this.byUser.set(record.userId, [record])
  }

  private storeLastUsed(write: Writer<AccountsDocument>): void {
    // One pass over the keys for all of them (a search per key was a pass each).
    const replacements: AccessKeyRecord[] = []
    for (const [keyHash, at] of this.lastUsed) {
      const record = this.byHash.get(keyHash)
      if (!record || record.lastUsedAt === at) continue
      const next = { ...record, lastUsedAt: at }
      replacements.push(next)
      this.byHash.set(keyHash, next)
      const ofUser = this.byUser.get(next.userId)!
      ofUser[ofUser.indexOf(record)] = next
    }
    this.lastUsed.clear()
    if (replacements.length > 0) write.accessKeys.replaceMany(replacements)
  }

  list(userId: string): PublicAccessKey[] {
    return (this.byUser.get(userId) ?? []).map((record) => publicAccessKey(record, this.lastUsed.get(record.keyHash) ?? record.lastUsedAt))
  }

  async create(
    userId: string,
    input: { name: string; scopes: string[]; expiresAt?: string | null; vaultId?: string | null },
  ): Promise<PublicAccessKey & { key: string }> {
    const scopes = [...new Set(input.scopes)]
    const unknown = scopes.find((scope) => !isScope(scope))
    if (unknown !== undefined) throw validationError('scopes', `unknown scope "${unknown}"`)
    if (scopes.length === 0) throw validationError('scopes', 'at least one scope is required')
    let expiresAt: string | null = null
    if (input.expiresAt !== undefined && input.expiresAt !== null) {
      const at = Date.parse(input.expiresAt)
      if (!Number.isFinite(at)) throw validationError('expiresAt', 'must be an ISO 8601 date-time')
      if (at <= this.now()) throw validationError('expiresAt', 'must be in the future')
      expiresAt = new Date(at).toISOString()
    }
    const key = KEY_PREFIX + randomToken(32)
    const record: AccessKeyRecord = {
      id: crypto.randomUUID(),
      userId,
      name: input.name.trim() || input.name,
      keyPrefix: key.slice(0, PREFIX_LENGTH),
      keyHash: sha256Hex(key),
      scopes,
      expiresAt,
      lastUsedAt: null,
      createdAt: new Date(this.now()).toISOString(),
      // Only a key bound to a vault carries the field: personal keys stay as they were stored.
      ...(input.vaultId ? { vaultId: input.vaultId } : {}),
    }
    await this.doc.update((data, write) => {
      // Checked inside the write: a deletion of the account queued first wins (a device sign-in approved before it pays out nothing).
      if (!data.users.some((user) => user.id === userId)) throw new AppError(401, 'AUTH_REQUIRED', 'This account no longer exists')
      // Still a member when the key is written (a removal queued first wins).
      if (input.vaultId && !data.sharedVaults.some((vault) => vault.id === input.vaultId && vault.members.some((member) => member.userId === userId)))
        throw new AppError(404, 'NOT_FOUND', 'Vault not found')
      write.accessKeys.push(record)
      this.index(record)
    })
    return { ...publicAccessKey(record), key }
  }

  /** Deletes the key; from the moment this runs, the key no longer authenticates. */
  async revoke(userId: string, id: string): Promise<void> {
    if (!this.byUser.get(userId)?.some((k) => k.id === id)) throw NotFound.accessKey()
    await this.doc.update((_, write) => {
      const ofUser = this.byUser.get(userId) ?? []
      const at = ofUser.findIndex((k) => k.id === id)
      if (at < 0) return
      const [record] = ofUser.splice(at, 1)
      write.accessKeys.remove(record.id)
      this.byHash.delete(record.keyHash)
      this.lastUsed.delete(record.keyHash)
    })
  }

  /**
   * Inside an accounts write: deletes every key `drop` picks (a shared vault deleted, a member
   * removed), in the same durable change; from then on they no longer authenticate.
   */
  revokeWhere(write: Writer<AccountsDocument>, drop: (record: AccessKeyRecord) => boolean): void {
    const removed = write.accessKeys.removeWhere(drop)
    for (const record of removed) {
      this.byHash.delete(record.keyHash)
      this.lastUsed.delete(record.keyHash)
      const ofUser = this.byUser.get(record.userId)
      const at = ofUser ? ofUser.findIndex((k) => k.id === record.id) : -1
      if (at >= 0) ofUser!.splice(at, 1)
    }
  }

  /** The live key record for a presented key, or null (unknown, revoked or expired). */
  authenticate(presented: string): AccessKeyRecord | null {
    if (!presented.startsWith(KEY_PREFIX) || presented.length > 200) return null
    const hash = sha256Hex(presented)
    const record = this.byHash.get(hash)
    if (!record || !constantTimeEqual(record.keyHash, hash)) return null
    if (record.expiresAt !== null && Date.parse(record.expiresAt) <= this.now()) return null
    return record
  }

  /** Still present and unexpired: checked again when an answer is ready, so revocation wins. */
  isLive(record: AccessKeyRecord): boolean {
    // By id: a use may have replaced the record the request holds (lastUsedAt) since.
    return this.byHash.get(record.keyHash)?.id === record.id && (record.expiresAt === null || Date.parse(record.expiresAt) > this.now())
  }

  markUsed(record: AccessKeyRecord): void {
    const now = this.now()
    if (now !== this.usedAtMs) {
      this.usedAtMs = now
      this.usedAtText = new Date(now).toISOString()
    }
    this.lastUsed.set(record.keyHash, this.usedAtText)
    this.doc.commitSoon(LAST_USED_FLUSH_MS)
  }
}
