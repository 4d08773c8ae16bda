// Every request gets an id (the X-Request-Id a proxy sent, when it is a plain token, else a new
// one), sent back in X-Request-Id; once answered, it is counted for /metrics and logged by its
// route template, status and duration.
import { Elysia } from 'elysia'
import type { RequestRecord } from '../log'
import type { LoginFailure, Metrics } from './metrics'

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/
const PROCESS_PREFIX = Math.floor(Math.random() * 0x1_0000_0000)
  .toString(16)
  .padStart(8, '0')
let sequence = 0

/** Failed sign-ins, told apart by the route and the status they answered. */
function loginFailure(route: string, status: number): LoginFailure | undefined {
  if (route === '/api/auth/login') return status === 401 ? 'invalid_credentials' : status === 429 ? 'throttled' : undefined
  if (route === '/api/auth/oidc/callback' && status === 400) return 'oidc_failed'
  return undefined
}

interface Observed {
  observedStart?: number
  observedId?: string
}

export function observeRequests(metrics: Metrics | undefined, logRequest: ((record: RequestRecord) => void) | undefined) {
  return new Elysia({ name: 'http.observe' })
    .onRequest((context) => {
      const observed = context as typeof context & Observed
      observed.observedStart = performance.now()
      const sent = context.request.headers.get('x-request-id')
      const id = sent !== null && REQUEST_ID.test(sent) ? sent : `${PROCESS_PREFIX}-${(++sequence).toString(36)}`
      observed.observedId = id
      context.set.headers['x-request-id'] = id
    })
    .onAfterResponse({ as: 'global' }, (context) => {
      const observed = context as typeof context & Observed
      if (observed.observedStart === undefined) return
      const seconds = (performance.now() - observed.observedStart) / 1000
      const answered = (context as { response?: unknown }).response
      const status = answered instanceof Response ? answered.status : typeof context.set.status === 'number' ? context.set.status : 200
      const template = (context as { route?: string }).route
      // Written as the API documents it: /api/entries, not the prefix's /api/entries/.
      const route = !template ? 'unmatched' : template.length > 1 && template.endsWith('/') ? template.slice(0, -1) : template
      if (metrics) {
        metrics.observeRequest(context.request.method, route, status, seconds)
        const failure = loginFailure(route, status)
        if (failure) metrics.loginFailed(failure)
      }
      logRequest?.({ method: context.request.method, route, status, durationMs: seconds * 1000, requestId: observed.observedId! })
    })
}
