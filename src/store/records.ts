// The shapes of what is stored. Secret fields hold sealed text (crypto/aead), never plaintext.
// Readonly all the way down: stored data changes only through a document's writer
// (store/writer.ts), which records each change for the change log; a record changed in place
// would be answered and then missing after a restart. test/store/readonly.typecheck.ts holds it.

export const FORMAT_VERSION = 1

/** A copy of a record to fill in before it is written (its top-level fields settable). */
export type Draft<T> = { -readonly [K in keyof T]: T[K] }

export interface UserRecord {
  readonly id: string
  readonly email: string
  readonly name: string | null
  /** argon2id (Bun.password); null for accounts that only sign in through OIDC. */
  readonly passwordHash: string | null
  /** `linkedAt`: when the identity was linked (recent additions); absent on older links. */
  readonly identities: readonly { readonly issuer: string; readonly subject: string; readonly linkedAt?: string }[]
  readonly createdAt: string
  // Account protection. Optional: accounts written before it existed have none of these.
  /** Two-factor sign-in, when enabled. */
  readonly twoFactor?: AccountTwoFactor | null
  /** A secret made by 2FA setup, waiting for its first code to enable it. */
  readonly twoFactorPending?: { readonly encryptedSecret: string; readonly createdAt: string } | null
  readonly passkeys?: readonly PasskeyRecord[]
}

export interface AccountTwoFactor {
  /** The TOTP seed, sealed by the user's vault data key (kind `account-totp`, record id = user id). */
  readonly encryptedSecret: string
  readonly enabledAt: string
  /** SHA-256 of each unused recovery code (each one carries 80 random bits). */
  readonly recoveryCodeHashes: readonly string[]
  /** The 30-second steps whose codes were accepted lately (within the drift window): a code is good once. */
  readonly usedSteps: readonly number[]
}

export interface PasskeyRecord {
  readonly id: string
  readonly name: string
  /** The WebAuthn credential id, base64url. */
  readonly credentialId: string
  /** COSE public key, base64url (public: needs no sealing). */
  readonly publicKey: string
  /** The authenticator's signature counter, as last seen. */
  readonly counter: number
  readonly transports: readonly string[]
  readonly createdAt: string
  readonly lastUsedAt: string | null
}

export interface SessionRecord {
  /**
   * Names the session in the change log and is its public id (the session list, DELETE
   * /api/account/sessions/{id}); never the token. Sessions stored before it had one get one
   * derived at load (store.ts).
   */
  readonly id: string
  /** SHA-256 of the cookie token; the token itself is never stored. */
  readonly tokenHash: string
  readonly userId: string
  readonly createdAt: string
  readonly expiresAt: string
  // What the session list shows. Optional for sessions written before it.
  readonly lastSeenAt?: string
  readonly clientAddress?: string
  readonly userAgent?: string
  /** How this session signed in (a fresh `oidc` one may set a first password or delete the account). */
  readonly signInMethod?: SessionMethod
  /** When this session last gave a fresh proof (POST /api/auth/reauth); its sign-in counts as one too. */
  readonly reauthAt?: string
}

/** The factor that finished the sign-in (`2fa`: a password, then a two-factor code; `recovery_code`: a password, then a recovery code), as the audit event names it too. */
export type SignInMethod = 'password' | '2fa' | 'recovery_code' | 'oidc' | 'passkey'
/** How a session began: a sign-in, or registering (which opens the new account's first session). */
export type SessionMethod = SignInMethod | 'register'

export interface AccessKeyRecord {
  readonly id: string
  readonly userId: string
  readonly name: string
  readonly keyPrefix: string
  /** SHA-256 of the whole key. */
  readonly keyHash: string
  readonly scopes: readonly string[]
  readonly expiresAt: string | null
  readonly lastUsedAt: string | null
  readonly createdAt: string
  /** The shared vault this key is bound to (it works only under /api/vaults/{vaultId}); absent or null: the personal vault. */
  readonly vaultId?: string | null
}

export type VaultRole = 'viewer' | 'editor' | 'admin'

export interface VaultMemberRecord {
  readonly userId: string
  readonly role: VaultRole
  readonly addedAt: string
  /** The user id of who added them (the creator adds themself). */
  readonly addedBy: string
}

/**
 * A shared vault: its documents live under its own id (vaults/<id>.json, its own data key and
 * audit log), exactly like a user's; this record holds its name and members. Replaced whole on
 * every change (members included).
 */
export interface SharedVaultRecord {
  /** A UUID, like a user id: vaults/<id> never collides with a user's vault. */
  readonly id: string
  readonly name: string
  readonly createdAt: string
  readonly createdBy: string
  readonly members: readonly VaultMemberRecord[]
  /**
   * Members removed (or deleted with their account) whose audit events are not yet turned into
   * rotation items: written in the removal's own write, so a crash before the scan loses nothing.
   */
  readonly departed?: readonly DepartedMemberRecord[]
  /** What removed members could have taken (modules/vaults/rotation.ts). */
  readonly rotation?: readonly RotationItemRecord[]
}

