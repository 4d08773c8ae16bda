// Two-factor tokens in and out of other authenticator apps. Reading turns a pasted
// export into candidate tokens (or a 400 naming why the whole file is unreadable); writing turns
// stored tokens into the formats those apps import. Loaded with the first import or export.
import { createDecipheriv, scrypt } from 'node:crypto'
import { Secret } from 'otpauth'
import { badRequest } from '../../http/errors'
import { decodeMigrationPayload, MIGRATION_PREFIX, migrationLink, migrationLinkData, type MigrationOtp } from './migration'
import { parseOtpSecret } from './totp'
import { normalizedBase32, STEAM_DIGITS, STEAM_PERIOD_SECONDS, TOTP_ALGORITHMS, TOTP_LIMITS, type OtpType, type TotpAlgorithm } from './totp-code'

export const IMPORT_FORMATS = ['google-migration', 'aegis', 'aegis-encrypted', '2fas', 'andotp', 'otpauth'] as const
export type ImportFormat = (typeof IMPORT_FORMATS)[number]

/** More tokens than anyone keeps; a file with more is refused whole. */
export const MAX_IMPORT_TOKENS = 1000
/** Every format here is at most a few levels deep. */
export const MAX_IMPORT_DEPTH = 16
const LABEL_MAX = 200

/** A token read from a file, ready to be stored (and, as ExportToken, one written to a file). */
export interface ImportCandidate {
  service: string
  accountName: string
  /** Normalized base32. */
  secret: string
  type: OtpType
  algorithm: TotpAlgorithm
  digits: number
  period: number
  counter: number
}

export interface RefusedCandidate {
  service: string
  accountName: string
  reason: string
}

export interface ParsedImport {
  format: ImportFormat
  /** In file order; each either a candidate or a refusal. */
  items: (ImportCandidate | RefusedCandidate)[]
}

export const isRefused = (item: ImportCandidate | RefusedCandidate): item is RefusedCandidate => 'reason' in item

const unreadable = (reason: string) => badRequest('IMPORT_UNREADABLE', `content: ${reason}`)

/** What a format says about one token, before it is checked. */
interface RawToken {
  issuer?: unknown
  name?: unknown
  /** Base32 (any case, spaces, padding). */
  secret?: unknown
  type?: unknown
  algorithm?: unknown
  digits?: unknown
  period?: unknown
  counter?: unknown
}

const text = (value: unknown): string => (typeof value === 'string' ? value.trim() : '')
const clip = (value: string) => (value.length > LABEL_MAX ? value.slice(0, LABEL_MAX) : value)

/** Service and account: the issuer, else the part of the name before a colon; each stands in for a missing other. */
function labels(raw: RawToken): { service: string; accountName: string } {
  let issuer = text(raw.issuer)
  let name = text(raw.name)
  const colon = name.indexOf(':')
  if (colon > 0) {
    const prefix = name.slice(0, colon).trim()
    if (!issuer || prefix === issuer) {
      issuer ||= prefix
      name = name.slice(colon + 1).trim()
    }
  }
  return { service: clip(issuer || name), accountName: clip(name || issuer) }
}

function integer(value: unknown, fallback: number): number | null {
  if (value === undefined || value === null || value === '') return fallback
  const number = typeof value === 'string' && /^\d{1,16}$/.test(value.trim()) ? Number(value) : value
  return typeof number === 'number' && Number.isSafeInteger(number) && number >= 0 ? number : null
}

