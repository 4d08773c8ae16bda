import { t } from 'elysia'
import { ScopeSchema } from '../../../auth/scopes-schema'
import { component, strictObject, Timestamp } from '../../../http/schemas'
import { DEFAULT_CLI_SCOPES } from './service'

const StartFields = strictObject({
  deviceName: t.Optional(
    t.String({
      minLength: 1,
      maxLength: 100,
      // No control characters: the name is shown on the approval page and in key lists.
      pattern: '^[^\\u0000-\\u001f\\u007f]+$',
      description: 'The machine asking, usually its hostname; the key is named "svc on <deviceName>" (default: "unknown device")',
    }),
  ),
  scopes: t.Optional(
    t.Array(ScopeSchema, {
      minItems: 1,
      maxItems: 64,
      description: `The scopes the key will hold; default ${DEFAULT_CLI_SCOPES.join(' ')}`,
    }),
  ),
  vault: t.Optional(
    t.String({
      minLength: 1,
      maxLength: 200,
      pattern: '^[^\\u0000-\\u001f\\u007f]+$',
      description:
        'svc login --vault: a shared vault, by name or id, of the person who approves; the key is then bound to it (works only under /api/vaults/{vaultId}). Absent: the personal vault',
    }),
  ),
})

/** Both fields are optional, so the body may be left out. */
export const StartDeviceLoginBody = t.Union([StartFields, t.Null()])

export const DeviceAuthorizationSchema = component(
  'DeviceAuthorization',
  t.Object({
    deviceCode: t.String({ description: 'Secret; the CLI polls with it. Never shown to the person.' }),
    userCode: t.String({ description: 'Eight letters shown as ABCD-EFGH; the person checks it on the page' }),
    verificationUri: t.String({ description: '<SVC_BASE_URL>/cli?code=ABCD-EFGH: the page that approves or denies' }),
    expiresIn: t.Integer({ description: 'Seconds the codes stay valid (600)' }),
    interval: t.Integer({ description: 'Seconds to wait between polls' }),
  }),
)

export const PollDeviceLoginBody = strictObject({
  deviceCode: t.String({ minLength: 1, maxLength: 200 }),
})

/** The approver's choice; left out, the default scopes among those asked for. */
export const ApproveDeviceLoginBody = t.Union([
  strictObject({
    scopes: t.Optional(t.Array(ScopeSchema, { minItems: 1, maxItems: 64, description: 'The scopes the key will hold, as picked on the page' })),
  }),
  t.Null(),
])

export const UserCodeParams = t.Object({ userCode: t.String({ maxLength: 32, description: 'ABCD-EFGH (case, spaces and the hyphen do not matter)' }) })

export const DeviceRequestSchema = component(
  'DeviceLoginRequest',
  t.Object({
    userCode: t.String(),
    deviceName: t.String(),
    keyName: t.String({ description: 'The name the new access key will have' }),
    scopes: t.Array(ScopeSchema, { description: 'The scopes the device asked for' }),
    grantedByDefault: t.Array(ScopeSchema, { description: 'What an approval without a choice grants: the default scopes among those asked for' }),
    address: t.String({ description: 'The client address that started the sign-in' }),
    userAgent: t.Union([t.String(), t.Null()], { description: 'Its User-Agent header' }),
    createdAt: Timestamp,
    keyExpiresInDays: t.Integer({ description: 'The new key expires this many days after approval' }),
    expiresAt: Timestamp,
    vault: t.Optional(
      t.Object(
        {
          name: t.String(),
          id: t.Union([t.String(), t.Null()], { description: 'null: you have no shared vault of this name (approving answers 404 NOT_FOUND)' }),
          role: t.Union([t.Literal('viewer'), t.Literal('editor'), t.Literal('admin'), t.Null()], { description: 'Your role there' }),
        },
        { description: 'Present when the device asked for a key bound to a shared vault (svc login --vault)' },
      ),
    ),
  }),
)

export const DeviceDecisionSchema = component(
  'DeviceLoginDecision',
  t.Object({
    status: t.Union([t.Literal('approved'), t.Literal('denied')]),
  }),
)
