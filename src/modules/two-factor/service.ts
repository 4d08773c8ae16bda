// Two-factor tokens: TOTP secrets kept sealed; only reveal turns one into the current code.
import { byId, replaceRecord } from '../../store/by-id'
import { badRequest, NotFound } from '../../http/errors'
import type { TwoFactorRecord, VaultDocument } from '../../store/records'
import type { Vaults } from '../vault-access'
import { dueStatus, type DueStatus } from '../lifecycle/due'
import { DEFAULT_POLICY, moveToTrash, type LifecyclePolicy } from '../lifecycle/trash'
import { prepareVersion } from '../lifecycle/versions'
import type { CreateTwoFactorInput, UpdateTwoFactorInput } from './model'
import type { ParsedTotpSecret } from './totp'
import { DEFAULT_TOTP_PARAMETERS, normalizedBase32, totpCode, type TotpParameters } from './totp-code'
// otpauth (about 2.5 MB resident) loads with the first 2FA create or update.
let totpModule: Promise<typeof import('./totp')> | undefined
const loadTotp = () => (totpModule ??= import('./totp'))

/** The token's code parameters; a token stored before they were kept is SHA1, 6 digits, 30 s. */
export const totpParameters = (r: TwoFactorRecord): TotpParameters => ({
  algorithm: r.algorithm ?? DEFAULT_TOTP_PARAMETERS.algorithm,
  digits: r.digits ?? DEFAULT_TOTP_PARAMETERS.digits,
  period: r.period ?? DEFAULT_TOTP_PARAMETERS.period,
})

export const publicTwoFactor = (r: TwoFactorRecord, now: number) => ({
  id: r.id,
  userId: r.userId,
  service: r.service,
  accountName: r.accountName,
  notes: r.notes,
  ...totpParameters(r),
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
}

/** The token with this id in the vault, or TWO_FACTOR_NOT_FOUND (missing and foreign alike). */
export function findToken(data: VaultDocument, id: string): TwoFactorRecord {
  const token = byId(data.twoFactor, id)
  if (!token) throw NotFound.twoFactor()
  return token
}

async function checkedSecret(input: string): Promise<ParsedTotpSecret> {
  const secret = (await loadTotp()).parseTotpSecret(input)
  if (secret === null) {
    throw badRequest(
      'INVALID_TOTP_SECRET',
      'secret: must be a base32 TOTP secret of at least 10 bytes, or an otpauth://totp/ URI holding one (algorithm SHA1, SHA256 or SHA512; digits 6 to 8; period 15 to 120 seconds)',
    )
  }
  return secret
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
            (r) => (filters.name === undefined || r.service === filters.name) && (!q || r.service.toLowerCase().includes(q) || r.accountName.toLowerCase().includes(q)),
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
      createdAt: at,
      updatedAt: at,
      expiresAt: input.expiresAt ? new Date(input.expiresAt).toISOString() : null,
      valueVersion: 1,
      valueSetBy: actor,
    }
    await doc.update((data) => data.twoFactor.push(token))
    return publicTwoFactor(token, this.now())
  }

  async update(userId: string, id: string, input: UpdateTwoFactorInput, actor = 'unknown'): Promise<PublicTwoFactor> {
    const secret = input.secret === undefined ? undefined : await checkedSecret(input.secret)
    const { doc, cipher } = await this.vaults.open(userId)
    return doc.update((data) => {
      const token = findToken(data, id)
      const next: TwoFactorRecord = { ...token }
      if (input.service !== undefined) next.service = input.service
      if (input.accountName !== undefined) next.accountName = input.accountName
      if (input.notes !== undefined) next.notes = input.notes
      if (input.expiresAt !== undefined) next.expiresAt = input.expiresAt === null ? null : new Date(input.expiresAt).toISOString()
      next.updatedAt = new Date(this.now()).toISOString()
      if (secret !== undefined) {
        // The secret it had becomes a version (issue 20).
        const version = prepareVersion(data, cipher, 'totp', token, { actor, at: next.updatedAt, limit: this.policy.historyVersions })
        Object.assign(next, version.fields)
        // A new secret brings its own parameters (a bare one: SHA1, 6, 30).
        next.encryptedSecret = cipher.seal('totp', id, secret.secret)
        version.apply()
        next.algorithm = secret.algorithm
        next.digits = secret.digits
        next.period = secret.period
      }
      return publicTwoFactor(replaceRecord(data.twoFactor, token, next), this.now())
    })
  }

  /** Moves the token to the trash (issue 20). */
  async remove(userId: string, id: string, actor = 'unknown'): Promise<void> {
    const { doc } = await this.vaults.open(userId)
    await doc.update((data) => {
      const token = findToken(data, id)
      const name = `${token.service} (${token.accountName})`
      moveToTrash(data, { kind: 'twoFactor', name, actor, at: this.now(), policy: this.policy, records: { twoFactor: [token] } })
    })
  }

  /** The current code; TWO_FACTOR_NOT_FOUND when the secret does not decrypt. */
  reveal(userId: string, id: string): TwoFactorCode | Promise<TwoFactorCode> {
    return this.vaults.withVault(userId, ({ data, cipher }) => {
      const token = findToken(data, id)
      const secret = cipher.open('totp', token.id, token.encryptedSecret)
      // Stored secrets are already normalized base32; anything else (tampering) is not revealed.
      const normalized = secret === null ? null : normalizedBase32(secret)
      if (normalized === null) throw NotFound.twoFactor()
      return { id: token.id, service: token.service, accountName: token.accountName, ...totpCode(normalized, this.now(), totpParameters(token)) }
    })
  }
}
