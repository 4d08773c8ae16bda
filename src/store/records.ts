// The shapes of what is stored. Secret fields hold sealed text (crypto/aead), never plaintext.

export const FORMAT_VERSION = 1

export interface UserRecord {
  id: string
  email: string
  name: string | null
  /** argon2id (Bun.password); null for accounts that only sign in through OIDC. */
  passwordHash: string | null
  /** `linkedAt`: when the identity was linked (issue 36: recent additions); absent on older links. */
  identities: { issuer: string; subject: string; linkedAt?: string }[]
  createdAt: string
  // Issue 16 (account protection). Optional: accounts written before it have none of these.
  /** Two-factor sign-in, when enabled. */
  twoFactor?: AccountTwoFactor | null
  /** A secret made by 2FA setup, waiting for its first code to enable it. */
  twoFactorPending?: { encryptedSecret: string; createdAt: string } | null
  passkeys?: PasskeyRecord[]
}

export interface AccountTwoFactor {
  /** The TOTP seed, sealed by the user's vault data key (kind `account-totp`, record id = user id). */
  encryptedSecret: string
  enabledAt: string
  /** SHA-256 of each unused recovery code (each one carries 80 random bits). */
  recoveryCodeHashes: string[]
  /** The 30-second steps whose codes were accepted lately (within the drift window): a code is good once. */
  usedSteps: number[]
}

export interface PasskeyRecord {
  id: string
  name: string
  /** The WebAuthn credential id, base64url. */
  credentialId: string
  /** COSE public key, base64url (public: needs no sealing). */
  publicKey: string
  /** The authenticator's signature counter, as last seen. */
  counter: number
  transports: string[]
  createdAt: string
  lastUsedAt: string | null
}

export interface SessionRecord {
  /**
   * Names the session in the change log and is its public id (the session list, DELETE
   * /api/account/sessions/{id}); never the token. Sessions stored before it had one get one
   * derived at load (store.ts).
   */
  id: string
  /** SHA-256 of the cookie token; the token itself is never stored. */
  tokenHash: string
  userId: string
  createdAt: string
  expiresAt: string
  // Issue 16: what the session list shows. Optional for sessions written before it.
  lastSeenAt?: string
  clientAddress?: string
  userAgent?: string
  /** How this session signed in (a fresh `oidc` one may set a first password or delete the account). */
  signInMethod?: SessionMethod
  /** Issue 36: when this session last gave a fresh proof (POST /api/auth/reauth); its sign-in counts as one too. */
  reauthAt?: string
}

/** The factor that finished the sign-in (`2fa`: a password, then a two-factor code; `recovery_code`: a password, then a recovery code), as the audit event names it too. */
export type SignInMethod = 'password' | '2fa' | 'recovery_code' | 'oidc' | 'passkey'
/** How a session began: a sign-in, or registering (which opens the new account's first session). */
export type SessionMethod = SignInMethod | 'register'

export interface AccessKeyRecord {
  id: string
  userId: string
  name: string
  keyPrefix: string
  /** SHA-256 of the whole key. */
  keyHash: string
  scopes: string[]
  expiresAt: string | null
  lastUsedAt: string | null
  createdAt: string
}

/** The accounts document's lists of records, whose changes are logged like a vault's (store/changes.ts). */
export const ACCOUNTS_LISTS = ['users', 'sessions', 'accessKeys'] as const

export interface AccountsDocument {
  version: number
  /** Sealed by the master key; proves at start that the key matches this data. */
  keyCheck: string
  /** The audit chain keys of earlier master keys, sealed under the current one (rotate-master-key; docs/audit.md). */
  auditKeys?: string[]
  users: UserRecord[]
  sessions: SessionRecord[]
  accessKeys: AccessKeyRecord[]
}

export type KeyType = 'simple' | 'group' | 'ssh' | 'json'
export type Environment = 'development' | 'staging' | 'production'
export type EnvFileType = 'env' | 'env.local' | 'env.production' | 'env.development'

export interface CategoryRecord {
  id: string
  userId: string
  name: string
  keyType: KeyType
  envVarName: string | null
  icon: string | null
  description: string | null
  fieldDefinitions: string[] | null
  createdAt: string
  updatedAt: string
}

export interface EntryRecord {
  id: string
  categoryId: string
  name: string
  environment: Environment | null
  notes: string | null
  encryptedValue: string
  createdAt: string
  updatedAt: string
  /** Issue 20 (absent on records stored before): see LifecycleFields. */
  expiresAt?: string | null
  rotateEveryDays?: number | null
  rotatedAt?: string
  valueVersion?: number
  valueSetBy?: string
  /** A group entry's field names (names only, never values), set with each value: counts (issue 32). */
  fieldNames?: string[]
}

