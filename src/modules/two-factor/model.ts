import { t } from 'elysia'
import { component, Integer, strictObject, Timestamp } from '../../http/schemas'

const Label = t.String({ minLength: 1, maxLength: 200 })
const Notes = t.String({ maxLength: 2000 })
const Secret = t.String({
  description: 'Base32 TOTP secret (case, spaces and = padding tolerated) of at least 10 bytes, or an otpauth://totp/ URI',
})

export const TwoFactorSchema = component(
  'TwoFactorToken',
  t.Object({
    id: t.String(),
    userId: t.String(),
    service: t.String(),
    accountName: t.String(),
    notes: t.Union([t.String(), t.Null()]),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
)

export const TwoFactorCodeSchema = component(
  'TwoFactorCode',
  t.Object({
    id: t.String(),
    service: t.String(),
    accountName: t.String(),
    code: t.String({ description: 'The current 6-digit TOTP code' }),
    remainingSeconds: Integer({ minimum: 1, maximum: 30, description: 'Seconds until the code changes' }),
  }),
)

export const CreateTwoFactorBody = component(
  'CreateTwoFactorBody',
  strictObject({
    service: Label,
    accountName: Label,
    secret: Secret,
    notes: t.Optional(t.Union([Notes, t.Null()])),
  }),
)

export const UpdateTwoFactorBody = component(
  'UpdateTwoFactorBody',
  strictObject({
    service: t.Optional(Label),
    accountName: t.Optional(Label),
    secret: t.Optional(Secret),
    notes: t.Optional(t.Union([Notes, t.Null()])),
  }),
)

export type CreateTwoFactorInput = typeof CreateTwoFactorBody.static
export type UpdateTwoFactorInput = typeof UpdateTwoFactorBody.static
