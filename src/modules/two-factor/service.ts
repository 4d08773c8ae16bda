// Two-factor tokens: TOTP secrets kept sealed; only reveal turns one into the current code.
import { nameKey } from '../../domain/rules'
import { byId } from '../../store/by-id'
import { badRequest, NotFound } from '../../http/errors'
import type { Draft, TwoFactorRecord, VaultDocument } from '../../store/records'
import type { Writer } from '../../store/writer'
import type { Vaults } from '../vault-access'
import { dueStatus, type DueStatus } from '../lifecycle/due'
import { DEFAULT_POLICY, moveToTrash, type LifecyclePolicy } from '../lifecycle/trash'
import { prepareVersion } from '../lifecycle/versions'
import type { CreateTwoFactorInput, UpdateTwoFactorInput } from './model'
import type { ParsedOtpSecret } from './totp'
import type { VaultCipher } from '../../crypto/keyring'
import type { ExportFormat, ExportResult, ExportToken, ImportFormat, ParsedImport } from './transfer'
import { DEFAULT_TOTP_PARAMETERS, hotpCode, normalizedBase32, steamCode, totpCode, type OtpType, type TotpParameters } from './totp-code'
import { lazy } from '../../http/lazy'
// otpauth (megabytes resident) loads with the first 2FA create or update.
const loadTotp = lazy('Two-factor secret parsing', () => import('./totp'))
const loadTransfer = lazy('Two-factor import and export', () => import('./transfer'))

/** The token's code parameters; a token stored before they were kept is SHA1, 6 digits, 30 s. */
export const totpParameters = (r: TwoFactorRecord): TotpParameters => ({
  algorithm: r.algorithm ?? DEFAULT_TOTP_PARAMETERS.algorithm,
  digits: r.digits ?? DEFAULT_TOTP_PARAMETERS.digits,
  period: r.period ?? DEFAULT_TOTP_PARAMETERS.period,
})

/** A token stored before HOTP and Steam tokens existed is TOTP. */
export const otpType = (r: TwoFactorRecord): OtpType => r.type ?? 'totp'

export const publicTwoFactor = (r: TwoFactorRecord, now: number) => ({
  id: r.id,
  userId: r.userId,
  service: r.service,
  accountName: r.accountName,
  notes: r.notes,
  ...totpParameters(r),
  type: otpType(r),
  counter: otpType(r) === 'hotp' ? (r.counter ?? 0) : null,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
  expiresAt: r.expiresAt ?? null,
  rotatedAt: r.rotatedAt ?? null,
  dueStatus: dueStatus(r, now) as DueStatus,
})

export type PublicTwoFactor = ReturnType<typeof publicTwoFactor>

export interface TwoFactorCode {
  id: string
  service: string
  accountName: string
  code: string
  remainingSeconds: number
  type: OtpType
  /** HOTP: the counter this code was made with. */
  counter?: number
}

/** The token with this id in the vault, or TWO_FACTOR_NOT_FOUND (missing and foreign alike). */
export function findToken(data: VaultDocument, id: string): TwoFactorRecord {
  const token = byId(data.twoFactor, id)
  if (!token) throw NotFound.twoFactor()
  return token
}

async function checkedSecret(input: string): Promise<ParsedOtpSecret> {
  const secret = (await loadTotp()).parseOtpSecret(input)
  if (secret === null) {
    throw badRequest(
      'INVALID_TOTP_SECRET',
      'secret: must be a base32 TOTP secret of at least 10 bytes, or an otpauth://totp/ URI holding one (algorithm SHA1, SHA256 or SHA512; digits 6 to 8; period 15 to 120 seconds)',
    )
  }
  return secret
}

/** The record fields of a token's kind: none for TOTP (as stored before other kinds existed). */
export function otpFields(secret: Pick<ParsedOtpSecret, 'type' | 'counter'>): Pick<TwoFactorRecord, 'type' | 'counter'> {
  if (secret.type === 'hotp') return { type: 'hotp', counter: secret.counter }
  return secret.type === 'steam' ? { type: 'steam' } : {}
}

export class TwoFactorService {
  constructor(
    private readonly vaults: Vaults,
    private readonly now: () => number = Date.now,
    private readonly policy: LifecyclePolicy = DEFAULT_POLICY,
  ) {}

  async list(userId: string): Promise<PublicTwoFactor[]> {
    const { data } = await this.vaults.open(userId)
    const now = this.now()
    return data.twoFactor.map((r) => publicTwoFactor(r, now))
  }

  /** The list narrowed by the filters (each optional): a service name, text. */
  async find(userId: string, filters: { name?: string; q?: string }): Promise<PublicTwoFactor[]> {
    const { data } = await this.vaults.open(userId)
    const q = filters.q?.trim().toLowerCase()
    const now = this.now()
    const records =
      filters.name === undefined && !q
        ? data.twoFactor
        : data.twoFactor.filter(
            (r) =>
              (filters.name === undefined || r.service === filters.name) &&
              (!q || r.service.toLowerCase().includes(q) || r.accountName.toLowerCase().includes(q)),
          )
    return records.map((r) => publicTwoFactor(r, now))
  }

