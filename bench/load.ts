// One load run against one server: autocannon with N connections, each connection cycling
// through the given requests. Latencies are taken from autocannon's per-response timings (its
// own histogram rounds to whole milliseconds, too coarse for sub-millisecond answers).
import autocannon from 'autocannon'

/** Replaced in a request body by a fresh id per request (entries must be unique by category, name, environment). */
export const UNIQUE_ID = '[<id>]'

export interface LoadRequest {
  method: 'GET' | 'POST'
  path: string
  body?: string
}

export interface LoadRun {
  url: string
  connections: number
  requests: LoadRequest[]
  headers: Record<string, string>
  /** Seconds to run; ignored when `amount` is set. */
  duration: number
  /** A fixed number of requests instead of a duration (smoke mode). */
  amount?: number
}

export interface LoadResult {
  /** Successful (2xx) answers per second. */
  rps: number
  p50: number
  p99: number
  /** Every 2xx answer's time in ms, sorted (for combining runs; left out of the JSON report). */
  latencies?: Float64Array
  ok: number
  /** Answers that were not 2xx, by status. */
  failures: Record<string, number>
  errors: number
  seconds: number
}

export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[index]
}

export function runLoad(run: LoadRun): Promise<LoadResult> {
  let latencies = new Float64Array(65_536)
  let ok = 0
  const failures: Record<string, number> = {}
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const tracker = autocannon(
      {
        url: run.url,
        connections: run.connections,
        ...(run.amount ? { amount: Math.max(run.amount, run.connections) } : { duration: run.duration }),
        timeout: 30,
        // A run ends at the next sample tick: short ticks keep short runs short.
        sampleInt: 100,
        headers: { 'content-type': 'application/json', ...run.headers },
        requests: run.requests.map((request) => ({ method: request.method, path: request.path, body: request.body })),
        // Only for bodies that ask for it: it makes autocannon rebuild every request.
        idReplacement: run.requests.some((request) => request.body?.includes(UNIQUE_ID)),
      },
      (error, result) => {
        if (error) return reject(error)
        const seconds = run.amount ? (performance.now() - started) / 1000 : result.duration
        const sorted = latencies.subarray(0, ok).sort()
        resolve({
          rps: ok / seconds,
          p50: percentile(sorted, 50),
          p99: percentile(sorted, 99),
          latencies: sorted,
          ok,
          failures,
          errors: result.errors,
          seconds,
        })
      },
    )
    tracker.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode >= 200 && statusCode < 300) {
        if (ok === latencies.length) {
          const bigger = new Float64Array(latencies.length * 2)
          bigger.set(latencies)
          latencies = bigger
        }
        latencies[ok++] = responseTime
      } else {
        failures[statusCode] = (failures[statusCode] ?? 0) + 1
      }
    })
  })
}

/** Several runs against the same server as one: answers over total time, percentiles of all answers. */
export function combineRuns(runs: LoadResult[]): LoadResult {
  if (runs.length === 1) return runs[0]
  const ok = runs.reduce((sum, run) => sum + run.ok, 0)
  const seconds = runs.reduce((sum, run) => sum + run.seconds, 0)
  const failures: Record<string, number> = {}
  for (const run of runs) for (const [status, count] of Object.entries(run.failures)) failures[status] = (failures[status] ?? 0) + count
  const errors = runs.reduce((sum, run) => sum + run.errors, 0)
  // wrk gives percentiles, not every answer's time: then p50 is the slices' median, p99 their highest.
  if (runs.some((run) => !run.latencies)) {
    const p50s = runs.map((run) => run.p50).sort((a, b) => a - b)
    return { rps: ok / seconds, p50: p50s[Math.floor(p50s.length / 2)], p99: Math.max(...runs.map((run) => run.p99)), ok, failures, errors, seconds }
  }
  const all = new Float64Array(ok)
  let offset = 0
  for (const run of runs) {
    all.set(run.latencies!.subarray(0, run.ok), offset)
    offset += run.ok
  }
  all.sort()
  return { rps: ok / seconds, p50: percentile(all, 50), p99: percentile(all, 99), latencies: all, ok, failures, errors, seconds }
}
