// Environment -> typed, validated configuration, derived from the settings table in settings.ts
// (each variable's parser, default and description). A bad value throws ConfigError naming the
// variable; index.ts prints that one line and exits 1.
import type { BlockList } from 'node:net'
import { type Env, parseMasterKey, readDatabaseUrlSetting, readMasterKeySetting, readSettings, type SettingValues } from './settings'

export {
  ConfigError,
  DEFAULT_AI_MODEL,
  DEFAULT_BODY_TIMEOUT_MS,
  DEFAULT_DISK_FLOOR_BYTES,
  isLoopbackHost,
  parseDuration,
  parseMasterKey,
  parseTrustProxy,
  parseTrustProxyHeader,
  parseWebhookAllow,
} from './settings'
import { ConfigError, isLoopbackHost, parseDatabaseUrl } from './settings'

export interface OidcConfig {
  issuer: string
  clientId: string
  clientSecret: string | undefined
  name: string
}

export interface AiConfig {
  apiKey: string | undefined
  baseUrl: string | undefined
  model: string
  timeoutMs: number
}

/** argon2id's memory (KiB) and passes. */
export interface PasswordCost {
  memoryCost: number
  timeCost: number
}

export interface Config {
  port: number
  host: string
  dataDir: string
  /** Raw 32-byte master key from SVC_MASTER_KEY or SVC_MASTER_KEY_FILE; undefined means "use or create <data>/master.key". */
  masterKey: Uint8Array | undefined
  /** PostgreSQL instead of the data folder (SVC_DATABASE_URL or SVC_DATABASE_URL_FILE); undefined: the file store. */
  databaseUrl: string | undefined
  baseUrl: string
  /** Origin of baseUrl, for the CSRF check. */
  origin: string
  secureCookies: boolean
  /** `first` (the default): only the first account may register; then sign-up is closed. */
  signup: 'first' | 'open' | 'closed'
  sessionTtlMs: number
  oidc: OidcConfig | undefined
  ai: AiConfig
  /**
   * Check every answer against its response schema at run time. On under test (bun test sets
   * NODE_ENV=test) or with SVC_CHECK_RESPONSES=1; otherwise the schemas document the API and the
   * type checker holds the handlers to them, since the check cost a third of a list's time.
   */
  checkResponses: boolean
  /** Proxies whose X-Forwarded-For / Forwarded headers are believed (SVC_TRUST_PROXY); null: none. */
  trustProxy: BlockList | null
  /**
   * Which forwarding header a trusted proxy's request is read from (SVC_TRUST_PROXY's `x-forwarded-for`
   * or `forwarded` item); `auto`: the one present, and neither when a request carries both.
   */
  trustProxyHeader: 'auto' | 'x-forwarded-for' | 'forwarded'
  /** Internal ranges webhooks may reach after all (SVC_WEBHOOK_ALLOW, CIDRs); null: public addresses only. */
  webhookAllow: BlockList | null
  /** New accounts per client address per hour (SVC_REGISTER_LIMIT); 0 turns the limit off. */
  registerLimit: number
  /**
   * argon2id's cost for new password hashes. Never read from the environment: a server hashes at
   * PASSWORD_COST (src/auth/passwords.ts). Only the test suite's in-process servers pass a cheap one
   * (test/support/server.ts), so that its CPU goes to what the tests check, not to hashing.
   */
  passwordCost?: PasswordCost
  /** Host names (host or host:port, lower case) requests may name, besides loopback names; null: any Host (no DNS-rebinding check). */
  allowedHosts: string[] | null
  /** The session cookie's name: `__Host-svc_session` when SVC_BASE_URL is https. */
  sessionCookie: string
  /** The same fact as baseUrlExplicit (SVC_BASE_URL was set), read by the OpenAPI document's `servers`; one of the two can go once app.ts is free to change. */
  baseUrlConfigured: boolean
  // Operations (health, metrics, logs).
  /** SVC_LOG_FORMAT: one readable line per event (`text`, the default), or one JSON object per line. */
  logFormat: 'text' | 'json'
  /** SVC_METRICS_TOKEN: the bearer token GET /metrics asks for; undefined: no /metrics (404). */
  metricsToken: string | undefined
  /** SVC_BODY_TIMEOUT: the time a client gets to send a whole request body, default 10 s. */
  bodyTimeoutMs: number
  /** Whether SVC_BASE_URL was set: passkeys then use its host and origin, else the request's own loopback origin. */
  baseUrlExplicit: boolean
  /** Previous values kept per entry, env file and 2FA token (SVC_HISTORY_VERSIONS, default 20). */
  historyVersions: number
  /** How long deleted items stay in the trash (SVC_TRASH_DAYS, default 30), in ms. */
  trashMs: number
  /** The audit log: SVC_AUDIT_RETENTION (default 365d); SVC_AUDIT=off is for the benchmark's A/B only. */
  audit: { enabled: boolean; retentionMs: number }
  /** A vault unused this long is closed: flushed, its data key dropped from memory (SVC_VAULT_IDLE, default 10m). */
  vaultIdleMs: number
  /** Vaults kept open at most, least recently used closed first (SVC_OPEN_VAULTS, default 1000). */
  maxOpenVaults: number
  /** SVC_DISK_FLOOR: free bytes that events of unauthenticated clients may not eat into (default 256 MiB; 0: no floor). */
  diskFloorBytes: number
}

/**
 * The typed config: each setting read once through the table, then the rules that join two or
 * more of them (the master key's two sources, the OIDC pair, what SVC_BASE_URL implies).
 */