  async get(userId: string, id: string): Promise<PublicTwoFactor> {
    const { data } = await this.vaults.open(userId)
    return publicTwoFactor(findToken(data, id), this.now())
  }

  async create(userId: string, input: CreateTwoFactorInput, actor = 'unknown'): Promise<PublicTwoFactor> {
    const secret = await checkedSecret(input.secret)
    const { doc, cipher } = await this.vaults.open(userId)
    const at = new Date(this.now()).toISOString()
    const id = crypto.randomUUID()
    const token: TwoFactorRecord = {
      id,
      userId,
      service: input.service,
      accountName: input.accountName,
      notes: input.notes ?? null,
      encryptedSecret: cipher.seal('totp', id, secret.secret),
      algorithm: secret.algorithm,
      digits: secret.digits,
      period: secret.period,
      ...otpFields(secret),
      createdAt: at,
      updatedAt: at,
      expiresAt: input.expiresAt ? new Date(input.expiresAt).toISOString() : null,
      valueVersion: 1,
      valueSetBy: actor,
    }
    await doc.update((data, write) => write.twoFactor.push(token))
    return publicTwoFactor(token, this.now())
  }

  async update(userId: string, id: string, input: UpdateTwoFactorInput, actor = 'unknown'): Promise<PublicTwoFactor> {
    const secret = input.secret === undefined ? undefined : await checkedSecret(input.secret)
    const { doc, cipher } = await this.vaults.open(userId)
    return doc.update((data, write) => {
      const token = findToken(data, id)
      const next: Draft<TwoFactorRecord> = { ...token }
      if (input.service !== undefined) next.service = input.service
      if (input.accountName !== undefined) next.accountName = input.accountName
      if (input.notes !== undefined) next.notes = input.notes
      if (input.expiresAt !== undefined) next.expiresAt = input.expiresAt === null ? null : new Date(input.expiresAt).toISOString()
      next.updatedAt = new Date(this.now()).toISOString()
      if (secret !== undefined) {
        // The secret it had becomes a version.
        const version = prepareVersion(data, write, cipher, 'totp', token, { actor, at: next.updatedAt, limit: this.policy.historyVersions })
        Object.assign(next, version.fields)
        // A new secret brings its own parameters (a bare one: SHA1, 6, 30).
        next.encryptedSecret = cipher.seal('totp', id, secret.secret)
        version.apply()
        next.algorithm = secret.algorithm
        next.digits = secret.digits
        next.period = secret.period
        delete next.type
        delete next.counter
        Object.assign(next, otpFields(secret))
      }
      return publicTwoFactor(write.twoFactor.replace(next), this.now())
    })
  }

  /** Moves the token to the trash. */
  async remove(userId: string, id: string, actor = 'unknown'): Promise<void> {
    const { doc } = await this.vaults.open(userId)
    await doc.update((data, write) => {
      const token = findToken(data, id)
      const name = `${token.service} (${token.accountName})`
      moveToTrash(write, { kind: 'twoFactor', name, actor, at: this.now(), policy: this.policy, records: { twoFactor: [token] } })
    })
  }

  /**
   * The current code; TWO_FACTOR_NOT_FOUND when the secret does not decrypt. An HOTP token's
   * code is that of its counter, which is advanced in the same synchronous step (so concurrent
   * reveals each get their own counter) and is durable before the code is answered.
   */
  reveal(userId: string, id: string): TwoFactorCode | Promise<TwoFactorCode> {
    // An HOTP reveal answers a promise inside the vault's (awaiting it flattens both).
    return this.vaults.withVault<TwoFactorCode | Promise<TwoFactorCode>>(userId, ({ doc, data, cipher }) => {
      const token = findToken(data, id)
      const secret = cipher.open('totp', token.id, token.encryptedSecret)
      // Stored secrets are already normalized base32; anything else (tampering) is not revealed.
      const normalized = secret === null ? null : normalizedBase32(secret)
      if (normalized === null) throw NotFound.twoFactor()
      const base = { id: token.id, service: token.service, accountName: token.accountName }
      const type = otpType(token)
      if (type === 'steam') return { ...base, type, ...steamCode(normalized, this.now()) }
      if (type === 'totp') return { ...base, type, ...totpCode(normalized, this.now(), totpParameters(token)) }
      return doc.update((current, write) => {
        const now = findToken(current, id)
        const counter = now.counter ?? 0
        write.twoFactor.replace({ ...now, counter: counter + 1 })
        const parameters = totpParameters(now)
        return { ...base, type, counter, code: hotpCode(normalized, counter, parameters), remainingSeconds: parameters.period }
      })
    }) as TwoFactorCode | Promise<TwoFactorCode>
  }
}

