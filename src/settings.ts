// The settings table: every environment variable svc-vault reads at start, with its parser, its
// default and its one-line description. config.ts derives the typed Config from it, and the
// README's settings table is this table printed (`bun src/settings.ts`; a test compares them).
// A parser gets the trimmed value and throws a one-line ConfigError naming the variable.
import { readFileSync } from 'node:fs'
import { BlockList, isIP } from 'node:net'
import { resolve } from 'node:path'

export class ConfigError extends Error {}

export type Env = Record<string, string | undefined>

interface SettingSpec<T> {
  parse(value: string): T
  /** The value an unset variable stands for, read by `parse` like any other (and shown in the README). */
  default?: string
  /** The README's default column when the default is not a plain value (`http://localhost:<PORT>`, none). */
  shown?: string
  /** The README's description. */
  doc: string
}

/** A setting whose unset value is its default, parsed. */
function withDefault<T>(spec: SettingSpec<T> & { default: string }): SettingSpec<T> & { optional: false } {
  return { ...spec, optional: false }
}

/** A setting that may be left unset (undefined). */
function optional<T>(spec: Omit<SettingSpec<T>, 'default'>): SettingSpec<T> & { optional: true } {
  return { ...spec, optional: true }
}

// ---- Parsers ----

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '::1', '[::1]', 'localhost'])

export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname)
}

/** HOST: an IP address to listen on, or localhost; a name is refused here rather than failing at listen (EINVAL). */
function parseHost(host: string): string {
  const bare = /^\[.*\]$/.test(host) ? host.slice(1, -1) : host
  if (bare.toLowerCase() === 'localhost') return 'localhost'
  if (isIP(bare) === 0) {
    throw new ConfigError(`HOST must be an IP address to listen on (such as 127.0.0.1, 0.0.0.0, ::1 or ::) or localhost, got "${host}"`)
  }
  return bare
}

function parsePort(raw: string): number {
  if (!/^\d{1,5}$/.test(raw) || Number(raw) > 65535) throw new ConfigError(`PORT must be a whole number from 0 to 65535, got "${raw}"`)
  return Number(raw)
}

export function parseMasterKey(raw: string, name = 'SVC_MASTER_KEY'): Uint8Array {
  const text = raw.trim()
  const bytes = /^[A-Za-z0-9+/_-]+={0,2}$/.test(text) ? Buffer.from(text, 'base64') : Buffer.alloc(0)
  if (bytes.length !== 32) throw new ConfigError(`${name} must be base64 of exactly 32 bytes (openssl rand -base64 32)`)
  return new Uint8Array(bytes)
}

/** SVC_MASTER_KEY_FILE: the key in that file. An error names the file, never its content. */
export function readMasterKeySetting(file: string): Uint8Array {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new ConfigError(`SVC_MASTER_KEY_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  return parseMasterKey(text, `SVC_MASTER_KEY_FILE (${file})`)
}

const DURATION_UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }

/**
 * "7d", "12h", "30m", "45s" or "2w". The unit is required: a bare number (SVC_SESSION_TTL=5) could
 * mean seconds or days, so it is refused rather than guessed.
 */
export function parseDuration(raw: string, name: string, range = { min: 1000, max: 366 * 86_400_000, hint: '7d, 12h or 30m' }): number {
  const match = /^(\d{1,15})\s?([smhdw])$/.exec(raw.trim())
  const ms = match ? Number(match[1]) * DURATION_UNITS[match[2]] : NaN
  if (!Number.isFinite(ms) || ms < range.min || ms > range.max) {
    const unit = /^\d+$/.test(raw.trim()) ? ' with its unit (s, m, h, d or w)' : ''
    throw new ConfigError(`${name} must be a duration${unit} such as ${range.hint} (${range.min / 1000} s to ${range.max / 1000} s), got "${raw}"`)
  }
  return ms
}

const duration = (name: string, min: number, max: number, hint: string) => (raw: string) => parseDuration(raw, name, { min, max, hint })

export function parseUrl(raw: string, name: string): URL {
  try {
    const url = new URL(raw)
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error()
    return url
  } catch {
    throw new ConfigError(`${name} must be an http:// or https:// URL, got "${raw}"`)
  }
}

