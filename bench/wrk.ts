// wrk (Debian's package, installed when missing) as a load generator on one thread, so that it
// takes no more than one of the machine's two cores: the --scale ratios and the audit log's A/B.
import { rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface WrkResult {
  rps: number
  p50: number
  p99: number
  non2xx: number
  errors: number
  /** Requests answered in all, and wrk's own CPU time (ms) making them. */
  requests: number
  cpuMs: number
}

export function ensureWrk(): void {
  if (Bun.which('wrk')) return
  console.error('[bench] wrk is missing: apt-get install -y wrk')
  const install = Bun.spawnSync(['apt-get', 'install', '-y', 'wrk'], { stdout: 'inherit', stderr: 'inherit' })
  if (install.exitCode !== 0 || !Bun.which('wrk')) throw new Error('wrk is needed for the benchmark (apt-get install -y wrk failed)')
}

const luaString = (text: string) => JSON.stringify(text)

/** Replaced in a body by an id of its own per request (entries are unique by category, name and environment). */
export const WRK_UNIQUE_ID = '[<id>]'

/** wrk on one thread, `connections` connections, cycling through `paths`; latencies in ms. */
export function wrk(
  url: string,
  options: { connections: number; seconds: number; method: string; paths: string[]; headers: Record<string, string>; body?: string },
): WrkResult {
  const script = join(tmpdir(), `svc-vault-wrk-${process.pid}.lua`)
  const headers = Object.entries({ 'content-type': 'application/json', ...options.headers })
    .map(([name, value]) => `[${luaString(name)}] = ${luaString(value)}`)
    .join(', ')
  writeFileSync(
    script,
    `local paths = { ${options.paths.map(luaString).join(', ')} }
local headers = { ${headers} }
local body = ${options.body === undefined ? 'nil' : luaString(options.body)}
local parts = ${options.body?.includes(WRK_UNIQUE_ID) ? `{ ${options.body.split(WRK_UNIQUE_ID).map(luaString).join(', ')} }` : 'nil'}
local run = ${luaString(crypto.randomUUID().slice(0, 8))}
local n = 0
request = function()
  n = n + 1
  local b = body
  if parts then b = table.concat(parts, run .. "-" .. n) end
  return wrk.format(${luaString(options.method)}, paths[(n % #paths) + 1], headers, b)
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %f %f %d %d\\n", summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), e.status, e.connect + e.read + e.write + e.timeout))
end
`,
  )
  const run = Bun.spawnSync(['wrk', '-t1', `-c${options.connections}`, `-d${options.seconds}s`, '--timeout', '30s', '-s', script, url], {
    stdout: 'pipe',
    stderr: 'pipe',
  })
  rmSync(script, { force: true })
  const line = /RESULT (\d+) (\d+) ([\d.]+) ([\d.]+) (\d+) (\d+)/.exec(run.stdout.toString())
  if (!line) throw new Error(`wrk gave no result: ${run.stdout.toString()} ${run.stderr.toString()}`)
  const [requests, durationUs, p50Us, p99Us, non2xx, errors] = line.slice(1).map(Number)
  const cpuMs = Number(run.resourceUsage?.cpuTime.total ?? 0n) / 1000
  return { rps: (requests - non2xx) / (durationUs / 1e6), p50: p50Us / 1000, p99: p99Us / 1000, non2xx, errors, requests, cpuMs }
}
