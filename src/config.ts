// Environment -> typed, validated configuration. A bad value throws ConfigError
// naming the variable; index.ts prints that one line and exits 1.
import { readFileSync } from 'node:fs'
import { BlockList, isIP } from 'node:net'
import { resolve } from 'node:path'

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

export interface Config {
  port: number
  host: string
  dataDir: string
  /** Raw 32-byte master key from SVC_MASTER_KEY or SVC_MASTER_KEY_FILE; undefined means "use or create <data>/master.key". */
  masterKey: Uint8Array | undefined
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
  /** Host names (host or host:port, lower case) requests may name, besides loopback names; null: any Host (no DNS-rebinding check). */
  allowedHosts: string[] | null
  /** The session cookie's name: `__Host-svc_session` when SVC_BASE_URL is https. */
  sessionCookie: string
  /** SVC_BASE_URL was set (the OpenAPI document's `servers` names it; else a relative `/`). */
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

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>

export const DEFAULT_AI_MODEL = 'claude-haiku-5-5'
/** The time a client gets to send a whole request body; a body trickled slower gets 408 (issue 14). */
export const DEFAULT_BODY_TIMEOUT_MS = 10_000

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '::1', '[::1]', 'localhost'])

/**
 * The trimmed value of a setting, or undefined when unset. A setting that is present but blank
 * (PORT=' ', or HOST= from a compose file with an unset variable) is refused (issue 23): it used
 * to mean the default silently, which hid the mistake.
 */
function setting(env: Env, name: string, hint: string): string | undefined {
  const raw = env[name]
  if (raw === undefined) return undefined
  const value = raw.trim()
  if (value === '') throw new ConfigError(`${name} is set but blank; ${hint}`)
  return value
}

/** HOST: an IP address to listen on, or localhost; a name is refused here rather than failing at listen (EINVAL). */
function parseHost(env: Env): string {
  const host = setting(env, 'HOST', 'set an address such as 127.0.0.1 or 0.0.0.0, or unset it for 127.0.0.1')
  if (host === undefined) return '127.0.0.1'
  const bare = /^\[.*\]$/.test(host) ? host.slice(1, -1) : host
  if (bare.toLowerCase() === 'localhost') return 'localhost'
  if (isIP(bare) === 0) {
    throw new ConfigError(`HOST must be an IP address to listen on (such as 127.0.0.1, 0.0.0.0, ::1 or ::) or localhost, got "${host}"`)
  }
  return bare
}

function parsePort(env: Env): number {
  const raw = setting(env, 'PORT', 'set a whole number from 0 to 65535, or unset it for 3000')
  if (raw === undefined) return 3000
  const port = Number(raw)
  if (!/^\d+$/.test(raw) || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`PORT must be a whole number from 0 to 65535, got "${raw}"`)
  }
  return port
}

export function parseMasterKey(raw: string, name = 'SVC_MASTER_KEY'): Uint8Array {
  const text = raw.trim()
  const bytes = /^[A-Za-z0-9+/_-]+={0,2}$/.test(text) ? Buffer.from(text, 'base64') : Buffer.alloc(0)
  if (bytes.length !== 32) throw new ConfigError(`${name} must be base64 of exactly 32 bytes (openssl rand -base64 32)`)
  return new Uint8Array(bytes)
}

const DURATION_UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }

/**
 * "7d", "12h", "30m", "45s", "2w". The unit is required: a bare "5" was once taken as seconds,
 * which made SVC_SESSION_TTL=5 a session of five seconds when days were meant.
 */
export function parseDuration(raw: string, name: string, range = { min: 1000, max: 366 * 86_400_000, hint: '7d, 12h or 30m' }): number {
  const match = /^(\d+)\s*([smhdw])$/.exec(raw.trim())
  const ms = match ? Number(match[1]) * DURATION_UNITS[match[2]] : NaN
  if (!Number.isFinite(ms) || ms < range.min || ms > range.max) {
    const unitless = /^\d+$/.test(raw.trim()) ? ' with its unit (s, m, h, d or w)' : ''
    throw new ConfigError(`${name} must be a duration${unitless} such as ${range.hint} (${range.min / 1000} s to ${range.max / 1000} s), got "${raw}"`)
  }
  return ms
}

function parseUrl(raw: string, name: string): URL {
  try {
    const url = new URL(raw)
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error()
    return url
  } catch {
    throw new ConfigError(`${name} must be an http:// or https:// URL, got "${raw}"`)
  }
}