function parseOidcIssuer(raw: string): string {
  const url = parseUrl(raw, 'SVC_OIDC_ISSUER')
  if (url.protocol !== 'https:' && !isLoopbackHost(url.hostname)) {
    throw new ConfigError('SVC_OIDC_ISSUER must be https (http is accepted only on a loopback host)')
  }
  return raw
}

/** One of a few words, case-insensitive. */
function oneOf<const T extends string>(name: string, words: readonly T[], note = '') {
  return (raw: string): T => {
    const word = raw.toLowerCase()
    if (!words.includes(word as T)) {
      const list = words.map((w) => `"${w}"`)
      const text = list.length === 2 ? list.join(' or ') : `${list.slice(0, -1).join(', ')} or ${list.at(-1)}`
      throw new ConfigError(`${name} must be ${text}${note}, got "${raw}"`)
    }
    return word as T
  }
}

export const DEFAULT_DISK_FLOOR_BYTES = 256 * 1024 ** 2
const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3, tib: 1024 ** 4 }

/** SVC_DISK_FLOOR: "256MiB", "1GB", "500mb", a bare number of bytes, or 0 (no floor). */
function parseDiskFloor(raw: string): number {
  const match = /^(\d{1,15}(?:\.\d{1,6})?)\s?([a-z]{1,3})?$/i.exec(raw)
  const unit = match ? SIZE_UNITS[(match[2] ?? 'b').toLowerCase()] : undefined
  const bytes = match && unit ? Math.floor(Number(match[1]) * unit) : NaN
  if (!(bytes >= 0 && bytes <= 2 ** 53)) {
    throw new ConfigError(`SVC_DISK_FLOOR must be a size such as 256MiB, 1GB or 500000000 (bytes), or 0 for no floor, got "${raw}"`)
  }
  return bytes
}

function parseHistoryVersions(raw: string): number {
  if (!/^\d{1,4}$/.test(raw) || Number(raw) > 1000) {
    throw new ConfigError(`SVC_HISTORY_VERSIONS must be a whole number from 0 to 1000 (previous values kept per record), got "${raw}"`)
  }
  return Number(raw)
}

/** Days, in ms. Decimals are accepted (0.5 = 12 hours), which also lets a test watch items expire. */
function parseTrashDays(raw: string): number {
  const days = /^\d{1,4}(\.\d{1,6})?$/.test(raw) ? Number(raw) : NaN
  if (!(days > 0 && days <= 3650)) throw new ConfigError(`SVC_TRASH_DAYS must be a number of days above 0 and at most 3650, got "${raw}"`)
  return days * 86_400_000
}

function parseOpenVaults(raw: string): number {
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1) throw new ConfigError(`SVC_OPEN_VAULTS must be a whole number of at least 1, got "${raw}"`)
  return Number(raw)
}

function parseRegisterLimit(raw: string): number {
  if (!/^\d{1,9}$/.test(raw)) throw new ConfigError(`SVC_REGISTER_LIMIT must be a whole number (0 turns the limit off), got "${raw}"`)
  return Number(raw)
}

function parseMetricsToken(token: string): string {
  // Compared with every scrape's header: a short token would be guessable.
  if (token.length < 16 || !/^[\x21-\x7e]+$/.test(token)) {
    throw new ConfigError('SVC_METRICS_TOKEN must be at least 16 printable characters without spaces (openssl rand -hex 32)')
  }
  return token
}

const PROXY_HEADERS = ['x-forwarded-for', 'forwarded'] as const
export type ProxyHeader = 'auto' | (typeof PROXY_HEADERS)[number]

/**
 * SVC_TRUST_PROXY: a comma list of addresses, CIDR ranges and `loopback` (127.0.0.0/8 and ::1),
 * and at most one header name, `x-forwarded-for` or `forwarded`, to read only that one; empty: no
 * proxy. A range of every address (0.0.0.0/0, ::/0) is refused: it would let any client write its
 * own address.
 */
