// /api/audit: the caller's audit log, newest first, and its raw lines for a log shipper.
// Reading the log is not itself recorded (a shipper polling it would fill the log with its reads).
import { Elysia } from 'elysia'
import { authGuard } from '../../auth/guard'
import { routePrefix } from '../../auth/vault-mount'
import type { AppDeps } from '../../deps'
import { byMediaType, errorResponses } from '../../http/schemas'
import { AuditExportAnswer, AuditExportQuery, AuditPage, AuditQuery } from './model'

// Built once: the schema object is shared by every app of the process.
const ExportLines = byMediaType({ 'application/x-ndjson': AuditExportAnswer }, 'The log as stored, one event per line')

export function auditRoutes(deps: AppDeps) {
  const { audit } = deps
  return new Elysia({ prefix: routePrefix(deps, '/api/audit'), tags: ['Audit log'] })
    .use(authGuard(deps))
    .get(
      '/',
      async ({ auth, query, set }) => {
        set.headers['cache-control'] = 'no-store'
        // In a shared vault, a member who is not an admin lists only their own events.
        const page = await audit.list(auth.userId, auth.vaultId && auth.vaultRole !== 'admin' ? { ...query, memberUserId: auth.memberId } : query)
        const { head, lines } = await audit.headOf(auth.userId)
        return { ...page, head, headLines: lines, chainBroken: audit.brokenOf(auth.userId) }
      },
      {
        auth: 'audit:read',
        query: AuditQuery,
        response: { 200: AuditPage, ...errorResponses(400) },
        detail: {
          operationId: 'listAuditEvents',
          summary: 'Your audit log, newest first',
          description:
            "One event per action (AuditEvent; `action` is one of AuditAction): sign-ins and sign-outs, every read of a secret (entry.reveal, twofa.reveal, envfile.read, export.read, ai.extract, and the version reveals), every write, access keys created and revoked, and scope.denied for a valid key that lacked the scope. Events name records by id and name, never a value. `limit` (1 to 500, default 50), `cursor` (the previous page's nextCursor), and filters: `action`, `actor` (an access key id, a session id prefix, or `session`/`access-key`/`anonymous`), `since` (inclusive) and `until` (exclusive). Session, or an access key with audit:read.",
        },
      },
    )
    .get(
      '/export',
      ({ auth, query }) =>
        new Response(audit.exportLines(auth.userId, query.since), {
          headers: {
            'content-type': 'application/x-ndjson; charset=utf-8',
            'cache-control': 'no-store',
            'content-disposition': 'attachment; filename="audit.log"',
          },
        }),
      {
        auth: 'audit:read',
        query: AuditExportQuery,
        response: { 200: ExportLines, ...errorResponses(400) },
        detail: {
          operationId: 'exportAuditLog',
          summary: 'Your audit log as stored (JSON Lines), for a log shipper',
          description:
            "The log file's lines, oldest first, `application/x-ndjson`: each an AuditEvent with `prev` (the `hash` of the line before; the first line's is the chain's start value or the checkpoint of the last compaction), `chain` (\"hmac-sha256\" on keyed lines) and `hash` (HMAC-SHA-256 under the audit key of the line without `hash`; plain SHA-256 on older unkeyed lines), see docs/audit.md. `since` keeps the lines at or after that time. Events older than SVC_AUDIT_RETENTION (default 365d) are dropped when the file is compacted.",
        },
      },
    )
}
