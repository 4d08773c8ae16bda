// The shapes of what is stored. Secret fields hold sealed text (crypto/aead), never plaintext.

export const FORMAT_VERSION = 1

export interface UserRecord {
  id: string
  email: string
  name: string | null
  /** argon2id (Bun.password); null for accounts that only sign in through OIDC. */
  passwordHash: string | null
  identities: { issuer: string; subject: string }[]
  createdAt: string
}

export interface SessionRecord {
  /** Names the session in the change log (sessions stored before it had one get one derived at load: store.ts). */
  id: string
  /** SHA-256 of the cookie token; the token itself is never stored. */
  tokenHash: string
  userId: string
  createdAt: string
  expiresAt: string
}

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
  createdAt: string
  updatedAt: string
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
}

/** The vault's lists of records, whose changes are logged (store/changes.ts). */
export const VAULT_LISTS = ['categories', 'entries', 'twoFactor', 'envProjects', 'envFiles'] as const

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
}