// ---- import and export ----

export interface ImportedItem {
  /** Position in the file, from 1. */
  index: number
  service: string
  accountName: string
  type: OtpType
  algorithm: TotpParameters['algorithm']
  digits: number
  period: number
  counter: number | null
  /** Once applied: the new token's id. */
  id?: string
}

export interface ImportAnswer {
  format: ImportFormat
  applied: boolean
  created: ImportedItem[]
  duplicates: (Omit<ImportedItem, 'id'> & { existingId: string | null })[]
  refused: { index: number; service: string; accountName: string; reason: string }[]
}

/** Same secret and the same service and account name (nameKey: case and surrounding spaces aside). */
const duplicateKey = (secret: string, service: string, accountName: string) => `${secret}\u0000${nameKey(service)}\u0000${nameKey(accountName)}`

/**
 * Sorts a file's tokens into created, duplicates and refused against the vault as it is; with
 * `store`, seals and appends the created ones (inside the caller's one update).
 */
function classify(
  data: VaultDocument,
  cipher: VaultCipher,
  parsed: ParsedImport,
  store: null | { userId: string; at: string; actor: string; write: Writer<VaultDocument> },
): ImportAnswer {
  const known = new Map<string, string | null>()
  for (const token of data.twoFactor) {
    const secret = cipher.open('totp', token.id, token.encryptedSecret)
    const normalized = secret === null ? null : normalizedBase32(secret)
    if (normalized !== null) known.set(duplicateKey(normalized, token.service, token.accountName), token.id)
  }
  const answer: ImportAnswer = { format: parsed.format, applied: store !== null, created: [], duplicates: [], refused: [] }
  for (const [position, item] of parsed.items.entries()) {
    const index = position + 1
    if ('reason' in item) {
      answer.refused.push({ index, ...item })
      continue
    }
    const shown = {
      index,
      service: item.service,
      accountName: item.accountName,
      type: item.type,
      algorithm: item.algorithm,
      digits: item.digits,
      period: item.period,
      counter: item.type === 'hotp' ? item.counter : null,
    }
    const key = duplicateKey(item.secret, item.service, item.accountName)
    if (known.has(key)) {
      answer.duplicates.push({ ...shown, existingId: known.get(key) ?? null })
      continue
    }
    if (store === null) {
      known.set(key, null)
      answer.created.push(shown)
      continue
    }
    const id = crypto.randomUUID()
    const record: TwoFactorRecord = {
      id,
      userId: store.userId,
      service: item.service,
      accountName: item.accountName,
      notes: null,
      encryptedSecret: cipher.seal('totp', id, item.secret),
      algorithm: item.algorithm,
      digits: item.digits,
      period: item.period,
      ...otpFields(item),
      createdAt: store.at,
      updatedAt: store.at,
      expiresAt: null,
      valueVersion: 1,
      valueSetBy: store.actor,
    }
    store.write.twoFactor.push(record)
    known.set(key, id)
    answer.created.push({ ...shown, id })
  }
  return answer
}

export class TwoFactorTransfer {
  constructor(
    private readonly vaults: Vaults,
    private readonly now: () => number = Date.now,
  ) {}

  /** Without `apply`, what an import would do, writing nothing; with it, every new token in one durable change. */
  async importTokens(userId: string, input: { content: string; password?: string; apply?: boolean }, actor = 'unknown'): Promise<ImportAnswer> {
    const { readImport } = await loadTransfer()
    const parsed = await readImport(input.content, input.password)
    const { doc, data, cipher } = await this.vaults.open(userId)
    if (!input.apply) return classify(data, cipher, parsed, null)
    const at = new Date(this.now()).toISOString()
    // Classified again inside the update: a concurrent import cannot slip a duplicate in between.
    return doc.update((current, write) => classify(current, cipher, parsed, { userId, at, actor, write }))
  }

  /** Every token in `format`; a token whose secret does not decrypt is skipped and named. */
  async exportTokens(userId: string, format: ExportFormat): Promise<ExportResult & { format: ExportFormat }> {
    const { writeExport } = await loadTransfer()
    const { data, cipher } = await this.vaults.open(userId)
    const tokens: ExportToken[] = []
    const unreadable: ExportResult['skipped'] = []
    for (const token of data.twoFactor) {
      const secret = cipher.open('totp', token.id, token.encryptedSecret)
      const normalized = secret === null ? null : normalizedBase32(secret)
      if (normalized === null) {
        unreadable.push({ service: token.service, accountName: token.accountName, reason: 'the secret does not decrypt' })
        continue
      }
      tokens.push({
        service: token.service,
        accountName: token.accountName,
        secret: normalized,
        type: otpType(token),
        ...totpParameters(token),
        counter: token.counter ?? 0,
      })
    }
    const result = writeExport(format, tokens)
    return { format, ...result, skipped: [...unreadable, ...result.skipped] }
  }
}