export interface DepartedMemberRecord {
  readonly userId: string
  /** Kept: the account may be deleted before the scan. */
  readonly email: string
  /** When the removal was written. */
  readonly at: string
}

/** The kinds of secret a rotation item names (the audit records' kinds). */
export type RotationKind = 'entry' | 'envfile' | 'twofa'

/** A secret a removed member revealed or exported: to change, then mark rotated. */
export interface RotationItemRecord {
  readonly kind: RotationKind
  readonly id: string
  readonly name: string | null
  readonly revealedBy: readonly { readonly userId: string; readonly email: string }[]
  /** When it became due: the (first) removal of a member who had read its current value. */
  readonly since: string
  /** The record's valueVersion then: marking rotated needs a newer one. */
  readonly valueVersion: number
  readonly rotatedAt: string | null
  readonly rotatedBy: string | null
}

/**
 * A pending invite into a shared vault. A link invite stores only the SHA-256 of its token (the
 * token is answered once, when it is made); an e-mail invite names the e-mail it is for. Removed
 * when it is accepted, declined or revoked (single use); kept past its expiry until the next
 * invite into any vault prunes it.
 */
export interface VaultInviteRecord {
  readonly id: string
  readonly vaultId: string
  readonly role: VaultRole
  /** E-mail invite: the (normalized) e-mail of the account it is for; null for a link invite. */
  readonly email: string | null
  /** Link invite: sha256 hex of its token; null for an e-mail invite. */
  readonly tokenHash: string | null
  readonly createdAt: string
  readonly createdBy: string
  readonly expiresAt: string
}

/** The accounts document's lists of records, whose changes are logged like a vault's (store/writer.ts). */
export const ACCOUNTS_LISTS = ['users', 'sessions', 'accessKeys', 'sharedVaults', 'vaultInvites', 'moves'] as const
/** The record ids of one side of a project move, by vault list. */
export interface MoveRecordIds {
  readonly categories: readonly string[]
  readonly entries: readonly string[]
  readonly twoFactor: readonly string[]
  readonly envProjects: readonly string[]
  readonly envFiles: readonly string[]
  readonly versions: readonly string[]
}

/**
 * A project move between two vault documents under way (modules/vaults/move.ts): written before
 * the target is, removed once the source no longer holds the project. Start-up finishes or undoes
 * each one left by a crash, so the project ends whole on exactly one side.
 */
export interface MoveRecord {
  readonly id: string
  /** Owner ids (a user id, or a shared vault's id) of the vault moved from and to. */
  readonly from: string
  readonly to: string
  readonly startedAt: string
  /** `forward`: finish it once the target holds the copy; `back`: being undone (the source changed meanwhile). */
  readonly phase: 'forward' | 'back'
  /** What to remove from the source once the target holds it (categories stay). */
  readonly source: MoveRecordIds
  /** A digest of those source records as moved: changed since (an acknowledged write), the move is undone instead. */
  readonly sourceDigest: string
  /** What the target write adds (categories: only those it creates). */
  readonly target: MoveRecordIds
}

export interface AccountsDocument {
  readonly version: number
  /** Sealed by the master key; proves at start that the key matches this data. */
  readonly keyCheck: string
  /** The audit chain keys of earlier master keys, sealed under the current one (rotate-master-key; docs/audit.md). */
  readonly auditKeys?: readonly string[]
  readonly users: readonly UserRecord[]
  readonly sessions: readonly SessionRecord[]
  readonly accessKeys: readonly AccessKeyRecord[]
  /** Absent in data folders written before shared vaults (store.ts adds it on open). */
  readonly sharedVaults: readonly SharedVaultRecord[]
  /** Pending invites into shared vaults; absent in data folders written before them (store.ts adds it). */
  readonly vaultInvites: readonly VaultInviteRecord[]
  /** Project moves under way (absent in data folders written before: store.ts adds it on open). */
  readonly moves: readonly MoveRecord[]
}

export type KeyType = 'simple' | 'group' | 'ssh' | 'json'
export type Environment = 'development' | 'staging' | 'production'
export type EnvFileType = 'env' | 'env.local' | 'env.production' | 'env.development'

export interface CategoryRecord {
  readonly id: string
  readonly userId: string
  readonly name: string
  readonly keyType: KeyType
  readonly envVarName: string | null
  readonly icon: string | null
  readonly description: string | null
  readonly fieldDefinitions: readonly string[] | null
  readonly createdAt: string
  readonly updatedAt: string
}

export interface EntryRecord {
  readonly id: string
  readonly categoryId: string
  readonly name: string
  readonly environment: Environment | null
  readonly notes: string | null
  readonly encryptedValue: string
  readonly createdAt: string
  readonly updatedAt: string
  /** Absent on records stored before history and trash existed: see LifecycleFields. */
  readonly expiresAt?: string | null
  readonly rotateEveryDays?: number | null
  readonly rotatedAt?: string
  readonly valueVersion?: number
  readonly valueSetBy?: string
  /** A group entry's field names (names only, never values), set with each value: counts. */
  readonly fieldNames?: readonly string[]
}

