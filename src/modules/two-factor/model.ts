import { t } from 'elysia'
import { component, Integer, strictObject, Timestamp } from '../../http/schemas'
import { DueStatusSchema, ExpiresAtInput } from '../entries/model'

const Label = t.String({ minLength: 1, maxLength: 200 })
const Notes = t.String({ maxLength: 2000 })
const Secret = t.String({
  description:
    'Base32 TOTP secret (case, spaces and = padding tolerated) of at least 10 bytes, or an otpauth://totp/ URI. A URI\'s `algorithm` (SHA1, SHA256, SHA512), `digits` (6 to 8) and `period` (15 to 120 seconds) are kept; other values are 400 INVALID_TOTP_SECRET. A bare secret is SHA1, 6 digits, 30 seconds.',
})

/** The code parameters of a token: from its otpauth URI, else SHA1, 6, 30. */
const TotpParameterFields = {
  algorithm: t.Union([t.Literal('SHA1'), t.Literal('SHA256'), t.Literal('SHA512')], { description: 'HMAC algorithm of the codes' }),
  digits: Integer({ minimum: 6, maximum: 8, description: 'Digits per code' }),
  period: Integer({ minimum: 15, maximum: 120, description: 'Seconds a code is valid' }),
}

export const TwoFactorSchema = component(
  'TwoFactorToken',
  t.Object({
    id: t.String(),
    userId: t.String(),
    service: t.String(),
    accountName: t.String(),
    notes: t.Union([t.String(), t.Null()]),
    ...TotpParameterFields,
    createdAt: Timestamp,
    updatedAt: Timestamp,
    // Issue 20: expiry reminders.
    expiresAt: t.Union([Timestamp, t.Null()], { description: 'When the token expires (null: never)' }),
    rotatedAt: t.Union([Timestamp, t.Null()], { description: 'When the secret last changed (null: never since it was created)' }),
    dueStatus: DueStatusSchema,
  }),
)

export const TwoFactorCodeSchema = component(
  'TwoFactorCode',
  t.Object({
    id: t.String(),
    service: t.String(),
    accountName: t.String(),
    code: t.String({ description: 'The current TOTP code (`digits` long)' }),
    remainingSeconds: Integer({ minimum: 1, maximum: 120, description: "Seconds until the code changes (1 to the token's `period`)" }),
  }),
)

export const CreateTwoFactorBody = component(
  'CreateTwoFactorBody',
  strictObject({
    service: Label,
    accountName: Label,
    secret: Secret,
    notes: t.Optional(t.Union([Notes, t.Null()])),
    expiresAt: t.Optional(ExpiresAtInput),
  }),
)

export const UpdateTwoFactorBody = component(
  'UpdateTwoFactorBody',
  strictObject({
    service: t.Optional(Label),
    accountName: t.Optional(Label),
    secret: t.Optional(Secret),
    notes: t.Optional(t.Union([Notes, t.Null()])),
    expiresAt: t.Optional(ExpiresAtInput),
  }),
)

export type CreateTwoFactorInput = typeof CreateTwoFactorBody.static
export type UpdateTwoFactorInput = typeof UpdateTwoFactorBody.static