export function parseTrustProxy(raw: string | undefined): BlockList | null {
  const items = (raw ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item && !PROXY_HEADERS.includes(item.toLowerCase() as never))
  const expected = 'a comma list of proxy addresses, CIDR ranges or "loopback" (and optionally x-forwarded-for or forwarded)'
  if (items.length === 0) {
    const value = (raw ?? '').trim()
    if (value.replaceAll(',', '').trim() === '') {
      if (value) throw new ConfigError(`SVC_TRUST_PROXY must be ${expected}, got "${value}"`)
      return null
    }
    throw new ConfigError('SVC_TRUST_PROXY names a header but no proxy: add the proxy addresses, CIDR ranges or "loopback"')
  }
  return parseAddressList(items, 'SVC_TRUST_PROXY', expected)
}

export function parseTrustProxyHeader(raw: string | undefined): ProxyHeader {
  const named = (raw ?? '')
    .split(',')
    .map((item) => item.trim().toLowerCase())
    .filter((item) => PROXY_HEADERS.includes(item as never))
  if (new Set(named).size > 1) throw new ConfigError('SVC_TRUST_PROXY names both x-forwarded-for and forwarded: name the one header your proxy writes')
  return (named[0] as ProxyHeader | undefined) ?? 'auto'
}

/** SVC_WEBHOOK_ALLOW: a comma list of addresses and CIDR ranges (and `loopback`) webhooks may reach although internal. */
export function parseWebhookAllow(raw: string | undefined): BlockList | null {
  const expected = 'a comma list of CIDR ranges or addresses such as 192.168.1.0/24, or "loopback"'
  const value = (raw ?? '').trim()
  const items = value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)
  if (items.length === 0) {
    if (value) throw new ConfigError(`SVC_WEBHOOK_ALLOW must be ${expected}, got "${value}"`)
    return null
  }
  return parseAddressList(items, 'SVC_WEBHOOK_ALLOW', expected)
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

/** A PostgreSQL connection URL; an error never repeats it (it may carry a password). */
export function parseDatabaseUrl(raw: string, name = 'SVC_DATABASE_URL'): string {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ConfigError(`${name} must be a postgres:// URL`)
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') throw new ConfigError(`${name} must be a postgres:// URL, got a ${url.protocol}// one`)
  const mode = url.searchParams.get('sslmode')
  if (mode !== null && !['disable', 'prefer', 'require', 'verify-ca', 'verify-full'].includes(mode)) {
    throw new ConfigError(`${name}: sslmode must be disable, prefer, require, verify-ca or verify-full, got "${mode}"`)
  }
  return raw
}

