import { t } from 'elysia'
import { component, Integer, strictObject, Timestamp } from '../../http/schemas'
import { DueStatusSchema, ExpiresAtInput } from '../entries/model'

const OtpTypeSchema = t.Union([t.Literal('totp'), t.Literal('hotp'), t.Literal('steam')], {
  description: 'totp (RFC 6238), hotp (RFC 4226, counter-based) or steam (Steam Guard)',
})

const Label = t.String({ minLength: 1, maxLength: 200 })
const Notes = t.String({ maxLength: 2000 })
const Secret = t.String({
  description:
    "Base32 TOTP secret (case, spaces and = padding tolerated) of at least 10 bytes, or an otpauth://totp/ URI. A URI's `algorithm` (SHA1, SHA256, SHA512), `digits` (6 to 8) and `period` (15 to 120 seconds) are kept; other values are 400 INVALID_TOTP_SECRET. A bare secret is SHA1, 6 digits, 30 seconds. Also an otpauth://hotp/ URI (HOTP: its `counter`, default 0, is kept) and Steam Guard as otpauth://steam/ or a totp URI with `encoder=steam`.",
})

/** The code parameters of a token: from its otpauth URI, else SHA1, 6, 30. */
const TotpParameterFields = {
  algorithm: t.Union([t.Literal('SHA1'), t.Literal('SHA256'), t.Literal('SHA512')], { description: 'HMAC algorithm of the codes' }),
  digits: Integer({ minimum: 5, maximum: 8, description: 'Digits per code (5 characters for Steam Guard)' }),
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
    type: OtpTypeSchema,
    counter: t.Union([Integer({ minimum: 0 }), t.Null()], { description: 'HOTP: the counter of the next code (each reveal advances it); null for the others' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    // Expiry reminders.
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
    code: t.String({
      description: 'The current TOTP code (`digits` long); for HOTP the code of `counter`; for Steam Guard 5 characters of 23456789BCDFGHJKMNPQRTVWXY',
    }),
    remainingSeconds: Integer({
      minimum: 1,
      maximum: 120,
      description: "Seconds until the code changes (1 to the token's `period`); for HOTP, which does not expire, the token's period",
    }),
    type: OtpTypeSchema,
    counter: t.Optional(Integer({ minimum: 0, description: 'HOTP: the counter this code was made with (the token now holds the next)' })),
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

// ---- import and export ----

export const ImportTwoFactorBody = component(
  'ImportTwoFactorBody',
  strictObject({
    content: t.String({
      description:
        "The file or text as exported by the other app: Google Authenticator export links (otpauth-migration://offline?data=…, one per line, several batches), an Aegis vault (plain, or encrypted with `password`), a 2FAS backup (plain), an andOTP JSON list, or otpauth:// links one per line (Ente Auth's plain export).",
    }),
    password: t.Optional(t.String({ maxLength: 1024, description: 'The password of an encrypted Aegis vault' })),
    apply: t.Optional(t.Boolean({ description: 'true: store the tokens listed as created, in one durable change. Otherwise a preview that writes nothing.' })),
  }),
)

const ImportedItemFields = {
  index: Integer({ minimum: 1, description: 'Position of the token in the file, from 1' }),
  service: t.String(),
  accountName: t.String(),
  type: OtpTypeSchema,
  algorithm: TotpParameterFields.algorithm,
  digits: TotpParameterFields.digits,
  period: TotpParameterFields.period,
  counter: t.Union([Integer({ minimum: 0 }), t.Null()]),
}

export const TwoFactorImportAnswer = component(
  'TwoFactorImportAnswer',
  t.Object({
    format: t.Union([
      t.Literal('google-migration'),
      t.Literal('aegis'),
      t.Literal('aegis-encrypted'),
      t.Literal('2fas'),
      t.Literal('andotp'),
      t.Literal('otpauth'),
    ]),
    applied: t.Boolean({ description: 'Whether the created tokens were stored (apply: true)' }),
    created: t.Array(t.Object({ ...ImportedItemFields, id: t.Optional(t.String({ description: 'Once applied: the new token' })) }), {
      description: 'New tokens (stored when applied)',
    }),
    duplicates: t.Array(
      t.Object({
        ...ImportedItemFields,
        existingId: t.Union([t.String(), t.Null()], {
          description: "The token already holding it (when an earlier line of the same file holds it: that line's new token once applied, null in a preview)",
        }),
      }),
      {
        description: 'Skipped: the same secret, service and account is already there',
      },
    ),
    refused: t.Array(t.Object({ index: ImportedItemFields.index, service: t.String(), accountName: t.String(), reason: t.String() }), {
      description: 'Tokens this vault cannot keep, with why',
    }),
  }),
)

export const ExportTwoFactorBody = component(
  'ExportTwoFactorBody',
  strictObject({
    password: t.Optional(t.String({ maxLength: 1024, description: "The account's password, entered again (required when the account has one)" })),
    code: t.Optional(
      t.String({
        maxLength: 16,
        description: 'A two-factor code: needed with the password when two-factor sign-in is on and the session signed in over 10 minutes ago',
      }),
    ),
    recoveryCode: t.Optional(t.String({ maxLength: 64, description: 'A recovery code instead of the two-factor code' })),
    format: t.Union([t.Literal('otpauth'), t.Literal('aegis'), t.Literal('google-migration')], {
      description:
        'otpauth: otpauth:// links, one per line; aegis: an Aegis plain vault (JSON); google-migration: Google Authenticator export links, one per QR code',
    }),
  }),
)

export const TwoFactorExportAnswer = component(
  'TwoFactorExportAnswer',
  t.Object({
    format: t.Union([t.Literal('otpauth'), t.Literal('aegis'), t.Literal('google-migration')]),
    count: Integer({ minimum: 0, description: 'Tokens in the export' }),
    content: t.String({ description: 'The export itself (holds every secret)' }),
    skipped: t.Array(t.Object({ service: t.String(), accountName: t.String(), reason: t.String() }), { description: 'Tokens the format cannot carry' }),
  }),
)
