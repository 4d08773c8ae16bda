// Two-factor tokens: TOTP secrets kept sealed; only reveal turns one into the current code.
import { byId, replaceRecord } from '../../store/by-id'
import { badRequest, NotFound } from '../../http/errors'
import type { TwoFactorRecord, VaultDocument } from '../../store/records'
import type { Vaults } from '../vault-access'
import type { CreateTwoFactorInput, UpdateTwoFactorInput } from './model'
import { normalizedBase32, totpCode } from './totp-code'
// otpauth (about 2.5 MB resident) loads with the first 2FA create or update.
let totpModule: Promise<typeof import('./totp')> | undefined
const loadTotp = () => (totpModule ??= import('./totp'))

export const publicTwoFactor = (r: TwoFactorRecord) => ({
  id: r.id,
  userId: r.userId,
  service: r.service,
  accountName: r.accountName,
  notes: r.notes,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
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
function findToken(data: VaultDocument, id: string): TwoFactorRecord {
  const token = byId(data.twoFactor, id)
  if (!token) throw NotFound.twoFactor()
  return token
}

async function checkedSecret(input: string): Promise<string> {
  const secret = (await loadTotp()).normalizeTotpSecret(input)
  if (secret === null) {
    throw badRequest(
      'INVALID_TOTP_SECRET',
      'secret: must be a base32 TOTP secret of at least 10 bytes, or an otpauth://totp/ URI holding one',
    )
  }
  return secret
}

export class TwoFactorService {
  constructor(
    private readonly vaults: Vaults,
    private readonly now: () => number = Date.now,
  ) {}

  async list(userId: string): Promise<PublicTwoFactor[]> {
    const { data } = await this.vaults.open(userId)
    return data.twoFactor.map(publicTwoFactor)
  }

  async get(userId: string, id: string): Promise<PublicTwoFactor> {
    const { data } = await this.vaults.open(userId)
    return publicTwoFactor(findToken(data, id))
  }

  async create(userId: string, input: CreateTwoFactorInput): Promise<PublicTwoFactor> {
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
      encryptedSecret: cipher.seal('totp', id, secret),
      createdAt: at,
      updatedAt: at,
    }
    await doc.update((data) => data.twoFactor.push(token))
    return publicTwoFactor(token)
  }

  async update(userId: string, id: string, input: UpdateTwoFactorInput): Promise<PublicTwoFactor> {
    const secret = input.secret === undefined ? undefined : await checkedSecret(input.secret)
    const { doc, cipher } = await this.vaults.open(userId)
    return doc.update((data) => {
      const token = findToken(data, id)
      const next: TwoFactorRecord = { ...token }
      if (input.service !== undefined) next.service = input.service
      if (input.accountName !== undefined) next.accountName = input.accountName
      if (input.notes !== undefined) next.notes = input.notes
      if (secret !== undefined) next.encryptedSecret = cipher.seal('totp', id, secret)
      next.updatedAt = new Date(this.now()).toISOString()
      return publicTwoFactor(replaceRecord(data.twoFactor, token, next))
    })
  }

  async remove(userId: string, id: string): Promise<void> {
    const { doc } = await this.vaults.open(userId)
    await doc.update((data) => {
      findToken(data, id)
      data.twoFactor = data.twoFactor.filter((r) => r.id !== id)
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
      return { id: token.id, service: token.service, accountName: token.accountName, ...totpCode(normalized, this.now()) }
    })
  }
}