export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname)
}

function parseOidc(env: Env): OidcConfig | undefined {
  const issuer = env.SVC_OIDC_ISSUER?.trim()
  const clientId = env.SVC_OIDC_CLIENT_ID?.trim()
  if (!issuer && !clientId) return undefined
  if (!issuer) throw new ConfigError('SVC_OIDC_ISSUER must be set when SVC_OIDC_CLIENT_ID is set')
  if (!clientId) throw new ConfigError('SVC_OIDC_CLIENT_ID must be set when SVC_OIDC_ISSUER is set')
  const url = parseUrl(issuer, 'SVC_OIDC_ISSUER')
  if (url.protocol !== 'https:' && !isLoopbackHost(url.hostname)) {
    throw new ConfigError('SVC_OIDC_ISSUER must be https (http is accepted only on a loopback host)')
  }
  return {
    issuer,
    clientId,
    clientSecret: env.SVC_OIDC_CLIENT_SECRET || undefined,
    name: env.SVC_OIDC_NAME?.trim() || 'Single sign-on',
  }
}

export function loadConfig(env: Env = process.env): Config {
  const port = parsePort(env)
  const host = parseHost(env)
  // Blank values of the other settings that take a number, a duration or an address.
  const baseSetting = setting(env, 'SVC_BASE_URL', 'set the public origin such as https://vault.example.com, or unset it')
  const sessionTtl = setting(env, 'SVC_SESSION_TTL', 'set a duration such as 7d, or unset it for 7d')
  const dataDir = resolve(env.SVC_DATA_DIR?.trim() || './data')
  const masterKey = masterKeyFromEnv(env)
  const base = parseUrl(baseSetting ?? `http://localhost:${port}`, 'SVC_BASE_URL')
  const signup = (env.SVC_SIGNUP?.trim() || 'first').toLowerCase()
  if (signup !== 'first' && signup !== 'open' && signup !== 'closed') {
    throw new ConfigError(`SVC_SIGNUP must be "first", "open" or "closed", got "${env.SVC_SIGNUP}"`)
  }
  const timeoutRaw = setting(env, 'SVC_AI_TIMEOUT', 'set a duration such as 20s, or unset it for 20s')
  const aiTimeoutMs = timeoutRaw
    ? parseDuration(timeoutRaw, 'SVC_AI_TIMEOUT', { min: 1000, max: 600_000, hint: '20s or 1m' })
    : 20_000

  return {
    port,
    host,
    dataDir,
    masterKey,
    baseUrl: base.origin + base.pathname.replace(/\/$/, ''),
    origin: base.origin,
    secureCookies: base.protocol === 'https:',
    signup,
    sessionTtlMs: parseDuration(sessionTtl ?? '7d', 'SVC_SESSION_TTL'),
    oidc: parseOidc(env),
    ai: {
      apiKey: env.ANTHROPIC_API_KEY || undefined,
      baseUrl: env.ANTHROPIC_BASE_URL || undefined,
      model: env.SVC_AI_MODEL?.trim() || DEFAULT_AI_MODEL,
      timeoutMs: aiTimeoutMs,
    },
    checkResponses: env.SVC_CHECK_RESPONSES === '1' || env.NODE_ENV === 'test',
    trustProxy: parseTrustProxy(env.SVC_TRUST_PROXY),
    trustProxyHeader: parseTrustProxyHeader(env.SVC_TRUST_PROXY),
    webhookAllow: parseWebhookAllow(env.SVC_WEBHOOK_ALLOW),
    registerLimit: parseRegisterLimit(env.SVC_REGISTER_LIMIT),
    allowedHosts: env.SVC_BASE_URL?.trim() || isLoopbackHost(host) ? [base.host.toLowerCase()] : null,
    sessionCookie: base.protocol === 'https:' ? '__Host-svc_session' : 'svc_session',
    baseUrlConfigured: Boolean(env.SVC_BASE_URL?.trim()),
    logFormat: parseLogFormat(env.SVC_LOG_FORMAT),
    metricsToken: parseMetricsToken(env.SVC_METRICS_TOKEN),
    bodyTimeoutMs: env.SVC_BODY_TIMEOUT?.trim()
      ? parseDuration(env.SVC_BODY_TIMEOUT.trim(), 'SVC_BODY_TIMEOUT', { min: 1000, max: 600_000, hint: '10s or 1m' })
      : DEFAULT_BODY_TIMEOUT_MS,
    baseUrlExplicit: Boolean(env.SVC_BASE_URL?.trim()),
    historyVersions: parseHistoryVersions(env),
    trashMs: parseTrashDays(env) * 86_400_000,
    vaultIdleMs: parseDuration(setting(env, 'SVC_VAULT_IDLE', 'set a duration such as 10m, or unset it for 10m') ?? '10m', 'SVC_VAULT_IDLE', { min: 1000, max: 7 * 86_400_000, hint: '10m or 1h' }),
    maxOpenVaults: parseOpenVaults(setting(env, 'SVC_OPEN_VAULTS', 'set a whole number such as 1000, or unset it for 1000')),
    audit: parseAudit(env),
    diskFloorBytes: parseDiskFloor(setting(env, 'SVC_DISK_FLOOR', 'set a size such as 256MiB or 1GB, or unset it for 256MiB')),
  }
}