/** A checked candidate, or a refusal saying what this vault cannot keep. */
function checked(raw: RawToken): ImportCandidate | RefusedCandidate {
  const { service, accountName } = labels(raw)
  const refuse = (reason: string): RefusedCandidate => ({ service, accountName, reason })
  if (!service) return refuse('no issuer or account name')
  const type = text(raw.type).toLowerCase() || 'totp'
  if (type !== 'totp' && type !== 'hotp' && type !== 'steam')
    return refuse(`the token type ${JSON.stringify(clip(text(raw.type)))} is not supported (totp, hotp and steam are)`)
  const secret = typeof raw.secret === 'string' ? normalizedBase32(raw.secret) : null
  if (secret === null) return refuse('the secret is not base32 of at least 10 bytes')
  if (type === 'steam') return { service, accountName, secret, type, algorithm: 'SHA1', digits: STEAM_DIGITS, period: STEAM_PERIOD_SECONDS, counter: 0 }
  const algorithm = (text(raw.algorithm).toUpperCase().replace('-', '') || 'SHA1') as TotpAlgorithm
  if (!TOTP_ALGORITHMS.includes(algorithm))
    return refuse(`the algorithm ${JSON.stringify(clip(text(raw.algorithm)))} is not supported (SHA1, SHA256, SHA512 are)`)
  const digits = integer(raw.digits, 6)
  if (digits === null || digits < TOTP_LIMITS.digits.min || digits > TOTP_LIMITS.digits.max) return refuse('digits must be 6 to 8')
  const period = type === 'hotp' ? 30 : integer(raw.period, 30)
  if (period === null || period < TOTP_LIMITS.period.min || period > TOTP_LIMITS.period.max) return refuse('the period must be 15 to 120 seconds')
  const counter = type === 'hotp' ? integer(raw.counter, 0) : 0
  if (counter === null || counter >= Number.MAX_SAFE_INTEGER) return refuse('the counter must be a whole number from 0')
  return { service, accountName, secret, type, algorithm, digits, period, counter }
}

/** Refuses a JSON value nested deeper than `limit` (without recursion: the stack is ours). */
function tooDeep(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 0]]
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!
    if (node === null || typeof node !== 'object') continue
    if (depth >= limit) return true
    for (const child of Object.values(node)) if (child !== null && typeof child === 'object') stack.push([child, depth + 1])
  }
  return false
}

function parseJson(content: string, what: string): unknown {
  let value: unknown
  try {
    value = JSON.parse(content)
  } catch {
    throw unreadable(`${what} is not valid JSON`)
  }
  if (tooDeep(value, MAX_IMPORT_DEPTH)) throw unreadable(`${what} is nested more than ${MAX_IMPORT_DEPTH} levels deep`)
  return value
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value)

function limited<T>(list: T[]): T[] {
  if (list.length > MAX_IMPORT_TOKENS) throw badRequest('IMPORT_TOO_LARGE', `content: more than ${MAX_IMPORT_TOKENS} tokens in one import`)
  return list
}

// ---- Google Authenticator ----

const MIGRATION_ALGORITHMS: Record<number, string> = { 0: 'SHA1', 1: 'SHA1', 2: 'SHA256', 3: 'SHA512', 4: 'MD5' }

function fromMigration(otp: MigrationOtp): RawToken {
  const type = otp.type === 1 ? 'hotp' : otp.type === 0 || otp.type === 2 ? 'totp' : `type ${otp.type}`
  return {
    issuer: otp.issuer,
    name: otp.name,
    // Short secrets are left for the check to refuse, not thrown here.
    secret: otp.secret.length > 0 ? new Secret({ buffer: Uint8Array.from(otp.secret).buffer }).base32 : '',
    type,
    algorithm: MIGRATION_ALGORITHMS[otp.algorithm] ?? `algorithm ${otp.algorithm}`,
    digits: otp.digits === 2 ? 8 : otp.digits === 0 || otp.digits === 1 ? 6 : -1,
    period: 30,
    counter: otp.counter,
  }
}

function readMigrationLink(link: string, line: number): RawToken[] {
  const data = migrationLinkData(link)
  if (data === null) throw unreadable(`line ${line}: the otpauth-migration link has no base64 data`)
  try {
    return decodeMigrationPayload(data).otps.map(fromMigration)
  } catch {
    throw unreadable(`line ${line}: the otpauth-migration data is not a whole Google Authenticator payload (truncated or damaged)`)
  }
}

// ---- otpauth:// links (also Ente Auth's plain export) ----

