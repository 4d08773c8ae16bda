import { t } from 'elysia'
import { ScopeSchema } from '../../auth/scopes-schema'
import { component, strictObject, Timestamp, withProperties } from '../../http/schemas'

export const AccessKeySchema = component(
  'AccessKey',
  t.Object({
    id: t.String(),
    name: t.String(),
    keyPrefix: t.String({ description: '"svc_" and the next 8 characters of the key' }),
    scopes: t.Array(ScopeSchema),
    expiresAt: t.Union([Timestamp, t.Null()]),
    lastUsedAt: t.Union([Timestamp, t.Null()]),
    createdAt: Timestamp,
    vaultId: t.Optional(
      t.String({ description: 'The shared vault the key is bound to (it works only under /api/vaults/{vaultId}); absent: your personal vault' }),
    ),
  }),
)

export const CreatedAccessKeySchema = component(
  'CreatedAccessKey',
  withProperties(AccessKeySchema, {
    key: t.String({ description: 'The full key, shown this once' }),
  }),
)

export const CreateAccessKeyBody = component(
  'CreateAccessKeyBody',
  strictObject({
    name: t.String({ minLength: 1, maxLength: 200 }),
    // Duplicates are removed (docs/api.md), so a list may repeat scopes; 15 distinct is the most there are (audit:read is the 15th).
    scopes: t.Array(ScopeSchema, { minItems: 1, maxItems: 64 }),
    expiresAt: t.Optional(t.Union([t.String({ maxLength: 64 }), t.Null()], { description: 'ISO 8601 time in the future; omit for no expiry' })),
    vaultId: t.Optional(
      t.Union([t.String({ maxLength: 64 }), t.Null()], {
        description:
          'Binds the key to a shared vault you are a member of (404 NOT_FOUND otherwise): it then works only under /api/vaults/{vaultId}/… (its scopes apply as always, and your role there too); omit or null for your personal vault only',
      }),
    ),
  }),
)