export const DEFAULT_DISK_FLOOR_BYTES = 256 * 1024 ** 2
const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3, tib: 1024 ** 4 }

/** SVC_DISK_FLOOR: "256MiB", "1GB", "500mb", a bare number of bytes, or 0 (no floor). */
function parseDiskFloor(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_DISK_FLOOR_BYTES
  const match = /^(\d{1,15}(?:\.\d{1,6})?)\s?([a-z]{1,3})?$/i.exec(raw)
  const unit = match ? SIZE_UNITS[(match[2] ?? 'b').toLowerCase()] : undefined
  const bytes = match && unit ? Math.floor(Number(match[1]) * unit) : NaN
  if (!(bytes >= 0 && bytes <= 2 ** 53)) {
    throw new ConfigError(`SVC_DISK_FLOOR must be a size such as 256MiB, 1GB or 500000000 (bytes), or 0 for no floor, got "${raw}"`)
  }
  return bytes
}

function parseAudit(env: Env): Config['audit'] {
  const switchRaw = env.SVC_AUDIT?.trim().toLowerCase()
  if (switchRaw !== undefined && switchRaw !== '' && switchRaw !== 'on' && switchRaw !== 'off') {
    throw new ConfigError(`SVC_AUDIT must be "on" or "off" (off is for the benchmark only), got "${env.SVC_AUDIT}"`)
  }
  const retention = setting(env, 'SVC_AUDIT_RETENTION', 'set a duration such as 365d or 52w, or unset it for 365d')
  return {
    enabled: switchRaw !== 'off',
    retentionMs: parseDuration(retention ?? '365d', 'SVC_AUDIT_RETENTION', { min: 60_000, max: 100 * 366 * 86_400_000, hint: '365d, 90d or 52w' }),
  }
}

function parseHistoryVersions(env: Env): number {
  const raw = setting(env, 'SVC_HISTORY_VERSIONS', 'set a whole number such as 20, or unset it for 20')
  if (raw === undefined) return 20
  if (!/^\d{1,4}$/.test(raw) || Number(raw) > 1000) {
    throw new ConfigError(`SVC_HISTORY_VERSIONS must be a whole number from 0 to 1000 (previous values kept per record), got "${raw}"`)
  }
  return Number(raw)
}

function parseTrashDays(env: Env): number {
  const raw = setting(env, 'SVC_TRASH_DAYS', 'set a number of days such as 30, or unset it for 30')
  if (raw === undefined) return 30
  // Decimals are accepted (0.5 = 12 hours), which also lets a test watch items expire.
  const days = /^\d{1,4}(\.\d{1,6})?$/.test(raw) ? Number(raw) : NaN
  if (!(days > 0 && days <= 3650)) throw new ConfigError(`SVC_TRASH_DAYS must be a number of days above 0 and at most 3650, got "${raw}"`)
  return days
}

function parseOpenVaults(raw: string | undefined): number {
  const text = raw?.trim()
  if (!text) return 1000
  if (!/^\d{1,9}$/.test(text) || Number(text) < 1) throw new ConfigError(`SVC_OPEN_VAULTS must be a whole number of at least 1, got "${raw}"`)
  return Number(text)
}

const PROXY_HEADERS = ['x-forwarded-for', 'forwarded'] as const

/**
 * SVC_TRUST_PROXY: empty (the default) trusts no proxy; otherwise a comma list of addresses,
 * CIDR ranges and `loopback` (127.0.0.0/8 and ::1), and at most one header name, `x-forwarded-for`
 * or `forwarded`, to read only that one. A range of every address (0.0.0.0/0, ::/0) is refused:
 * it would let any client write its own address.
 */