/** SVC_DATABASE_URL_FILE: the URL in that file. An error names the file, never its content. */
export function readDatabaseUrlSetting(file: string): string {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new ConfigError(`SVC_DATABASE_URL_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  if (text.trim() === '') throw new ConfigError(`SVC_DATABASE_URL_FILE: ${file} is empty`)
  return parseDatabaseUrl(text.trim(), `SVC_DATABASE_URL_FILE (${file})`)
}

/** A value taken as given (trimmed). */
const asIs = (raw: string) => raw

// ---- The table ----

export const DEFAULT_AI_MODEL = 'claude-haiku-5-5'
/** The time a client gets to send a whole request body; a body trickled slower gets 408. */
export const DEFAULT_BODY_TIMEOUT_MS = 10_000

/**
 * Every setting, in the order they are read (the first bad one is the error shown) and listed in
 * the README. A variable that is present but blank (PORT=' ', or SVC_MASTER_KEY= from a compose
 * file with an unset variable) is refused for every one of them: it used to mean the default
 * silently, which hid the mistake, and for SVC_MASTER_KEY a generated key inside the data volume.
 */
export const SETTINGS = {
  PORT: withDefault({ parse: parsePort, default: '3000', doc: 'the port to listen on' }),
  HOST: withDefault({ parse: parseHost, default: '127.0.0.1', doc: 'the address to listen on (`0.0.0.0` in a container)' }),
  SVC_DATA_DIR: withDefault({ parse: (raw) => resolve(raw), default: './data', doc: 'where every file of the vault lives' }),
  SVC_MASTER_KEY: optional({
    parse: (raw) => parseMasterKey(raw),
    doc: 'base64 of 32 random bytes (`openssl rand -base64 32`). Unset: a key is generated on first start into `<data>/master.key` (mode 0600)',
  }),
  SVC_MASTER_KEY_FILE: optional({ parse: asIs, doc: 'a file holding that key instead (a systemd credential, a Docker secret); not with `SVC_MASTER_KEY`' }),
  SVC_DATABASE_URL: optional({
    parse: parseDatabaseUrl,
    doc: 'PostgreSQL 15+ (`postgres://user:password@host/db?sslmode=verify-full`) instead of the data folder, for two or more instances; needs `SVC_MASTER_KEY` or `SVC_MASTER_KEY_FILE`: [docs/postgres.md](docs/postgres.md)',
  }),
  SVC_DATABASE_URL_FILE: optional({ parse: asIs, doc: 'a file holding that URL instead (it carries the password); not with `SVC_DATABASE_URL`' }),
  SVC_BASE_URL: optional({
    parse: (raw) => parseUrl(raw, 'SVC_BASE_URL'),
    shown: '`http://localhost:<PORT>`',
    doc: 'the public origin people use; `https://…` turns on `Secure` cookies, and passkeys use its host',
  }),
  SVC_SIGNUP: withDefault({
    parse: oneOf('SVC_SIGNUP', ['first', 'open', 'closed']),
    default: 'first',
    doc: '`first` (only the first account may register, then sign-up closes), `open`, or `closed` (only existing accounts can sign in)',
  }),
  SVC_REGISTER_LIMIT: withDefault({ parse: parseRegisterLimit, default: '10', doc: 'new accounts per client address per hour; `0` turns the limit off' }),
  SVC_SESSION_TTL: withDefault({
    parse: duration('SVC_SESSION_TTL', 1000, 366 * 86_400_000, '7d, 12h or 30m'),
    default: '7d',
    doc: 'session lifetime (`30m`, `12h`, `7d`, `2w`; the unit is required)',
  }),
  SVC_OIDC_ISSUER: optional({
    parse: parseOidcIssuer,
    doc: 'sign-in through an identity provider, its issuer URL (with `SVC_OIDC_CLIENT_ID`): [docs/oidc.md](docs/oidc.md)',
  }),
  SVC_OIDC_CLIENT_ID: optional({ parse: asIs, doc: 'the client id registered at the identity provider' }),
  SVC_OIDC_CLIENT_SECRET: optional({ parse: asIs, doc: 'its client secret (none: a public client)' }),
  SVC_OIDC_NAME: withDefault({ parse: asIs, default: 'Single sign-on', doc: "the sign-in button's label" }),
  ANTHROPIC_API_KEY: optional({ parse: asIs, doc: 'AI-assisted import; without a key a built-in classifier answers' }),
  ANTHROPIC_BASE_URL: optional({ parse: (raw) => (parseUrl(raw, 'ANTHROPIC_BASE_URL'), raw), shown: 'SDK default', doc: "the model API's address" }),
  SVC_AI_MODEL: withDefault({ parse: asIs, default: DEFAULT_AI_MODEL, doc: 'the model AI-assisted import asks' }),
  SVC_AI_TIMEOUT: withDefault({
    parse: duration('SVC_AI_TIMEOUT', 1000, 600_000, '20s or 1m'),
    default: '20s',
    doc: 'how long an AI-assisted import waits for the model',
  }),
  SVC_TRUST_PROXY: optional({
    parse: (raw) => ({ list: parseTrustProxy(raw), header: parseTrustProxyHeader(raw) }),
    doc: "the reverse proxy's addresses (a comma list of addresses, CIDR ranges or `loopback`, plus the header it writes, `x-forwarded-for` or `forwarded`), whose forwarding header is believed: [docs/reverse-proxy.md](docs/reverse-proxy.md)",
  }),
  SVC_WEBHOOK_ALLOW: optional({
    parse: parseWebhookAllow,
    doc: 'internal ranges (CIDRs, or `loopback`) due-items webhooks may reach; otherwise public addresses only: [docs/lifecycle.md](docs/lifecycle.md)',
  }),
  SVC_HISTORY_VERSIONS: withDefault({ parse: parseHistoryVersions, default: '20', doc: 'previous values kept per entry, env file and 2FA token' }),
  SVC_TRASH_DAYS: withDefault({ parse: parseTrashDays, default: '30', doc: 'days a deleted item stays in the trash before it is purged' }),
  SVC_AUDIT_RETENTION: withDefault({
    parse: duration('SVC_AUDIT_RETENTION', 60_000, 100 * 366 * 86_400_000, '365d, 90d or 52w'),
    default: '365d',
    doc: 'how long audit events are kept (older ones are dropped when the log is compacted; the chain still verifies)',
  }),
  SVC_AUDIT: withDefault({
    parse: oneOf('SVC_AUDIT', ['on', 'off'], ' (off is for the benchmark only)'),
    default: 'on',
    doc: "`off` writes no audit log: for the benchmark's comparison only",
  }),
  SVC_DISK_FLOOR: withDefault({
    parse: parseDiskFloor,
    default: '256MiB',
    doc: 'free space that failed sign-ins and other events of clients without an account may not eat into (`1GB`, `512MiB`, bytes; `0`: no floor); under it they are only counted: [docs/security.md](docs/security.md#filling-the-disk-through-the-audit-log)',
  }),
  SVC_BODY_TIMEOUT: withDefault({
    parse: duration('SVC_BODY_TIMEOUT', 1000, 600_000, '10s or 1m'),
    default: '10s',
    doc: 'time a client gets to send a whole request body; slower gets 408 `REQUEST_TIMEOUT` and the connection is closed',
  }),
  SVC_VAULT_IDLE: withDefault({
    parse: duration('SVC_VAULT_IDLE', 1000, 7 * 86_400_000, '10m or 1h'),
    default: '10m',
    doc: 'a vault unused this long is closed: written out, its data key dropped from memory',
  }),
  SVC_OPEN_VAULTS: withDefault({ parse: parseOpenVaults, default: '1000', doc: 'vaults kept open at most; the least recently used is closed first' }),
  SVC_LOG_FORMAT: withDefault({
    parse: oneOf('SVC_LOG_FORMAT', ['text', 'json']),
    default: 'text',
    doc: '`json`: one JSON object per line, with a line per request',
  }),
  SVC_METRICS_TOKEN: optional({ parse: parseMetricsToken, doc: 'turns on `GET /metrics` (Prometheus), for this bearer token (16 characters or more)' }),
  SVC_CHECK_RESPONSES: optional({
    parse: (raw) => oneOf('SVC_CHECK_RESPONSES', ['1', '0'])(raw) === '1',
    shown: '`1` under `bun test`, else `0`',
    doc: "`1`: every answer is checked against its schema at run time (a third of a list's time)",
  }),
} as const