function readOtpauthLink(link: string): RawToken | RefusedCandidate {
  let label = { issuer: '', name: '' }
  try {
    const url = new URL(link)
    label = {
      name: decodeURIComponent(url.pathname.replace(/^\/+/, '')),
      issuer: url.searchParams.get('issuer') ?? '',
    }
    if (!/^(totp|hotp|steam)$/i.test(url.host)) {
      return { ...labels(label), reason: `the link type ${JSON.stringify(clip(url.host))} is not supported (totp, hotp and steam are)` }
    }
  } catch {
    return { service: '', accountName: '', reason: 'not a readable otpauth:// link' }
  }
  // otpauth refuses an empty label; the issuer (or a stand-in) takes its place.
  const labelled = label.name ? link : link.replace(/^(otpauth:\/\/[a-z]+)\/?\?/i, `$1/${encodeURIComponent(label.issuer || 'token')}?`)
  const parsed = parseOtpSecret(labelled)
  if (parsed === null) {
    return {
      ...labels(label),
      reason: 'the link has no usable secret, or asks for parameters not supported (SHA1/SHA256/SHA512; 6 to 8 digits; 15 to 120 seconds)',
    }
  }
  return {
    ...label,
    secret: parsed.secret,
    type: parsed.type,
    algorithm: parsed.algorithm,
    digits: parsed.digits,
    period: parsed.period,
    counter: parsed.counter,
  }
}

function readLines(content: string): ParsedImport {
  const items: (ImportCandidate | RefusedCandidate)[] = []
  let links = 0
  let migration = false
  const lines = content.split(/\r?\n/)
  for (const [index, raw] of lines.entries()) {
    const line = raw.trim()
    if (!line || line.startsWith('#')) continue
    if (line.toLowerCase().startsWith(MIGRATION_PREFIX)) {
      links++
      migration = true
      for (const token of readMigrationLink(line, index + 1)) items.push(checked(token))
    } else if (/^otpauth:\/\//i.test(line)) {
      links++
      const token = readOtpauthLink(line)
      items.push(isRefusedRaw(token) ? token : checked(token))
    } else {
      items.push({ service: '', accountName: '', reason: `line ${index + 1}: not an otpauth:// or otpauth-migration:// link` })
    }
    limited(items)
  }
  if (links === 0) throw unreadable('not a format this vault reads (Google Authenticator export links, Aegis, 2FAS, andOTP or Ente JSON, otpauth:// links)')
  return { format: migration ? 'google-migration' : 'otpauth', items }
}

const isRefusedRaw = (value: RawToken | RefusedCandidate): value is RefusedCandidate => 'reason' in value

// ---- Aegis (docs/vault.md of Aegis: scrypt-wrapped master key, AES-256-GCM) ----

/** scrypt's cost limits for a password slot: Aegis writes N=2^15, r=8, p=1 (32 MiB). */
const SCRYPT_MAX_MEMORY = 64 * 1024 * 1024
const MAX_PASSWORD_SLOTS = 4
const HEX = /^(?:[0-9a-fA-F]{2})*$/

function hex(value: unknown, bytes?: number): Buffer | null {
  if (typeof value !== 'string' || !HEX.test(value) || (bytes !== undefined && value.length !== bytes * 2)) return null
  return Buffer.from(value, 'hex')
}

function openGcm(key: Buffer, params: unknown, ciphertext: Buffer): Buffer | null {
  if (!isObject(params)) return null
  const nonce = hex(params.nonce, 12)
  const tag = hex(params.tag, 16)
  if (!nonce || !tag) return null
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, nonce)
    decipher.setAuthTag(tag)
    return Buffer.concat([decipher.update(ciphertext), decipher.final()])
  } catch {
    return null
  }
}

// The password's UTF-8 bytes, unnormalized, as Aegis derives its key.
const scryptKey = (password: string, salt: Buffer, N: number, r: number, p: number) =>
  new Promise<Buffer>((resolve, reject) =>
    scrypt(password, salt, 32, { N, r, p, maxmem: SCRYPT_MAX_MEMORY + 1024 * 1024 }, (error, key) => (error ? reject(error) : resolve(key))),
  )