export function parseTrustProxy(raw: string | undefined): BlockList | null {
  const items = (raw ?? '').split(',').map((item) => item.trim()).filter((item) => item && !PROXY_HEADERS.includes(item.toLowerCase() as never))
  if (items.length === 0) {
    if ((raw ?? '').trim()) throw new ConfigError('SVC_TRUST_PROXY names a header but no proxy: add the proxy addresses, CIDR ranges or "loopback"')
    return null
  }
  return parseAddressList(items, 'SVC_TRUST_PROXY', 'a comma list of proxy addresses, CIDR ranges or "loopback" (and optionally x-forwarded-for or forwarded)')
}

export function parseTrustProxyHeader(raw: string | undefined): Config['trustProxyHeader'] {
  const named = (raw ?? '').split(',').map((item) => item.trim().toLowerCase()).filter((item) => PROXY_HEADERS.includes(item as never))
  if (new Set(named).size > 1) throw new ConfigError('SVC_TRUST_PROXY names both x-forwarded-for and forwarded: name the one header your proxy writes')
  return (named[0] as Config['trustProxyHeader'] | undefined) ?? 'auto'
}

/** SVC_WEBHOOK_ALLOW: a comma list of addresses and CIDR ranges (and `loopback`) webhooks may reach although internal. */
export function parseWebhookAllow(raw: string | undefined): BlockList | null {
  const items = (raw ?? '').split(',').map((item) => item.trim()).filter(Boolean)
  if (items.length === 0) return null
  return parseAddressList(items, 'SVC_WEBHOOK_ALLOW', 'a comma list of CIDR ranges or addresses such as 192.168.1.0/24, or "loopback"')
}

function parseAddressList(items: string[], name: string, expected: string): BlockList {
  const list = new BlockList()
  for (const item of items) {
    if (item.toLowerCase() === 'loopback') {
      list.addSubnet('127.0.0.0', 8, 'ipv4')
      list.addAddress('::1', 'ipv6')
      continue
    }
    const [address, bits, extra] = item.split('/')
    const family = isIP(address)
    const max = family === 4 ? 32 : 128
    const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN
    if (family === 0 || extra !== undefined || !(prefix >= 0 && prefix <= max)) {
      throw new ConfigError(`${name} must be ${expected}, got "${item}"`)
    }
    if (prefix === 0) throw new ConfigError(`${name} must not hold a range of every address ("${item}"): name the addresses or ranges meant`)
    list.addSubnet(address, prefix, family === 4 ? 'ipv4' : 'ipv6')
  }
  return list
}

function parseRegisterLimit(raw: string | undefined): number {
  const text = raw?.trim()
  if (!text) return 10
  if (!/^\d{1,9}$/.test(text)) throw new ConfigError(`SVC_REGISTER_LIMIT must be a whole number (0 turns the limit off), got "${raw}"`)
  return Number(text)
}

/**
 * SVC_MASTER_KEY (the key itself) or SVC_MASTER_KEY_FILE (a file holding it, such as a systemd
 * credential or a Docker secret), not both. An error names the file, never its content.
 */
export function masterKeyFromEnv(env: Env): Uint8Array | undefined {
  const file = env.SVC_MASTER_KEY_FILE?.trim()
  if (!file) return env.SVC_MASTER_KEY ? parseMasterKey(env.SVC_MASTER_KEY) : undefined
  if (env.SVC_MASTER_KEY) throw new ConfigError('SVC_MASTER_KEY and SVC_MASTER_KEY_FILE are both set: set only one')
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new ConfigError(`SVC_MASTER_KEY_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  return parseMasterKey(text, `SVC_MASTER_KEY_FILE (${file})`)
}

function parseLogFormat(raw: string | undefined): 'text' | 'json' {
  const format = (raw?.trim() || 'text').toLowerCase()
  if (format !== 'text' && format !== 'json') throw new ConfigError(`SVC_LOG_FORMAT must be "text" or "json", got "${raw}"`)
  return format
}

function parseMetricsToken(raw: string | undefined): string | undefined {
  const token = raw?.trim()
  if (!token) return undefined
  // Compared with every scrape's header: a short token would be guessable.
  if (token.length < 16 || !/^[\x21-\x7e]+$/.test(token)) {
    throw new ConfigError('SVC_METRICS_TOKEN must be at least 16 printable characters without spaces (openssl rand -hex 32)')
  }
  return token
}