export function loadConfig(env: Env = process.env): Config {
  const values = readSettings(env)
  const baseUrlSet = values.SVC_BASE_URL !== undefined
  const base = values.SVC_BASE_URL ?? new URL(`http://localhost:${values.PORT}`)
  const https = base.protocol === 'https:'
  const key = masterKey(values.SVC_MASTER_KEY, values.SVC_MASTER_KEY_FILE)
  const databaseUrl = databaseUrlOf(values.SVC_DATABASE_URL, values.SVC_DATABASE_URL_FILE)
  // Instances share no folder: a key generated into one would seal what the others cannot open.
  if (databaseUrl !== undefined && key === undefined) {
    throw new ConfigError('SVC_DATABASE_URL needs the master key from SVC_MASTER_KEY or SVC_MASTER_KEY_FILE (none is generated with a database)')
  }
  return {
    port: values.PORT,
    host: values.HOST,
    dataDir: values.SVC_DATA_DIR,
    masterKey: key,
    databaseUrl,
    baseUrl: base.origin + base.pathname.replace(/\/$/, ''),
    origin: base.origin,
    secureCookies: https,
    signup: values.SVC_SIGNUP,
    sessionTtlMs: values.SVC_SESSION_TTL,
    oidc: oidc(values),
    ai: {
      apiKey: values.ANTHROPIC_API_KEY,
      baseUrl: values.ANTHROPIC_BASE_URL,
      model: values.SVC_AI_MODEL,
      timeoutMs: values.SVC_AI_TIMEOUT,
    },
    // NODE_ENV is bun test's, not a setting of svc-vault's: it only picks this default.
    checkResponses: values.SVC_CHECK_RESPONSES ?? env.NODE_ENV === 'test',
    trustProxy: values.SVC_TRUST_PROXY?.list ?? null,
    trustProxyHeader: values.SVC_TRUST_PROXY?.header ?? 'auto',
    webhookAllow: values.SVC_WEBHOOK_ALLOW ?? null,
    registerLimit: values.SVC_REGISTER_LIMIT,
    allowedHosts: baseUrlSet || isLoopbackHost(values.HOST) ? [base.host.toLowerCase()] : null,
    sessionCookie: https ? '__Host-svc_session' : 'svc_session',
    baseUrlConfigured: baseUrlSet,
    logFormat: values.SVC_LOG_FORMAT,
    metricsToken: values.SVC_METRICS_TOKEN,
    bodyTimeoutMs: values.SVC_BODY_TIMEOUT,
    baseUrlExplicit: baseUrlSet,
    historyVersions: values.SVC_HISTORY_VERSIONS,
    trashMs: values.SVC_TRASH_DAYS,
    vaultIdleMs: values.SVC_VAULT_IDLE,
    maxOpenVaults: values.SVC_OPEN_VAULTS,
    audit: { enabled: values.SVC_AUDIT === 'on', retentionMs: values.SVC_AUDIT_RETENTION },
    diskFloorBytes: values.SVC_DISK_FLOOR,
  }
}

/**
 * SVC_MASTER_KEY (the key itself) or SVC_MASTER_KEY_FILE (a file holding it, such as a systemd
 * credential or a Docker secret), not both; the file is read only once that is settled.
 */
/** The master key the environment gives (SVC_MASTER_KEY or SVC_MASTER_KEY_FILE), for operator commands. */
export function masterKeyFromEnv(env: Env): Uint8Array | undefined {
  const key = env.SVC_MASTER_KEY?.trim()
  const file = env.SVC_MASTER_KEY_FILE?.trim()
  return masterKey(key ? parseMasterKey(key) : undefined, file || undefined)
}

function masterKey(key: Uint8Array | undefined, file: string | undefined): Uint8Array | undefined {
  if (file === undefined) return key
  if (key !== undefined) throw new ConfigError('SVC_MASTER_KEY and SVC_MASTER_KEY_FILE are both set: set only one')
  return readMasterKeySetting(file)
}

function oidc(values: SettingValues): OidcConfig | undefined {
  const issuer = values.SVC_OIDC_ISSUER
  const clientId = values.SVC_OIDC_CLIENT_ID
  if (issuer === undefined && clientId === undefined) return undefined
  if (issuer === undefined) throw new ConfigError('SVC_OIDC_ISSUER must be set when SVC_OIDC_CLIENT_ID is set')
  if (clientId === undefined) throw new ConfigError('SVC_OIDC_CLIENT_ID must be set when SVC_OIDC_ISSUER is set')
  return { issuer, clientId, clientSecret: values.SVC_OIDC_CLIENT_SECRET, name: values.SVC_OIDC_NAME }
}

/** The database URL the environment gives (SVC_DATABASE_URL or SVC_DATABASE_URL_FILE), for operator commands too. */
export function databaseUrlFromEnv(env: Env): string | undefined {
  const values = { url: env.SVC_DATABASE_URL?.trim() || undefined, file: env.SVC_DATABASE_URL_FILE?.trim() || undefined }
  return databaseUrlOf(values.url === undefined ? undefined : parseDatabaseUrl(values.url), values.file)
}

function databaseUrlOf(url: string | undefined, file: string | undefined): string | undefined {
  if (file === undefined) return url
  if (url !== undefined) throw new ConfigError('SVC_DATABASE_URL and SVC_DATABASE_URL_FILE are both set: set only one')
  return readDatabaseUrlSetting(file)
}