export interface TwoFactorRecord {
  readonly id: string
  readonly userId: string
  readonly service: string
  readonly accountName: string
  readonly notes: string | null
  readonly encryptedSecret: string
  /** From the otpauth URI; absent on tokens stored before, which read as SHA1, 6, 30. */
  readonly algorithm?: 'SHA1' | 'SHA256' | 'SHA512'
  readonly digits?: number
  /** Seconds. */
  readonly period?: number
  /** Absent on tokens stored before, which are TOTP. */
  readonly type?: 'totp' | 'hotp' | 'steam'
  /** HOTP only: the counter of the next code shown (each reveal advances it durably). */
  readonly counter?: number
  readonly createdAt: string
  readonly updatedAt: string
  /** Absent on records stored before history and trash existed. */
  readonly expiresAt?: string | null
  readonly rotatedAt?: string
  readonly valueVersion?: number
  readonly valueSetBy?: string
}

export interface EnvProjectRecord {
  readonly id: string
  readonly userId: string
  readonly name: string
  readonly description: string
  readonly createdAt: string
  readonly updatedAt: string
}

export interface EnvFileRecord {
  readonly id: string
  readonly projectId: string
  readonly fileType: EnvFileType
  readonly encryptedContent: string
  readonly createdAt: string
  readonly updatedAt: string
  /** Absent on records stored before history and trash existed. */
  readonly valueVersion?: number
  readonly valueSetBy?: string
  readonly rotatedAt?: string
}

/** Records whose value keeps a history; also the sealing kind of the value. */
export type VersionedKind = 'entry' | 'envfile' | 'totp'

/**
 * A previous value of an entry, env file or 2FA token, sealed with the vault's data key under an
 * AAD naming the record and the version (lifecycle/versions.ts). The current value stays on the
 * record itself; `version` counts values from 1 per record.
 */
export interface VersionRecord {
  /** `<kind>:<recordId>:<version>`: one record per version. */
  readonly id: string
  readonly kind: VersionedKind
  readonly recordId: string
  readonly version: number
  readonly encryptedValue: string
  /** When this value was set, and by whom ("session" or "key:<name>"). */
  readonly createdAt: string
  readonly actor: string
  /** 2FA: the code parameters that went with this secret. */
  /** `type` absent for TOTP; `counter`: an HOTP token's next counter then. */
  readonly totp?: Readonly<{ algorithm: 'SHA1' | 'SHA256' | 'SHA512'; digits: number; period: number; type?: 'hotp' | 'steam'; counter?: number }>
}

export type TrashKind = 'entry' | 'category' | 'twoFactor' | 'envProject' | 'envFile'

/**
 * Something deleted: the records themselves, moved out of the live lists unchanged
 * (still sealed, same ids, so same AADs), kept until `expiresAt`, then purged with their versions.
 */
export interface TrashRecord {
  readonly id: string
  readonly kind: TrashKind
  /** What it was called, for the list (never a value). */
  readonly name: string
  readonly deletedAt: string
  readonly deletedBy: string
  readonly expiresAt: string
  readonly categories: readonly CategoryRecord[]
  readonly entries: readonly EntryRecord[]
  readonly twoFactor: readonly TwoFactorRecord[]
  readonly envProjects: readonly EnvProjectRecord[]
  readonly envFiles: readonly EnvFileRecord[]
}

/** The vault's lists of records, whose changes are logged (store/writer.ts). */
export const VAULT_LISTS = ['categories', 'entries', 'twoFactor', 'envProjects', 'envFiles', 'versions', 'trash'] as const

export interface VaultDocument {
  readonly version: number
  readonly userId: string
  /** This vault's data key, wrapped by the master key. */
  readonly dataKey: string
  readonly categories: readonly CategoryRecord[]
  readonly entries: readonly EntryRecord[]
  readonly twoFactor: readonly TwoFactorRecord[]
  readonly envProjects: readonly EnvProjectRecord[]
  readonly envFiles: readonly EnvFileRecord[]
  /** Absent in vaults stored before (store.ts adds them on open). */
  readonly versions: readonly VersionRecord[]
  readonly trash: readonly TrashRecord[]
  /** The due-items webhook; absent until its owner sets one. Replaced, never changed in place. */
  readonly notifications?: NotificationSettingsRecord
  /** Where this vault's audit log chain starts: a random start value, and the checkpoint of the last compaction. */
  readonly auditChain?: Readonly<{ start: string; checkpoint: string | null; head?: string | null; lines?: number; bytes?: number; keyedSince?: string | null }>
}

export interface NotificationSettingsRecord {
  readonly webhookUrl: string | null
  /** Sealed (kind "webhook", the user's id); null: deliveries are not signed. */
  readonly encryptedSecret: string | null
  /** Records stored by earlier releases may still carry httpStatus and error; they are never shown. */
  readonly lastDelivery: Readonly<{ at: string; status: 'delivered' | 'failed'; attempts: number }> | null
  /** The UTC day (YYYY-MM-DD) being delivered, its attempts so far, and when to try next. */
  readonly day: string | null
  readonly attempts: number
  readonly done: boolean
  readonly nextAttemptAt: string | null
}