type Settings = typeof SETTINGS
export type SettingName = keyof Settings
/** Each setting's parsed value: undefined only for an optional one left unset. */
export type SettingValues = {
  [K in SettingName]: Settings[K] extends { optional: true; parse(raw: string): infer T } ? T | undefined : ReturnType<Settings[K]['parse']>
}

function describeDefault(spec: SettingSpec<unknown>): string {
  return spec.shown ?? (spec.default === undefined ? '(none)' : `\`${spec.default}\``)
}

/** Reads every setting from the environment: the parsed value, its default, or a one-line ConfigError. */
export function readSettings(env: Env): SettingValues {
  const values: Record<string, unknown> = {}
  for (const [name, spec] of Object.entries(SETTINGS) as [SettingName, SettingSpec<unknown>][]) {
    const raw = env[name]
    if (raw === undefined) {
      values[name] = spec.default === undefined ? undefined : spec.parse(spec.default)
      continue
    }
    const value = raw.trim()
    if (value === '') {
      const unset = spec.default === undefined && spec.shown === undefined ? 'it has no default' : `the default is ${describeDefault(spec).replaceAll('`', '')}`
      throw new ConfigError(`${name} is set but blank; set a value or unset the variable (${unset})`)
    }
    values[name] = spec.parse(value)
  }
  return values as SettingValues
}

/** The README's settings table, one row per setting. */
export function settingsMarkdown(): string {
  const rows = (Object.entries(SETTINGS) as [SettingName, SettingSpec<unknown>][]).map(
    ([name, spec]) => `| \`${name}\` | ${describeDefault(spec)} | ${spec.doc} |`,
  )
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n')
}

if (import.meta.main) console.log(settingsMarkdown())