export interface TwoFactorRecord {
  id: string
  userId: string
  service: string
  accountName: string
  notes: string | null
  encryptedSecret: string
  /** From the otpauth URI (issue 23); absent on tokens stored before, which read as SHA1, 6, 30. */
  algorithm?: 'SHA1' | 'SHA256' | 'SHA512'
  digits?: number
  /** Seconds. */
  period?: number
  /** Issue 35: absent on tokens stored before, which are TOTP. */
  type?: 'totp' | 'hotp' | 'steam'
  /** HOTP only: the counter of the next code shown (each reveal advances it durably). */
  counter?: number
  createdAt: string
  updatedAt: string
  /** Issue 20 (absent on records stored before). */
  expiresAt?: string | null
  rotatedAt?: string
  valueVersion?: number
  valueSetBy?: string
}

export interface EnvProjectRecord {
  id: string
  userId: string
  name: string
  description: string
  createdAt: string
  updatedAt: string
}

export interface EnvFileRecord {
  id: string
  projectId: string
  fileType: EnvFileType
  encryptedContent: string
  createdAt: string
  updatedAt: string
  /** Issue 20 (absent on records stored before). */
  valueVersion?: number
  valueSetBy?: string
  rotatedAt?: string
}

/** Records whose value keeps a history (issue 20); also the sealing kind of the value. */
export type VersionedKind = 'entry' | 'envfile' | 'totp'

/**
 * A previous value of an entry, env file or 2FA token, sealed with the vault's data key under an
 * AAD naming the record and the version (lifecycle/versions.ts). The current value stays on the
 * record itself; `version` counts values from 1 per record.
 */
export interface VersionRecord {
  /** `<kind>:<recordId>:<version>`: one record per version. */
  id: string
  kind: VersionedKind
  recordId: string
  version: number
  encryptedValue: string
  /** When this value was set, and by whom ("session" or "key:<name>"). */
  createdAt: string
  actor: string
  /** 2FA: the code parameters that went with this secret. */
  /** Issue 35: `type` absent for TOTP; `counter`: an HOTP token's next counter then. */
  totp?: { algorithm: 'SHA1' | 'SHA256' | 'SHA512'; digits: number; period: number; type?: 'hotp' | 'steam'; counter?: number }
}

export type TrashKind = 'entry' | 'category' | 'twoFactor' | 'envProject' | 'envFile'

/**
 * Something deleted (issue 20): the records themselves, moved out of the live lists unchanged
 * (still sealed, same ids, so same AADs), kept until `expiresAt`, then purged with their versions.
 */
export interface TrashRecord {
  id: string
  kind: TrashKind
  /** What it was called, for the list (never a value). */
  name: string
  deletedAt: string
  deletedBy: string
  expiresAt: string
  categories: CategoryRecord[]
  entries: EntryRecord[]
  twoFactor: TwoFactorRecord[]
  envProjects: EnvProjectRecord[]
  envFiles: EnvFileRecord[]
}

/** The vault's lists of records, whose changes are logged (store/changes.ts). */
export const VAULT_LISTS = ['categories', 'entries', 'twoFactor', 'envProjects', 'envFiles', 'versions', 'trash'] as const

export interface VaultDocument {
  version: number
  userId: string
  /** This vault's data key, wrapped by the master key. */
  dataKey: string
  categories: CategoryRecord[]
  entries: EntryRecord[]
  twoFactor: TwoFactorRecord[]
  envProjects: EnvProjectRecord[]
  envFiles: EnvFileRecord[]
  /** Absent in vaults stored before (store.ts adds them on open). */
  versions: VersionRecord[]
  trash: TrashRecord[]
  /** The due-items webhook; absent until its owner sets one. Replaced, never changed in place. */
  notifications?: NotificationSettingsRecord
  /** Where this vault's audit log chain starts: a random start value, and the checkpoint of the last compaction. */
  auditChain?: { start: string; checkpoint: string | null; head?: string | null; lines?: number; bytes?: number; keyedSince?: string | null }
}

export interface NotificationSettingsRecord {
  webhookUrl: string | null
  /** Sealed (kind "webhook", the user's id); null: deliveries are not signed. */
  encryptedSecret: string | null
  /** Records stored before issue 36 may still carry httpStatus and error; they are never shown. */
  lastDelivery: { at: string; status: 'delivered' | 'failed'; attempts: number } | null
  /** The UTC day (YYYY-MM-DD) being delivered, its attempts so far, and when to try next. */
  day: string | null
  attempts: number
  done: boolean
  nextAttemptAt: string | null
}
