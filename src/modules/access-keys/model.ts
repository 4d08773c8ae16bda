import { t } from 'elysia'
import { SCOPES } from '../../auth/scopes'
import { strictObject, Timestamp, withProperties } from '../../http/schemas'

export const AccessKeySchema = t.Object({
  id: t.String(),
  name: t.String(),
  keyPrefix: t.String({ description: '"svc_" and the next 8 characters of the key' }),
  scopes: t.Array(t.String()),
  expiresAt: t.Union([Timestamp, t.Null()]),
  lastUsedAt: t.Union([Timestamp, t.Null()]),
  createdAt: Timestamp,
})

export const CreatedAccessKeySchema = withProperties(AccessKeySchema, {
  key: t.String({ description: 'The full key, shown this once' }),
})

export const CreateAccessKeyBody = strictObject({
  name: t.String({ minLength: 1, maxLength: 200 }),
  // Duplicates are removed (docs/api.md), so a list may repeat scopes; 14 distinct is the most there are.
  scopes: t.Array(t.String({ maxLength: 64, description: SCOPES.join(', ') }), { minItems: 1, maxItems: 64 }),
  expiresAt: t.Optional(t.Union([t.String({ maxLength: 64 }), t.Null()], { description: 'ISO 8601 time in the future; omit for no expiry' })),
})
