// The audit event and its list answer. An event names records (ids and names) and never holds a value.
import { t } from 'elysia'
import { component, nullable } from '../../http/schemas'
import { AuditEventSchema } from '../../audit/schema'

export { AUDIT_ACTIONS, type AuditAction } from './actions'
import { AuditActionSchema } from '../../audit/schema'
export { AuditActionSchema, type AuditOutcome, AuditActor, AuditEventSchema, AuditRecordRef } from '../../audit/schema'

export const AuditPage = component(
  'AuditPage',
  t.Object({
    items: t.Array(AuditEventSchema, { description: 'Newest first' }),
    nextCursor: nullable(t.String({ description: 'Pass as `cursor` for the next (older) page; null at the end' })),
    head: t.Optional(
      t.String({
        description:
          "The `hash` of the log's last durable line (the chain's start value while it has none): keep it elsewhere and check it later with `audit-verify --expect-last HASH`",
      }),
    ),
    headLines: t.Optional(t.Integer({ minimum: 0, description: 'How many lines lead to `head` (from the start or the last compaction checkpoint)' })),
    chainBroken: t.Optional(
      nullable(
        t.Object(
          { problem: t.String(), line: t.Integer(), message: t.String() },
          {
            description:
              'What the server found when it opened the log in this run, when the file no longer reached its anchor (a chain.broken event was recorded); null: nothing',
          },
        ),
      ),
    ),
  }),
)

export const AuditQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 500, description: 'Events per page (default 50)' })),
  cursor: t.Optional(t.String({ maxLength: 100 })),
  action: t.Optional(AuditActionSchema),
  actor: t.Optional(t.String({ maxLength: 100, description: 'An access key id, a session id prefix, or `session` / `access-key` / `anonymous`' })),
  since: t.Optional(t.String({ format: 'date-time', description: 'Only events at or after this time' })),
  until: t.Optional(t.String({ format: 'date-time', description: 'Only events before this time' })),
})

export const AuditExportQuery = t.Object({
  since: t.Optional(t.String({ format: 'date-time', description: 'Only events at or after this time' })),
})

export const AuditExportAnswer = t.String({
  description: 'The log file as stored: one JSON event per line, oldest first, each with `prev` and `hash` (the chain)',
})
