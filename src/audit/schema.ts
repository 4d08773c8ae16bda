// The audit event's schemas: the source of its TypeScript types (events.ts and actions.ts derive
// theirs with Static<>, type-only, so the recorder and the web page load no TypeBox for them). The
// API module documents them (src/modules/audit/model.ts).
import { t } from 'elysia'
import type { Static, TLiteral } from '@sinclair/typebox'
import { component, nullable, Timestamp } from '../http/schemas'
import { AUDIT_ACTIONS, type AuditAction } from './actions'

export const AuditActionSchema = component(
  'AuditAction',
  t.Union(AUDIT_ACTIONS.map((action) => t.Literal(action)) as unknown as [TLiteral<AuditAction>], {
    description:
      "What happened, `<kind>.<verb>`. Reads of secrets: entry.reveal, twofa.reveal, envfile.read, export.read, ai.extract, entry.version_reveal, envfile.version_reveal, twofa.version_reveal. auth.login and auth.login_failed carry `details.method` (password, oidc, passkey, 2fa, recovery_code). scope.denied: a valid access key without the scope the operation needs (`details.required`). auth.login_failed with `details.summary: true` stands for `details.count` failed attempts that were counted rather than recorded one by one (throttled ones, and those past the log's budget of 20 an hour), with `details.addresses` (at most 20; `fromOtherAddresses` counts the rest), `details.firstAt` and `details.lastAt`. auth.twofa_change: `details.change` (enabled, disabled, recovery_codes). auth.twofa_locked: the second step locked for 15 minutes after 20 wrong codes within a day (`details.lockedUntil`). account.delete is recorded in the server's log (the account's own log is deleted with it).",
  }),
)

export const AuditRecordRef = component(
  'AuditRecord',
  t.Object(
    {
      kind: t.String({ description: 'category, entry, twofa, envproject, envfile, access_key, user, session, passkey, trash, device_login, vault, invite' }),
      id: t.String(),
      name: nullable(t.String({ description: "The record's name when it has one (never a value)" })),
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
      userId: t.Optional(t.String({ description: "In a shared vault's log: the member's user id" })),
      email: t.Optional(t.String({ description: "In a shared vault's log: the member's e-mail address" })),
    },
    { description: 'Who acted: a session, an access key, nobody signed in (a failed sign-in), or a device sign-in (svc login) receiving its approved key' },
  ),
)

export const AuditOutcomeSchema = t.Union([t.Literal('ok'), t.Literal('denied'), t.Literal('failed')])

export const AuditEventSchema = component(
  'AuditEvent',
  t.Object(
    {
      id: t.String(),
      time: Timestamp,
      action: AuditActionSchema,
      outcome: AuditOutcomeSchema,
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

export type AuditOutcome = Static<typeof AuditOutcomeSchema>
export type AuditRecordRef = Static<typeof AuditRecordRef>
export type AuditActor = Static<typeof AuditActor>
export type AuditEvent = Static<typeof AuditEventSchema>