async function aegisMasterKey(header: Record<string, unknown>, password: string): Promise<Buffer> {
  const slots = Array.isArray(header.slots) ? header.slots.filter((slot) => isObject(slot) && slot.type === 1) : []
  if (slots.length === 0) throw unreadable('the Aegis vault is encrypted without a password slot (only a password can open it here)')
  for (const slot of slots.slice(0, MAX_PASSWORD_SLOTS) as Record<string, unknown>[]) {
    const { n, r, p } = slot
    const salt = hex(slot.salt)
    const wrapped = hex(slot.key, 32)
    if (!salt || !wrapped || typeof n !== 'number' || typeof r !== 'number' || typeof p !== 'number') continue
    // N a power of two; the memory scrypt needs (128·N·r) and the work (·p) bounded.
    if (
      !Number.isInteger(n) ||
      n < 2 ||
      n > 2 ** 20 ||
      (n & (n - 1)) !== 0 ||
      !Number.isInteger(r) ||
      r < 1 ||
      r > 32 ||
      !Number.isInteger(p) ||
      p < 1 ||
      p > 4
    ) {
      throw unreadable('the Aegis password slot asks for scrypt parameters beyond what is accepted here (N up to 2^20, r up to 32, p up to 4)')
    }
    if (128 * n * r > SCRYPT_MAX_MEMORY) throw unreadable('the Aegis password slot asks for more scrypt memory than accepted here (64 MiB)')
    const master = openGcm(await scryptKey(password, salt, n, r, p), slot.key_params, wrapped)
    if (master && master.length === 32) return master
  }
  throw badRequest('IMPORT_WRONG_PASSWORD', 'password: does not open this encrypted Aegis vault')
}

function aegisEntries(db: unknown): RawToken[] {
  if (!isObject(db) || !Array.isArray(db.entries)) throw unreadable('the Aegis vault has no entries list')
  return limited(db.entries).map((entry): RawToken => {
    if (!isObject(entry)) return {}
    const info = isObject(entry.info) ? entry.info : {}
    return {
      issuer: entry.issuer,
      name: entry.name,
      type: entry.type,
      secret: info.secret,
      algorithm: info.algo,
      digits: info.digits,
      period: info.period,
      counter: info.counter,
    }
  })
}

async function readAegis(vault: Record<string, unknown>, password: string | undefined): Promise<ParsedImport> {
  if (typeof vault.db !== 'string') return { format: 'aegis', items: aegisEntries(vault.db).map(checked) }
  if (!isObject(vault.header)) throw unreadable('the encrypted Aegis vault has no header')
  if (password === undefined || password === '') throw badRequest('IMPORT_PASSWORD_REQUIRED', 'password: this Aegis vault is encrypted; send its password')
  const master = await aegisMasterKey(vault.header, password)
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(vault.db)) throw unreadable("the encrypted Aegis vault's db is not base64")
  const plain = openGcm(master, vault.header.params, Buffer.from(vault.db, 'base64'))
  if (plain === null) throw unreadable("the encrypted Aegis vault's contents do not decrypt with its key (damaged)")
  return { format: 'aegis-encrypted', items: aegisEntries(parseJson(plain.toString('utf8'), 'the decrypted Aegis vault')).map(checked) }
}

// ---- 2FAS ----

function readTwoFas(backup: Record<string, unknown>): ParsedImport {
  if (typeof backup.servicesEncrypted === 'string' && (!Array.isArray(backup.services) || backup.services.length === 0)) {
    throw unreadable('encrypted 2FAS backups are not supported: export from 2FAS without a password')
  }
  if (!Array.isArray(backup.services)) throw unreadable('the 2FAS backup has no services list')
  return {
    format: '2fas',
    items: limited(backup.services).map((service) => {
      if (!isObject(service)) return checked({})
      const otp = isObject(service.otp) ? service.otp : {}
      return checked({
        issuer: text(otp.issuer) || service.name,
        name: text(otp.account) || otp.label,
        secret: service.secret,
        type: otp.tokenType,
        algorithm: otp.algorithm,
        digits: otp.digits,
        period: otp.period,
        counter: otp.counter,
      })
    }),
  }
}

// ---- andOTP ----

function readAndOtp(list: unknown[]): ParsedImport {
  return {
    format: 'andotp',
    items: limited(list).map((entry) =>
      isObject(entry)
        ? checked({
            issuer: entry.issuer,
            name: entry.label,
            secret: entry.secret,
            type: entry.type,
            algorithm: entry.algorithm,
            digits: entry.digits,
            period: entry.period,
            counter: entry.counter,
          })
        : checked({}),
    ),
  }
}

/** Reads `content` in whichever supported format it is in; 400 when it is none of them or is damaged. */
export async function readImport(content: string, password?: string): Promise<ParsedImport> {
  const trimmed = content.trim()
  if (!trimmed) throw unreadable('is empty')
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    const value = parseJson(trimmed, 'the file')
    if (Array.isArray(value)) return readAndOtp(value)
    if (isObject(value)) {
      if ('db' in value && 'header' in value) return readAegis(value, password)
      if ('services' in value || 'servicesEncrypted' in value) return readTwoFas(value)
    }
    throw unreadable('JSON that is not an Aegis vault, a 2FAS backup or an andOTP / Ente list')
  }
  return readLines(trimmed)
}

