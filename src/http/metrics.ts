// Counters and histograms for GET /metrics, in the Prometheus text format (version 0.0.4).
// Labels hold only bounded, non-personal values: methods, route templates, statuses, reasons;
// never a user id, a name, a path asked for or a token.

import type { DatabaseMetrics } from '../store/data-store'

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const FSYNC_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
// A query on a healthy database takes well under a millisecond; QUERY_TIMEOUT_MS (0.7 s) bounds it.
const QUERY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

export class Histogram {
  readonly counts: number[]
  sum = 0
  count = 0

  constructor(readonly buckets: readonly number[]) {
    this.counts = buckets.map(() => 0)
  }

  observe(seconds: number): void {
    this.sum += seconds
    this.count++
    for (let i = 0; i < this.buckets.length; i++) if (seconds <= this.buckets[i]) this.counts[i]++
  }
}

export type LoginFailure = 'invalid_credentials' | 'throttled' | 'oidc_failed'

const escapeLabel = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
const labels = (pairs: Record<string, string | number>) =>
  `{${Object.entries(pairs)
    .map(([key, value]) => `${key}="${escapeLabel(String(value))}"`)
    .join(',')}}`
const number = (value: number) => (Number.isFinite(value) ? String(value) : value > 0 ? '+Inf' : '-Inf')

export class Metrics {
  private readonly requests = new Map<string, { method: string; route: string; status: number; count: number }>()
  private readonly latency = new Map<string, { method: string; route: string; histogram: Histogram }>()
  readonly fsync = new Histogram(FSYNC_BUCKETS)
  /** Each query (or transaction) of the PostgreSQL store, answered or failed. */
  readonly dbQuery = new Histogram(QUERY_BUCKETS)
  private readonly loginFailures = new Map<LoginFailure, number>()
  writeFailures = 0

  /** One answered request, by its route template (`unmatched` when no route matched). */
  observeRequest(rawMethod: string, route: string, status: number, seconds: number): void {
    const method = METHODS.has(rawMethod) ? rawMethod : 'OTHER'
    const key = `${method} ${route} ${status}`
    const counted = this.requests.get(key)
    if (counted) counted.count++
    else this.requests.set(key, { method, route, status, count: 1 })
    const timedKey = `${method} ${route}`
    let timed = this.latency.get(timedKey)
    if (!timed) this.latency.set(timedKey, (timed = { method, route, histogram: new Histogram(LATENCY_BUCKETS) }))
    timed.histogram.observe(seconds)
  }

  loginFailed(reason: LoginFailure): void {
    this.loginFailures.set(reason, (this.loginFailures.get(reason) ?? 0) + 1)
  }

