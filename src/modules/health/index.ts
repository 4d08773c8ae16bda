// /healthz (alive), /readyz (ready to serve), /metrics (Prometheus, behind SVC_METRICS_TOKEN).
// None of them needs an account, and none answers anything about a user.
import { Elysia, NotFoundError } from 'elysia'
import { constantTimeEqual, sha256Hex } from '../../crypto/tokens'
import type { AppDeps } from '../../deps'
import { errorResponses, publicErrorResponses } from '../../http/schemas'
import { VERSION } from '../../version'
import { HealthSchema, MetricsText, NotReadySchema, ReadySchema } from './model'
import { HealthService } from './service'

const NO_STORE = 'no-store'

export function healthRoutes(deps: AppDeps) {
  const health = new HealthService(deps)
  const token = deps.config.metricsToken
  const tokenHash = token === undefined ? undefined : sha256Hex(token)
  const errors = errorResponses(401, 404)
  return new Elysia({ name: 'healthRoutes', tags: ['Operations'] })
    .get(
      '/healthz',
      ({ set }) => {
        set.headers['cache-control'] = NO_STORE
        return { status: 'ok' as const }
      },
      {
        response: { 200: HealthSchema, ...publicErrorResponses() },
        detail: { operationId: 'getHealth', summary: 'Whether the server is alive', security: [] },
      },
    )
    .get(
      '/readyz',
      async ({ set }) => {
        set.headers['cache-control'] = NO_STORE
        const answer = await health.readiness()
        if (answer.status !== 'ready') set.status = 503
        return answer
      },
      {
        response: { 200: ReadySchema, ...publicErrorResponses(), 503: NotReadySchema },
        detail: {
          operationId: 'getReadiness',
          summary: 'Whether the server is ready: the data folder takes writes and the master key matches the data; with the version',
          description:
            "`checks.disk` is `low` while the data folder's free space is under SVC_DISK_FLOOR: the server still answers (200, ready), but failed sign-ins and other events of clients without an account are then only counted, not written.",
          security: [],
        },
      },
    )
    .get(
      '/metrics',
      ({ headers, set }) => {
        if (!tokenHash) throw new NotFoundError()
        const match = /^Bearer (\S+)$/.exec(headers.authorization ?? '')
        if (!match || !constantTimeEqual(sha256Hex(match[1]), tokenHash)) {
          set.status = 401
          set.headers['www-authenticate'] = 'Bearer'
          return { error: 'A valid metrics token is required (Authorization: Bearer <SVC_METRICS_TOKEN>)', code: 'AUTH_REQUIRED' }
        }
        const gauges = {
          openVaults: deps.store.openVaultCount,
          sharedVaults: deps.sharedVaults.count,
          version: VERSION,
          auditFailures: deps.audit.failures,
          auditChainBroken: deps.audit.chainBroken,
          disk: deps.audit.disk(),
          unauthenticated: { counted: deps.audit.unauthenticated.counted, pending: deps.audit.unauthenticated.pending },
          database: deps.store.databaseMetrics?.(),
        }
        return new Response(deps.metrics.render(gauges), {
          headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': NO_STORE },
        })
      },
      {
        response: { 200: MetricsText, ...publicErrorResponses(), 401: errors[401], 404: errors[404] },
        detail: {
          operationId: 'getMetrics',
          summary: 'Prometheus metrics; only when SVC_METRICS_TOKEN is set (404 otherwise), with that token as a bearer token',
          security: [{ metricsToken: [] }],
        },
      },
    )
}
