// Request and answer schemas of /api/account.
import { t } from 'elysia'
import { component, strictObject, Timestamp } from '../../http/schemas'

const Password = t.String({ maxLength: 1024, description: "The account's current password" })
const Code = t.String({ maxLength: 32, description: 'A 6-digit code of the authenticator app' })
const RecoveryCode = t.String({ maxLength: 64, description: 'One of the recovery codes' })

export const PasswordBody = strictObject(
  { password: t.Optional(Password) },
  'The password; an account without one (single sign-on only) sends `{}` within 10 minutes of a single sign-on sign-in',
)

export const TwoFactorSetupAnswer = component(
  'TwoFactorSetup',
  t.Object({
    secret: t.String({ description: 'The new TOTP secret, base32' }),
    uri: t.String({ description: 'otpauth://totp/ URI of the secret, for authenticator apps' }),
    qr: t.String({ description: 'The URI as a QR code: an SVG document' }),
  }),
)

export const EnableBody = strictObject({ code: Code })

export const RecoveryCodesAnswer = component(
  'RecoveryCodes',
  t.Object({
    recoveryCodes: t.Array(t.String(), { description: 'Ten one-time recovery codes, shown only now (stored hashed)' }),
  }),
)

export const SecondFactorWithPasswordBody = strictObject(
  { password: t.Optional(Password), code: t.Optional(Code), recoveryCode: t.Optional(RecoveryCode) },
  'The password and exactly one of code and recoveryCode',
)

export const SessionItem = component(
  'Session',
  t.Object({
    id: t.String({ description: 'Public id of the session (not its token)' }),
    createdAt: Timestamp,
    lastSeenAt: Timestamp,
    clientAddress: t.String({ description: 'The client address it signed in from' }),
    device: t.String({ description: 'Browser and system, read from the User-Agent' }),
    current: t.Boolean({ description: 'Whether this is the session making the request' }),
  }),
)

export const SessionList = t.Array(SessionItem)

export const RevokeOthersAnswer = t.Object({ ended: t.Integer({ description: 'How many sessions were ended' }) })

/** What to remove in the same step as signing out everywhere else or changing the password. */
export const RemoveAdditions = strictObject(
  {
    passkeys: t.Optional(t.Array(t.String({ maxLength: 100 }), { maxItems: 100, description: 'Ids of passkeys to delete' })),
    accessKeys: t.Optional(t.Array(t.String({ maxLength: 100 }), { maxItems: 1000, description: 'Ids of access keys to revoke' })),
    oidcLink: t.Optional(t.Boolean({ description: 'true: unlink single sign-on' })),
  },
  'What to remove at once, usually chosen from GET /api/account/recent-additions; every id is checked before anything is removed (404 PASSKEY_NOT_FOUND, ACCESS_KEY_NOT_FOUND)',
)

export const RevokeOthersBody = strictObject({ remove: t.Optional(RemoveAdditions) })

export const ChangePasswordBody = strictObject({
  currentPassword: t.Optional(t.String({ maxLength: 1024, description: 'Required when the account has a password' })),
  newPassword: t.String({ minLength: 8, maxLength: 1024, error: 'must be 8 to 1024 characters' }),
  remove: t.Optional(RemoveAdditions),
})

export const RecentAdditionsAnswer = component(
  'RecentAdditions',
  t.Object(
    {
      since: Timestamp,
      passkeys: t.Array(t.Object({ id: t.String(), name: t.String(), createdAt: Timestamp })),
      accessKeys: t.Array(
        t.Object({ id: t.String(), name: t.String(), keyPrefix: t.String(), createdAt: Timestamp, lastUsedAt: t.Union([Timestamp, t.Null()]) }),
      ),
      oidcLinks: t.Array(
        t.Object({ name: t.Union([t.String(), t.Null()], { description: "The provider's display name (SVC_OIDC_NAME)" }), linkedAt: Timestamp }),
      ),
    },
    { description: 'What was added to the account in the last 30 days and outlives a session: a stolen session may have added it' },
  ),
)

export const PasskeyItem = component(
  'Passkey',
  t.Object({
    id: t.String(),
    name: t.String(),
    createdAt: Timestamp,
    lastUsedAt: t.Union([Timestamp, t.Null()]),
  }),
)

export const PasskeyList = t.Array(PasskeyItem)

export const PasskeyRegistrationOptions = component(
  'PasskeyRegistrationOptions',
  t.Object(
    {},
    {
      additionalProperties: true,
      description: 'PublicKeyCredentialCreationOptionsJSON, for navigator.credentials.create (startRegistration of @simplewebauthn/browser)',
    },
  ),
)

export const PasskeyRegisterBody = strictObject({
  name: t.Optional(t.String({ maxLength: 100, description: 'A name to tell it apart (default "Passkey")' })),
  response: t.Object({}, { additionalProperties: true, description: 'RegistrationResponseJSON from the browser (startRegistration)' }),
})