  render(gauges: {
    openVaults: number
    /** Shared vaults in the accounts document. */
    sharedVaults?: number
    version: string
    auditFailures: number
    auditChainBroken?: number
    /** The data folder's free space and SVC_DISK_FLOOR. */
    disk?: { freeBytes: number | null; floorBytes: number; low: boolean }
    /** Failed sign-ins counted instead of written one by one, by why; and summaries not yet written. */
    unauthenticated?: { counted: Record<'throttled' | 'budget' | 'disk_low', number>; pending: number }
    /** The PostgreSQL store's figures (absent on the file store). */
    database?: DatabaseMetrics
  }): string {
    const out: string[] = []
    const family = (name: string, type: string, help: string) => out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`)
    const histogram = (name: string, pairs: Record<string, string | number>, h: Histogram) => {
      h.buckets.forEach((bound, i) => out.push(`${name}_bucket${labels({ ...pairs, le: number(bound) })} ${h.counts[i]}`))
      out.push(`${name}_bucket${labels({ ...pairs, le: '+Inf' })} ${h.count}`)
      const suffix = Object.keys(pairs).length ? labels(pairs) : ''
      out.push(`${name}_sum${suffix} ${h.sum}`, `${name}_count${suffix} ${h.count}`)
    }

    family('svc_vault_build_info', 'gauge', 'The running release.')
    out.push(`svc_vault_build_info${labels({ version: gauges.version })} 1`)
    family('svc_vault_http_requests_total', 'counter', 'Answered requests by method, route template and status.')
    for (const r of this.requests.values())
      out.push(`svc_vault_http_requests_total${labels({ method: r.method, route: r.route, status: r.status })} ${r.count}`)
    family('svc_vault_http_request_duration_seconds', 'histogram', 'Time from receiving a request to its answer, by method and route template.')
    for (const t of this.latency.values()) histogram('svc_vault_http_request_duration_seconds', { method: t.method, route: t.route }, t.histogram)
    family('svc_vault_open_vaults', 'gauge', 'User vaults loaded in memory.')
    out.push(`svc_vault_open_vaults ${gauges.openVaults}`)
    family('svc_vault_shared_vaults', 'gauge', 'Shared vaults (vaults with members).')
    out.push(`svc_vault_shared_vaults ${gauges.sharedVaults ?? 0}`)
    family('svc_vault_fsync_duration_seconds', 'histogram', 'Time each file sync of an acknowledged write took.')
    histogram('svc_vault_fsync_duration_seconds', {}, this.fsync)
    family('svc_vault_write_failures_total', 'counter', 'Writes the data folder refused (the request answered 500 and changed nothing).')
    out.push(`svc_vault_write_failures_total ${this.writeFailures}`)
    family('svc_vault_audit_failures_total', 'counter', 'Audit events that could not be recorded.')
    out.push(`svc_vault_audit_failures_total ${gauges.auditFailures}`)
    family('svc_vault_audit_chain_broken_total', 'counter', 'Audit logs found at open not to reach their anchor (a chain.broken event each).')
    out.push(`svc_vault_audit_chain_broken_total ${gauges.auditChainBroken ?? 0}`)
    family('svc_vault_login_failures_total', 'counter', 'Failed sign-ins by reason.')
    for (const reason of ['invalid_credentials', 'throttled', 'oidc_failed'] as const) {
      out.push(`svc_vault_login_failures_total${labels({ reason })} ${this.loginFailures.get(reason) ?? 0}`)
    }
    if (gauges.disk) {
      family('svc_vault_disk_free_bytes', 'gauge', "Free space of the data folder's filesystem (-1: unknown).")
      out.push(`svc_vault_disk_free_bytes ${gauges.disk.freeBytes ?? -1}`)
      family('svc_vault_disk_floor_bytes', 'gauge', 'SVC_DISK_FLOOR: free space that events of unauthenticated clients may not eat into.')
      out.push(`svc_vault_disk_floor_bytes ${gauges.disk.floorBytes}`)
      family('svc_vault_disk_low', 'gauge', '1 while free space is under SVC_DISK_FLOOR: failed sign-ins are then only counted, not written.')
      out.push(`svc_vault_disk_low ${gauges.disk.low ? 1 : 0}`)
    }
    if (gauges.unauthenticated) {
      family(
        'svc_vault_audit_unauthenticated_counted_total',
        'counter',
        'Failed sign-ins counted into a summary event instead of written one by one, by why (throttled, budget, disk_low).',
      )
      for (const reason of ['throttled', 'budget', 'disk_low'] as const) {
        out.push(`svc_vault_audit_unauthenticated_counted_total${labels({ reason })} ${gauges.unauthenticated.counted[reason]}`)
      }
      family('svc_vault_audit_unauthenticated_pending', 'gauge', 'Summary events of failed sign-ins counted but not yet written.')
      out.push(`svc_vault_audit_unauthenticated_pending ${gauges.unauthenticated.pending}`)
    }
    const db = gauges.database
    if (db) {
      family('svc_vault_db_up', 'gauge', '1 while the last query reached the database; 0 while it is away (requests answer 503 STORE_UNAVAILABLE).')
      out.push(`svc_vault_db_up ${db.up ? 1 : 0}`)
      family('svc_vault_db_pool_connections', 'gauge', 'Connections the pool may open (its size).')
      out.push(`svc_vault_db_pool_connections ${db.poolSize}`)
      family('svc_vault_db_pool_in_use', 'gauge', 'Queries and transactions under way; above the pool size, the rest wait for a connection.')
      out.push(`svc_vault_db_pool_in_use ${db.inFlight}`)
      family(
        'svc_vault_db_query_duration_seconds',
        'histogram',
        'Time each query or transaction took, answered or failed (within a request bounded at 0.7 s in all).',
      )
      histogram('svc_vault_db_query_duration_seconds', {}, this.dbQuery)
      family('svc_vault_db_queries_total', 'counter', 'Queries and transactions run.')
      out.push(`svc_vault_db_queries_total ${db.queries}`)
      family('svc_vault_db_query_failures_total', 'counter', 'Queries that failed because the database was away or slower than the bound (each a 503).')
      out.push(`svc_vault_db_query_failures_total ${db.failures}`)
      family('svc_vault_db_conflicts_total', 'counter', 'Writes that found their version taken by another instance, reloaded and made again.')
      out.push(`svc_vault_db_conflicts_total ${db.conflicts}`)
      family('svc_vault_db_reconnects_total', 'counter', 'Times the database answered again after a failure.')
      out.push(`svc_vault_db_reconnects_total ${db.reconnects}`)
      family('svc_vault_db_notifications_total', 'counter', "Notifications of other instances' writes received.")
      out.push(`svc_vault_db_notifications_total ${db.notifications}`)
    }
    const memory = process.memoryUsage()
    family('svc_vault_process_resident_memory_bytes', 'gauge', 'Resident memory of the server process.')
    out.push(`svc_vault_process_resident_memory_bytes ${memory.rss}`)
    return out.join('\n') + '\n'
  }
}
