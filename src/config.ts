// Environment -> typed, validated configuration. A bad value throws ConfigError
// naming the variable; index.ts prints that one line and exits 1.
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
  /** Raw 32-byte master key from SVC_MASTER_KEY; undefined means "use or create <data>/master.key". */
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
  /** New accounts per client address per hour (SVC_REGISTER_LIMIT); 0 turns the limit off. */
  registerLimit: number
  /** Host names (host or host:port, lower case) requests may name, besides loopback names; null: any Host (no DNS-rebinding check). */
  allowedHosts: string[] | null
  /** The session cookie's name: `__Host-svc_session` when SVC_BASE_URL is https. */
  sessionCookie: string
  /** SVC_BASE_URL was set (the OpenAPI document's `servers` names it; else a relative `/`). */
  baseUrlConfigured: boolean
  /** A vault unused this long is closed: flushed, its data key dropped from memory (SVC_VAULT_IDLE, default 10m). */
  vaultIdleMs: number
  /** Vaults kept open at most, least recently used closed first (SVC_OPEN_VAULTS, default 1000). */
  maxOpenVaults: number
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>

export const DEFAULT_AI_MODEL = 'claude-haiku-5-5'

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

/** "7d", "12h", "30m", "45s", "2w", or a bare number of seconds. */
export function parseDuration(raw: string, name: string, range = { min: 1000, max: 366 * 86_400_000, hint: '7d, 12h or 30m' }): number {
  const match = /^(\d+)\s*([smhdw]?)$/.exec(raw.trim())
  const ms = match ? Number(match[1]) * DURATION_UNITS[match[2] || 's'] : NaN
  if (!Number.isFinite(ms) || ms < range.min || ms > range.max) {
    throw new ConfigError(`${name} must be a duration such as ${range.hint} (${range.min / 1000} s to ${range.max / 1000} s), got "${raw}"`)
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
  const masterKey = env.SVC_MASTER_KEY ? parseMasterKey(env.SVC_MASTER_KEY) : undefined
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
    registerLimit: parseRegisterLimit(env.SVC_REGISTER_LIMIT),
    allowedHosts: env.SVC_BASE_URL?.trim() || isLoopbackHost(host) ? [base.host.toLowerCase()] : null,
    sessionCookie: base.protocol === 'https:' ? '__Host-svc_session' : 'svc_session',
    baseUrlConfigured: Boolean(env.SVC_BASE_URL?.trim()),
    vaultIdleMs: parseDuration(setting(env, 'SVC_VAULT_IDLE', 'set a duration such as 10m, or unset it for 10m') ?? '10m', 'SVC_VAULT_IDLE', { min: 1000, max: 7 * 86_400_000, hint: '10m or 1h' }),
    maxOpenVaults: parseOpenVaults(setting(env, 'SVC_OPEN_VAULTS', 'set a whole number such as 1000, or unset it for 1000')),
  }
}

function parseOpenVaults(raw: string | undefined): number {
  const text = raw?.trim()
  if (!text) return 1000
  if (!/^\d{1,9}$/.test(text) || Number(text) < 1) throw new ConfigError(`SVC_OPEN_VAULTS must be a whole number of at least 1, got "${raw}"`)
  return Number(text)
}

/**
 * SVC_TRUST_PROXY: empty (the default) trusts no proxy; otherwise a comma list of addresses,
 * CIDR ranges and `loopback` (127.0.0.0/8 and ::1).
 */
export function parseTrustProxy(raw: string | undefined): BlockList | null {
  const items = (raw ?? '').split(',').map((item) => item.trim()).filter(Boolean)
  if (items.length === 0) return null
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
      throw new ConfigError(`SVC_TRUST_PROXY must be a comma list of proxy addresses, CIDR ranges or "loopback", got "${item}"`)
    }
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
