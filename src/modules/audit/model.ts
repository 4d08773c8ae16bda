// The audit event and its list answer. An event names records (ids and names) and never holds a value.
import { t } from 'elysia'
import type { TLiteral } from '@sinclair/typebox'
import { component, nullable, Timestamp } from '../../http/schemas'

export { AUDIT_ACTIONS, type AuditAction, type AuditOutcome } from './actions'
import { AUDIT_ACTIONS, type AuditAction } from './actions'


export const AuditActionSchema = component(
  'AuditAction',
  t.Union(AUDIT_ACTIONS.map((action) => t.Literal(action)) as unknown as [TLiteral<AuditAction>], {
    description:
      'What happened, `<kind>.<verb>`. Reads of secrets: entry.reveal, twofa.reveal, envfile.read, export.read, ai.extract, entry.version_reveal, envfile.version_reveal, twofa.version_reveal. auth.login and auth.login_failed carry `details.method` (password, oidc, passkey, 2fa, recovery_code). scope.denied: a valid access key without the scope the operation needs (`details.required`). auth.login_failed with `details.summary: true` stands for `details.count` failed attempts that were counted rather than recorded one by one (throttled ones, and those past the log\'s budget of 20 an hour), with `details.addresses` (at most 20; `fromOtherAddresses` counts the rest), `details.firstAt` and `details.lastAt`. auth.twofa_change: `details.change` (enabled, disabled, recovery_codes). auth.twofa_locked: the second step locked for 15 minutes after 20 wrong codes within a day (`details.lockedUntil`). account.delete is recorded in the server\'s log (the account\'s own log is deleted with it).',
  }),
)

export const AuditRecordRef = component(
  'AuditRecord',
  t.Object(
    {
      kind: t.String({ description: 'category, entry, twofa, envproject, envfile, access_key, user, session, passkey, trash, device_login' }),
      id: t.String(),
      name: nullable(t.String({ description: 'The record\'s name when it has one (never a value)' })),
    },
    { description: 'A record an action touched' },
  ),
)

export const AuditActor = component(
  'AuditActor',
  t.Object(
    {
      type: t.Union([t.Literal('session'), t.Literal('access-key'), t.Literal('anonymous'), t.Literal('device-login')]),
      id: nullable(t.String({ description: 'The session id prefix (first 12 hex digits of its hash), or the access key id' })),
      name: nullable(t.String({ description: "The access key's name; for a device-login, the device's name" })),
    },
    { description: 'Who acted: a session, an access key, nobody signed in (a failed sign-in), or a device sign-in (svc login) receiving its approved key' },
  ),
)

export const AuditEventSchema = component(
  'AuditEvent',
  t.Object(
    {
      id: t.String(),
      time: Timestamp,
      action: AuditActionSchema,
      outcome: t.Union([t.Literal('ok'), t.Literal('denied'), t.Literal('failed')]),
      actor: AuditActor,
      clientAddress: t.String({ description: 'The client address (SVC_TRUST_PROXY decides whether forwarding headers count)' }),
      userAgent: nullable(t.String()),
      records: t.Array(AuditRecordRef),
      details: t.Record(t.String(), t.Unknown(), {
        description: 'Per action: method (sign-in), filters and count (export), names (extract), required (scope.denied), ... Never a value.',
      }),
    },
    { description: 'One audit event' },
  ),
)

export const AuditPage = component(
  'AuditPage',
  t.Object({
    items: t.Array(AuditEventSchema, { description: 'Newest first' }),
    nextCursor: nullable(t.String({ description: 'Pass as `cursor` for the next (older) page; null at the end' })),
    head: t.Optional(
      t.String({
        description:
          'The `hash` of the log\'s last durable line (the chain\'s start value while it has none): keep it elsewhere and check it later with `audit-verify --expect-last HASH`',
      }),
    ),
    headLines: t.Optional(t.Integer({ minimum: 0, description: 'How many lines lead to `head` (from the start or the last compaction checkpoint)' })),
    chainBroken: t.Optional(
      nullable(
        t.Object(
          { problem: t.String(), line: t.Integer(), message: t.String() },
          { description: 'What the server found when it opened the log in this run, when the file no longer reached its anchor (a chain.broken event was recorded); null: nothing' },
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

export const AuditExportAnswer = t.String({ description: 'The log file as stored: one JSON event per line, oldest first, each with `prev` and `hash` (the chain)' })

