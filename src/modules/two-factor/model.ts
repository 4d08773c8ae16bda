import { t } from 'elysia'
import { strictObject, Timestamp } from '../../http/schemas'

const Label = t.String({ minLength: 1, maxLength: 200 })
const Notes = t.String({ maxLength: 2000 })
const Secret = t.String({
  description:
    'Base32 TOTP secret (case, spaces and = padding tolerated) of at least 10 bytes, or an otpauth://totp/ URI. A URI\'s `algorithm` (SHA1, SHA256, SHA512), `digits` (6 to 8) and `period` (15 to 120 seconds) are kept; other values are 400 INVALID_TOTP_SECRET. A bare secret is SHA1, 6 digits, 30 seconds.',
})

/** The code parameters of a token (issue 23): from its otpauth URI, else SHA1, 6, 30. */
const TotpParameterFields = {
  algorithm: t.Union([t.Literal('SHA1'), t.Literal('SHA256'), t.Literal('SHA512')], { description: 'HMAC algorithm of the codes' }),
  digits: t.Integer({ minimum: 6, maximum: 8, description: 'Digits per code' }),
  period: t.Integer({ minimum: 15, maximum: 120, description: 'Seconds a code is valid' }),
}

export const TwoFactorSchema = t.Object({
  id: t.String(),
  userId: t.String(),
  service: t.String(),
  accountName: t.String(),
  notes: t.Union([t.String(), t.Null()]),
  ...TotpParameterFields,
  createdAt: Timestamp,
  updatedAt: Timestamp,
})

export const TwoFactorCodeSchema = t.Object({
  id: t.String(),
  service: t.String(),
  accountName: t.String(),
  code: t.String({ description: 'The current TOTP code (`digits` long)' }),
  remainingSeconds: t.Integer({ minimum: 1, maximum: 120, description: 'Seconds until the code changes (1 to the token\'s `period`)' }),
})

export const CreateTwoFactorBody = strictObject({
  service: Label,
  accountName: Label,
  secret: Secret,
  notes: t.Optional(t.Union([Notes, t.Null()])),
})

export const UpdateTwoFactorBody = strictObject({
  service: t.Optional(Label),
  accountName: t.Optional(Label),
  secret: t.Optional(Secret),
  notes: t.Optional(t.Union([Notes, t.Null()])),
})

export type CreateTwoFactorInput = typeof CreateTwoFactorBody.static
export type UpdateTwoFactorInput = typeof UpdateTwoFactorBody.static