// ---- Export ----

/** A stored token as an export writes it: the same fields an import produces. */
export type ExportToken = ImportCandidate

export const EXPORT_FORMATS = ['otpauth', 'aegis', 'google-migration'] as const
export type ExportFormat = (typeof EXPORT_FORMATS)[number]

export interface ExportResult {
  content: string
  count: number
  skipped: RefusedCandidate[]
}

/** The otpauth:// link of a token, as authenticator apps read it (Steam as otpauth://steam/, as Aegis writes it). */
export function otpauthLink(token: ExportToken): string {
  const label = `${encodeURIComponent(token.service)}:${encodeURIComponent(token.accountName)}`
  const params = new URLSearchParams({ secret: token.secret, issuer: token.service })
  if (token.type !== 'steam') {
    params.set('algorithm', token.algorithm)
    params.set('digits', String(token.digits))
  }
  if (token.type === 'totp') params.set('period', String(token.period))
  if (token.type === 'hotp') params.set('counter', String(token.counter))
  return `otpauth://${token.type}/${label}?${params.toString()}`
}

/** Aegis' plain (unencrypted) vault: header slots and params null, db the content object. */
export function aegisVault(tokens: ExportToken[]): string {
  const entries = tokens.map((token) => ({
    type: token.type,
    uuid: crypto.randomUUID(),
    name: token.accountName,
    issuer: token.service,
    note: '',
    favorite: false,
    icon: null,
    info: {
      secret: token.secret,
      algo: token.algorithm,
      digits: token.digits,
      period: token.period,
      ...(token.type === 'hotp' ? { counter: token.counter } : {}),
    },
  }))
  return JSON.stringify({ version: 1, header: { slots: null, params: null }, db: { version: 3, entries } }, null, 2)
}

/** Tokens per Google Authenticator QR code: small enough for a phone camera to read. */
export const MIGRATION_BATCH_SIZE = 10

/** Google Authenticator's export links, one per QR code; it has no Steam, no 7 digits and no period but 30 s. */
export function migrationLinks(tokens: ExportToken[]): ExportResult {
  const skipped: RefusedCandidate[] = []
  const otps: MigrationOtp[] = []
  for (const token of tokens) {
    const refuse = (reason: string) => skipped.push({ service: token.service, accountName: token.accountName, reason })
    if (token.type === 'steam') refuse('Google Authenticator has no Steam Guard codes')
    else if (token.digits !== 6 && token.digits !== 8) refuse('Google Authenticator shows 6 or 8 digits only')
    else if (token.type === 'totp' && token.period !== 30) refuse('Google Authenticator changes codes every 30 seconds only')
    else {
      otps.push({
        secret: Secret.fromBase32(token.secret).bytes,
        name: token.accountName,
        issuer: token.service,
        algorithm: { SHA1: 1, SHA256: 2, SHA512: 3 }[token.algorithm],
        digits: token.digits === 8 ? 2 : 1,
        type: token.type === 'hotp' ? 1 : 2,
        counter: token.type === 'hotp' ? token.counter : 0,
      })
    }
  }
  const batchSize = Math.max(1, Math.ceil(otps.length / MIGRATION_BATCH_SIZE))
  const batchId = (crypto.getRandomValues(new Uint32Array(1))[0] & 0x7fffffff) | 1
  const links: string[] = []
  for (let index = 0; index < batchSize; index++) {
    links.push(
      migrationLink({ otps: otps.slice(index * MIGRATION_BATCH_SIZE, (index + 1) * MIGRATION_BATCH_SIZE), version: 1, batchSize, batchIndex: index, batchId }),
    )
  }
  return { content: otps.length === 0 ? '' : links.join('\n') + '\n', count: otps.length, skipped }
}

export function writeExport(format: ExportFormat, tokens: ExportToken[]): ExportResult {
  if (format === 'google-migration') return migrationLinks(tokens)
  if (format === 'aegis') return { content: aegisVault(tokens), count: tokens.length, skipped: [] }
  return { content: tokens.map((token) => otpauthLink(token) + '\n').join(''), count: tokens.length, skipped: [] }
}
