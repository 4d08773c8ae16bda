// `bun run bench`: seeds data through the service's own code, starts the real server as
// `bun run start` does (the dist/ bundle of `bun run build`) and a bare baseline server (bench/baseline-server.ts) as separate
// processes, loads both over loopback with autocannon, and prints one table of throughput,
// latency and the service/baseline ratio, plus memory and start-up figures. Writes the table as
// JSON under bench/results/.
//
//   bun run bench                  full run (about 5 minutes)
//   bun run bench --smoke          tiny seed, tiny runs, about 5 s (CI); also BENCH_SMOKE=1
//   bun run bench --duration=10    seconds of load per server per measured point (default 6)
//   bun run bench --rounds=3       slices each point's load into this many service/baseline
//                                  alternations (default 3), so a drift of the machine's speed
//                                  hits both sides alike
//   bun run bench --out=path.json  where the JSON goes (default bench/results/latest.json)
//   bun run bench --only=stats,2fa.reveal   just these scenarios (ids as in the JSON), for quick A/B runs
//   bun run bench --only=audit     just the audit log's A/B: reveal and export with the log on
//                                  (as shipped) and off (SVC_AUDIT=off, a switch for this only)
//   bun run bench --scale          the scale curves (users, vault size) and wrk ratios: bench/scale.ts
//   bun run bench --store postgres the PostgreSQL store beside the file store: bench/postgres.ts
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { FULL_SIZES, SMOKE_SIZES, type SeededVault } from './fixture'
import { combineRuns, runLoad, UNIQUE_ID, type LoadRequest, type LoadResult } from './load'
import { seedMainVault, seedManyUsers, type SeededUsers } from './seed'
import { freePort, liveProcesses, spawnBench, type BenchProcess } from './processes'
import { ensureWrk, wrk } from './wrk'

const ROOT = resolve(import.meta.dir, '..')

// ---------------------------------------------------------------------------------------------
// Options

interface Options {
  smoke: boolean
  duration: number
  rounds: number
  warmup: number
  /** Requests per run instead of a duration (smoke). */
  amount: number | undefined
  connections: number[]
  out: string
  startupRepeats: number
  /** Scenario ids to run; null for all (and the write-latency comparison). */
  only: string[] | null
}

function parseOptions(argv: string[]): Options {
  const flag = (name: string) => argv.find((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`))
  const value = (name: string) => flag(name)?.split('=').slice(1).join('=')
  const smoke = flag('smoke') !== undefined || process.env.BENCH_SMOKE === '1'
  const duration = Number(value('duration') ?? process.env.BENCH_DURATION ?? 6)
  const rounds = smoke ? 1 : Number(value('rounds') ?? 3)
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds must be a whole number, at least 1')
  if (!Number.isFinite(duration) || duration <= 0) throw new Error('--duration must be a positive number of seconds')
  return {
    smoke,
    duration,
    rounds,
    warmup: smoke ? 0 : Math.min(2, Math.max(0.5, duration / 5)),
    amount: smoke ? 40 : undefined,
    connections: smoke ? [1, 4] : [1, 32, 128],
    out: resolve(value('out') ?? (smoke ? join(tmpdir(), `svc-vault-bench-smoke-${process.pid}.json`) : join(ROOT, 'bench', 'results', 'latest.json'))),
    // Smoke: the start-ups of the servers it needs anyway are the figure.
    startupRepeats: smoke ? 0 : 5,
    only: value('only')?.split(',').filter(Boolean) ?? null,
  }
}

// ---------------------------------------------------------------------------------------------
// Processes

async function waitForAnswer(server: BenchProcess, path: string, key: string, since: number, timeoutMs = 20_000): Promise<number> {
  while (true) {
    try {
      const response = await fetch(server.url + path, { headers: { authorization: `Bearer ${key}` } })
      await response.arrayBuffer()
      if (response.status === 200) return performance.now() - since
    } catch {
      // Not listening yet.
    }
    if (server.proc.exitCode !== null) throw new Error(`${server.name} exited with ${server.proc.exitCode}: ${server.output()}`)
    if (performance.now() - since > timeoutMs) throw new Error(`${server.name} gave no 200 on ${path} within ${timeoutMs} ms: ${server.output()}`)
    await Bun.sleep(1)
  }
}

function serviceEnv(dataDir: string, masterKey: string): Record<string, string> {
  return { SVC_DATA_DIR: dataDir, SVC_MASTER_KEY: masterKey, NODE_ENV: 'production' }
}

async function startService(
  dataDir: string,
  masterKey: string,
  probe: { path: string; key: string },
  extraEnv: Record<string, string> = {},
): Promise<BenchProcess & { startupMs: number }> {
  const port = freePort()
  const since = performance.now()
  const server = spawnBench('service', ['dist/index.js'], { ...serviceEnv(dataDir, masterKey), ...extraEnv }, port)
  const startupMs = await waitForAnswer(server, probe.path, probe.key, since)
  return Object.assign(server, { startupMs })
}

async function startBaseline(fixturePath: string, dataDir: string, key: string): Promise<BenchProcess> {
  const port = freePort()
  const since = performance.now()
  const server = spawnBench('baseline', ['bench/baseline-server.ts'], { BENCH_FIXTURE: fixturePath, BENCH_DATA_DIR: dataDir, NODE_ENV: 'production' }, port)
  await waitForAnswer(server, '/api/stats', key, since)
  return server
}

/**
 * Resident and peak memory of a process, in MB, from /proc; `anonMb` is the part that is the
 * process's own (heap, stacks). The rest is mostly pages of the bun executable, and how many of
 * those count depends on the machine's page cache: the kernel maps already-cached neighbours of
 * each page touched, so after something read the whole executable (a `bun build --compile`
 * copies it), the same server idles about 2.5 MB higher.
 */
function memory(server: BenchProcess): { rssMb: number; peakMb: number; anonMb: number } {
  if (server.proc.exitCode !== null || server.proc.signalCode) {
    throw new Error(`${server.name} (pid ${server.pid}) exited (${server.proc.exitCode ?? server.proc.signalCode}): ${server.output()}`)
  }
  const status = readFileSync(`/proc/${server.pid}/status`, 'utf8')
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN)
  return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024, anonMb: kb('RssAnon') / 1024 }
}

// ---------------------------------------------------------------------------------------------
// Scenarios

// 'audit': the same read with the audit log on (service) and off (baseline column).
// 'vault': a shared vault's read (service) beside the personal vault's (baseline column), one server.
type Kind = 'read' | 'write' | 'mix' | 'audit' | 'vault'

interface Scenario {
  id: string
  label: string
  kind: Kind
  requests: (seed: SeededVault) => LoadRequest[]
  /** The module that must exist (seeded) for this scenario. */
  needs: 'entries' | 'twoFactor' | null
}

const writeBody = (categoryId: string) =>
  JSON.stringify({ categoryId, name: `bench-write-${UNIQUE_ID}`, value: `sk_bench_${'x'.repeat(40)}`, environment: 'production' })

const SCENARIOS: Scenario[] = [
  { id: 'entries.list', label: 'GET /api/entries', kind: 'read', needs: 'entries', requests: () => [{ method: 'GET', path: '/api/entries' }] },
  {
    id: 'entries.reveal',
    label: 'POST /api/entries/{id}/reveal',
    kind: 'read',
    needs: 'entries',
    requests: (seed) => seed.entryIds.slice(0, 64).map((id) => ({ method: 'POST', path: `/api/entries/${id}/reveal` })),
  },
  {
    // Beside entries.reveal: the same entries, made alike, in a shared vault, with a key bound to it.
    id: 'vault.entries.reveal',
    label: 'POST /api/vaults/{id}/entries/{id}/reveal',
    kind: 'vault',
    needs: 'entries',
    requests: (seed) => (seed.vault?.entryIds ?? []).slice(0, 64).map((id) => ({ method: 'POST', path: `/api/vaults/${seed.vault!.id}/entries/${id}/reveal` })),
  },
  {
    id: '2fa.reveal',
    label: 'POST /api/2fa/{id}/reveal',
    kind: 'read',
    needs: 'twoFactor',
    requests: (seed) => seed.twoFactorIds.map((id) => ({ method: 'POST', path: `/api/2fa/${id}/reveal` })),
  },
  { id: 'stats', label: 'GET /api/stats', kind: 'read', needs: null, requests: () => [{ method: 'GET', path: '/api/stats' }] },
  // One project's environment, as a program asks for it: a whole seeded vault writes each variable
  // several times, which is 409 AMBIGUOUS_EXPORT (project-000 has one production entry).
  {
    id: 'export',
    label: 'GET /api/export',
    kind: 'read',
    needs: 'entries',
    requests: () => [{ method: 'GET', path: '/api/export?environment=production&name=project-000' }],
  },
  {
    id: 'entries.create',
    label: 'POST /api/entries (durable)',
    kind: 'write',
    needs: 'entries',
    requests: (seed) => [{ method: 'POST', path: '/api/entries', body: writeBody(seed.writeCategoryId) }],
  },
  {
    id: 'mix',
    label: 'mix 90% list / 10% create',
    kind: 'mix',
    needs: 'entries',
    requests: (seed) => [
      ...Array.from({ length: 9 }, (): LoadRequest => ({ method: 'GET', path: '/api/entries' })),
      { method: 'POST', path: '/api/entries', body: writeBody(seed.writeCategoryId) },
    ],
  },
]

/** The audit log's A/B: the service's own reveal and export, log on against log off. */
const AUDIT_SCENARIOS: Scenario[] = SCENARIOS.filter((s) => s.id === 'entries.reveal' || s.id === 'export').map((s) => ({
  ...s,
  id: `audit.${s.id}`,
  label: `${s.label} audit on/off`,
  kind: 'audit' as const,
}))

interface Row {
  scenario: string
  label: string
  connections: number
  service: LoadResult | null
  baseline: LoadResult | null
  /** service req/s divided by baseline req/s */
  ratio: number | null
  target: string | null
  met: boolean | null
  note?: string
}

/** null when the scenario can run; otherwise why not (an endpoint still being built, a failure). */
async function probe(server: BenchProcess, key: string, request: LoadRequest): Promise<string | null> {
  const response = await fetch(server.url + request.path, {
    method: request.method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: request.body,
  })
  const text = await response.text()
  if (response.status >= 200 && response.status < 300) return null
  if (response.status === 404 && text.includes('"NOT_FOUND"')) return 'endpoint not built yet'
  return `answered ${response.status}: ${text.slice(0, 200)}`
}

function targetFor(scenario: Scenario, connections: number, smoke: boolean): { text: string; check: (row: Row) => boolean } | null {
  // A smoke run is too short to judge anything.
  if (smoke || connections !== 32) return null
  if (scenario.kind === 'read') return { text: 'ratio>=0.8, p99<10ms', check: (row) => row.ratio! >= 0.8 && row.service!.p99 < 10 }
  if (scenario.kind === 'write') return { text: 'ratio>=0.5', check: (row) => row.ratio! >= 0.5 }
  if (scenario.kind === 'vault') return { text: 'shared/personal>=0.8', check: (row) => row.ratio! >= 0.8 }
  if (scenario.kind === 'audit' && scenario.id.includes('reveal')) return { text: 'audit on/off>=0.8', check: (row) => row.ratio! >= 0.8 }
  return null
}

// ---------------------------------------------------------------------------------------------
// Output

const fmt = (n: number | null | undefined, digits = 1) => (n === null || n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(digits))
const pad = (text: string, width: number, right = false) => (right ? text.padStart(width) : text.padEnd(width))

function table(rows: Row[]): string {
  const header = ['scenario', 'conns', 'req/s', 'p50 ms', 'p99 ms', 'base req/s', 'base p99', 'ratio', 'target']
  const lines = rows.map((row) => [
    row.label,
    String(row.connections),
    fmt(row.service?.rps, 0),
    fmt(row.service?.p50, 2),
    fmt(row.service?.p99, 2),
    fmt(row.baseline?.rps, 0),
    fmt(row.baseline?.p99, 2),
    fmt(row.ratio, 2),
    row.note ?? (row.target ? `${row.met ? 'ok' : 'MISS'} (${row.target})` : ''),
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((line) => line[i].length)))
  const render = (cells: string[]) =>
    cells
      .map((cell, i) => pad(cell, widths[i], i >= 1 && i <= 7))
      .join('  ')
      .trimEnd()
  return [render(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(render)].join('\n')
}

interface Figure {
  measure: string
  value: number | null
  unit: string
  target: string | null
  met: boolean | null
}

function figuresTable(figures: Figure[]): string {
  const lines = figures.map((f) => [f.measure, `${fmt(f.value, f.unit === 'x' ? 2 : 1)} ${f.unit}`, f.target ? `${f.met ? 'ok' : 'MISS'} (${f.target})` : ''])
  const widths = [0, 1, 2].map((i) => Math.max(...lines.map((line) => line[i].length), ['measure', 'value', 'target'][i].length))
  const render = (cells: string[]) =>
    cells
      .map((cell, i) => pad(cell, widths[i], i === 1))
      .join('  ')
      .trimEnd()
  return [render(['measure', 'value', 'target']), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(render)].join('\n')
}

/** How long a started server is left alone before its idle memory is read. */
const IDLE_SETTLE_MS = 2000
const median = (values: number[]) => (values.length === 0 ? null : [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)])

// ---------------------------------------------------------------------------------------------
// The run

async function main() {
  const options = parseOptions(process.argv.slice(2))
  const scenarios = options.only ? SCENARIOS.filter((s) => options.only!.includes(s.id)) : SCENARIOS
  const auditAB = AUDIT_SCENARIOS.filter((s) => !options.only || options.only.includes('audit') || options.only.includes(s.id))
  if (options.only && scenarios.length === 0 && auditAB.length === 0) throw new Error(`--only: no scenario among ${SCENARIOS.map((s) => s.id).join(', ')}`)
  const sizes = options.smoke ? SMOKE_SIZES : FULL_SIZES
  const work = mkdtempSync(join(tmpdir(), 'svc-vault-bench-'))
  const masterKey = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')
  const notes: string[] = []
  const started = performance.now()
  const log = (line: string) => console.error(`[bench ${((performance.now() - started) / 1000).toFixed(1)}s] ${line}`)

  try {
    // The server as `bun run start` runs it.
    const build = Bun.spawnSync(['bun', 'run', 'build'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
    if (build.exitCode !== 0) throw new Error(`bun run build failed: ${build.stderr.toString()}`)
    // Seed: the main vault, the many-users set, and one user with the same vault size as each of those.
    log(`seeding ${sizes.entries} entries, ${sizes.categories} categories, ${sizes.twoFactor} 2FA tokens, ${sizes.envProjects} env projects...`)
    const main = await seedMainVault(join(work, 'seed-main'), masterKey, sizes)
    notes.push(...main.notes)
    log(`main vault seeded in ${main.seedSeconds.toFixed(1)} s`)
    log(`seeding ${sizes.users} users with ${sizes.entriesPerUser} entries each...`)
    const many = await seedManyUsers(join(work, 'seed-many'), masterKey, sizes.users, sizes.entriesPerUser)
    const single = await seedManyUsers(join(work, 'seed-single'), masterKey, 1, sizes.entriesPerUser)
    log(`many-users set seeded in ${many.seedSeconds.toFixed(1)} s`)
    const fixturePath = join(work, 'baseline-fixture.json')
    writeFileSync(fixturePath, JSON.stringify(main.baseline))

    let copies = 0
    const copyOf = (dir: string) => {
      const copy = join(work, `run-${++copies}`)
      cpSync(dir, copy, { recursive: true })
      return copy
    }
    const readProbe = main.available.entries ? '/api/entries' : '/api/categories'
    const figures: Figure[] = []
    const figure = (measure: string, value: number | null, unit: string, target?: { text: string; max: number }) =>
      figures.push({
        measure,
        value,
        unit,
        target: options.smoke ? null : (target?.text ?? null),
        met: !options.smoke && target && value !== null ? value <= target.max : null,
      })

    // Start-up to the first authenticated answer, on the seeded data, and the memory each start
    // then settles at (medians of a few starts). Idle memory varies by about 2 MB from one start
    // to the next with the timing of the JavaScript engine's compiler threads, so one start
    // alone says little.
    const startup: number[] = []
    const idleRss: number[] = []
    const idleAnon: number[] = []
    const noteIdleMemory = async (server: BenchProcess, settleMs: number) => {
      await Bun.sleep(settleMs)
      const settled = memory(server)
      idleRss.push(settled.rssMb)
      idleAnon.push(settled.anonMb)
    }
    const startupDir = copyOf(main.dataDir)
    for (let i = 0; i < options.startupRepeats; i++) {
      const server = await startService(startupDir, masterKey, { path: readProbe, key: main.key })
      startup.push(server.startupMs)
      await noteIdleMemory(server, IDLE_SETTLE_MS)
      await server.stop()
    }
    const startupMany: number[] = []
    const startupManyDir = copyOf(many.dataDir)
    for (let i = 0; i < Math.ceil(options.startupRepeats / 2); i++) {
      const server = await startService(startupManyDir, masterKey, { path: '/api/categories', key: many.key })
      startupMany.push(server.startupMs)
      await server.stop()
    }

    // The long-lived service for the read scenarios (its idle memory only in smoke runs, which start no other).
    const service = await startService(copyOf(main.dataDir), masterKey, { path: readProbe, key: main.key })
    if (startup.length === 0) startup.push(service.startupMs)
    log(`start-up to first answer: ${startup.map((ms) => ms.toFixed(0)).join(', ')} ms`)
    if (idleRss.length === 0) await noteIdleMemory(service, options.smoke ? 200 : IDLE_SETTLE_MS)
    log(`idle RSS after start: ${idleRss.map((mb) => mb.toFixed(1)).join(', ')} MB`)
    const baseline = await startBaseline(fixturePath, join(work, 'baseline-reads'), main.key)
    const headers = { authorization: `Bearer ${main.key}` }

    const rows: Row[] = []
    const measure = (server: BenchProcess, requests: LoadRequest[], connections: number, seconds = options.duration) =>
      runLoad({ url: server.url, connections, requests, headers, duration: seconds, amount: options.amount })
    /** One slice of load with wrk (one thread) instead of autocannon. */
    const measureWrk = async (server: BenchProcess, requests: LoadRequest[], connections: number, seconds: number): Promise<LoadResult> => {
      ensureWrk()
      const result = wrk(server.url, { connections, seconds, method: requests[0].method, paths: requests.map((request) => request.path), headers })
      return {
        rps: result.rps,
        p50: result.p50,
        p99: result.p99,
        ok: Math.round(result.rps * seconds),
        failures: result.non2xx > 0 ? { 'non-2xx': result.non2xx } : {},
        errors: result.errors,
        seconds,
      }
    }
    /** The service and the baseline in turns, `rounds` slices each; the slices combined per side. */
    const alternate = async (
      service: BenchProcess,
      baseline: BenchProcess,
      requests: LoadRequest[],
      connections: number,
      load: (server: BenchProcess, requests: LoadRequest[], connections: number, seconds: number) => Promise<LoadResult> = measure,
      slice = options.duration / options.rounds,
    ) => {
      const serviceRuns: LoadResult[] = []
      const baselineRuns: LoadResult[] = []
      for (let round = 0; round < options.rounds; round++) {
        serviceRuns.push(await load(service, requests, connections, slice))
        baselineRuns.push(await load(baseline, requests, connections, slice))
      }
      return [combineRuns(serviceRuns), combineRuns(baselineRuns)] as const
    }
    const warm = async (server: BenchProcess, requests: LoadRequest[]) => {
      if (options.warmup > 0) await measure(server, requests, 8, options.warmup)
    }

    const record = (scenario: Scenario, connections: number, serviceResult: LoadResult | null, baselineResult: LoadResult | null, note?: string) => {
      const ratio = serviceResult && baselineResult && baselineResult.rps > 0 ? serviceResult.rps / baselineResult.rps : null
      const row: Row = {
        scenario: scenario.id,
        label: scenario.label,
        connections,
        service: serviceResult,
        baseline: baselineResult,
        ratio,
        target: null,
        met: null,
        note,
      }
      const target = targetFor(scenario, connections, options.smoke)
      if (target && ratio !== null) {
        row.target = target.text
        row.met = target.check(row)
      }
      for (const [who, result] of [
        ['service', serviceResult],
        ['baseline', baselineResult],
      ] as const) {
        const failed = result ? Object.entries(result.failures) : []
        if (result && (failed.length > 0 || result.errors > 0)) {
          notes.push(
            `${scenario.label} at ${connections} connections: ${who} had ${result.errors} connection errors, non-2xx ${JSON.stringify(result.failures)}`,
          )
        }
      }
      rows.push(row)
      log(`${scenario.label} x${connections}: ${fmt(serviceResult?.rps, 0)} req/s vs baseline ${fmt(baselineResult?.rps, 0)}${note ? ` (${note})` : ''}`)
    }

    const skipReason = async (scenario: Scenario, server: BenchProcess, requests: LoadRequest[]) => {
      if (scenario.needs && !main.available[scenario.needs]) return 'not seeded: endpoint not built yet'
      if (requests.length === 0) return 'nothing to request'
      return probe(server, main.key, requests[0])
    }

    for (const scenario of scenarios.filter((s) => s.kind === 'read')) {
      const requests = scenario.requests(main)
      const skip = await skipReason(scenario, service, requests)
      if (skip) {
        for (const connections of options.connections) record(scenario, connections, null, null, skip)
        continue
      }
      await warm(service, requests)
      await warm(baseline, requests)
      for (const connections of options.connections) {
        const [serviceResult, baselineResult] = await alternate(service, baseline, requests, connections)
        record(scenario, connections, serviceResult, baselineResult)
      }
    }
    // A shared vault's reads beside the personal vault's on the same server, in turns (issue 33):
    // the service column is the shared vault (its bound key), the baseline column the personal one.
    for (const scenario of scenarios.filter((s) => s.kind === 'vault')) {
      const requests = scenario.requests(main)
      const personal = SCENARIOS.find((s) => s.id === scenario.id.slice('vault.'.length))!.requests(main)
      const vaultHeaders = { authorization: `Bearer ${main.vault?.key}` }
      const skip = !main.vault ? 'not seeded: shared vaults not built yet' : await probe(service, main.vault.key, requests[0])
      if (skip) {
        for (const connections of options.connections) record(scenario, connections, null, null, skip)
        continue
      }
      const slice = options.duration / options.rounds
      const run = (list: LoadRequest[], connections: number, seconds: number, own: Record<string, string>) =>
        runLoad({ url: service.url, connections, requests: list, headers: own, duration: seconds, amount: options.amount })
      if (options.warmup > 0) {
        await run(requests, 8, options.warmup, vaultHeaders)
        await run(personal, 8, options.warmup, headers)
      }
      for (const connections of options.connections) {
        const shared: LoadResult[] = []
        const own: LoadResult[] = []
        for (let round = 0; round < options.rounds; round++) {
          shared.push(await run(requests, connections, slice, vaultHeaders))
          own.push(await run(personal, connections, slice, headers))
        }
        record(scenario, connections, combineRuns(shared), combineRuns(own), "baseline column: the personal vault's reveal, same server")
      }
    }
    const afterReads = memory(service)
    await service.stop()
    await baseline.stop()

    // The audit log's cost: reveal and export with the log on, as shipped, against the
    // same service with it off (SVC_AUDIT=off, which exists for this comparison only).
    if (auditAB.length > 0) {
      const on = await startService(copyOf(main.dataDir), masterKey, { path: readProbe, key: main.key })
      const off = await startService(copyOf(main.dataDir), masterKey, { path: readProbe, key: main.key }, { SVC_AUDIT: 'off' })
      for (const scenario of auditAB) {
        const requests = scenario.requests(main)
        const skip = await skipReason(scenario, on, requests)
        if (skip) {
          for (const connections of options.connections) record(scenario, connections, null, null, skip)
          continue
        }
        await warm(on, requests)
        await warm(off, requests)
        for (const connections of options.connections) {
          // wrk (one thread) rather than autocannon, which takes a whole core of the two;
          // the smoke run keeps autocannon's fixed request count.
          const [onResult, offResult] = options.smoke
            ? await alternate(on, off, requests, connections)
            : await alternate(on, off, requests, connections, measureWrk, Math.max(1, Math.round(options.duration / options.rounds)))
          record(scenario, connections, onResult, offResult, `baseline column: the audit log off${options.smoke ? '' : '; wrk'}`)
        }
      }
      await on.stop()
      await off.stop()
    }

    // Writes and the mix change the data: each run starts on a fresh copy of the seed, so every
    // connection count sees the same 1,000-entry vault (in smoke mode, one copy per scenario).
    // Memory after each kind of run, with the vault's size then: the write runs grow it by every
    // write they manage (tens of thousands of entries), so their memory tracks their speed.
    const afterRuns: Partial<Record<Kind, { rssMb: number; entries: number | null }>> = {}
    const noteMemory = async (kind: Kind, server: BenchProcess) => {
      const now = { rssMb: memory(server).rssMb, entries: await totalEntries(server, main.key) }
      if (now.rssMb > (afterRuns[kind]?.rssMb ?? 0)) afterRuns[kind] = now
    }
    const baselineWrites: Record<number, LoadResult> = {}
    for (const scenario of scenarios.filter((s) => s.kind === 'write' || s.kind === 'mix')) {
      const requests = scenario.requests(main)
      let pair: { service: BenchProcess; baseline: BenchProcess } | null = null
      const fresh = async () => {
        if (pair) {
          await noteMemory(scenario.kind, pair.service)
          await pair.service.stop()
          await pair.baseline.stop()
        }
        pair = {
          service: await startService(copyOf(main.dataDir), masterKey, { path: readProbe, key: main.key }),
          baseline: await startBaseline(fixturePath, join(work, `baseline-${++copies}`), main.key),
        }
        return pair
      }
      let current = await fresh()
      const skip = await skipReason(scenario, current.service, requests)
      if (skip) {
        for (const connections of options.connections) record(scenario, connections, null, null, skip)
      } else {
        for (const [index, connections] of options.connections.entries()) {
          if (index > 0 && !options.smoke) current = await fresh()
          await warm(current.service, requests)
          await warm(current.baseline, requests)
          const [serviceResult, baselineResult] = await alternate(current.service, current.baseline, requests, connections)
          if (scenario.kind === 'write') baselineWrites[connections] = baselineResult
          record(scenario, connections, serviceResult, baselineResult)
        }
      }
      const last = pair as { service: BenchProcess; baseline: BenchProcess } | null
      if (last) {
        await noteMemory(scenario.kind, last.service)
        await last.service.stop()
        await last.baseline.stop()
      }
    }

    // A write costs the same however many other users there are: the same-size vault of one
    // user alone, then among 1,000 users.
    const writeLatency: Record<string, Record<number, LoadResult | null>> = {}
    const latencyConnections = [1, options.smoke ? 4 : 32]
    for (const [name, set] of (options.only
      ? []
      : [
          ['1 user', single],
          [`${many.users} users`, many],
        ]) as [string, SeededUsers][]) {
      const scenario: Scenario = {
        id: `entries.create.${set.users}-users`,
        label: `POST /api/entries, ${name}`,
        kind: 'write',
        needs: 'entries',
        requests: () => [],
      }
      writeLatency[name] = {}
      if (!set.available) {
        for (const connections of latencyConnections) record(scenario, connections, null, null, 'not seeded: endpoint not built yet')
        continue
      }
      const server = await startService(copyOf(set.dataDir), masterKey, { path: '/api/categories', key: set.key })
      if (set === many && startupMany.length === 0) startupMany.push(server.startupMs)
      const requests: LoadRequest[] = [{ method: 'POST', path: '/api/entries', body: writeBody(set.categoryId) }]
      if (options.warmup > 0)
        await runLoad({ url: server.url, connections: 8, requests, headers: { authorization: `Bearer ${set.key}` }, duration: options.warmup })
      for (const connections of latencyConnections) {
        const result = await runLoad({
          url: server.url,
          connections,
          requests,
          headers: { authorization: `Bearer ${set.key}` },
          duration: options.duration,
          amount: options.amount,
        })
        writeLatency[name][connections] = result
        record(scenario, connections, result, baselineWrites[connections] ?? null)
      }
      if (set === many) {
        const rssMb = memory(server).rssMb
        figure(`RSS after writes, ${many.users} users (that user's vault then ${await totalEntries(server, set.key)} entries)`, rssMb, 'MB')
      }
      await server.stop()
    }

    const idleRange = idleRss.length > 1 ? `, ${idleRss.length} starts: ${Math.min(...idleRss).toFixed(1)} to ${Math.max(...idleRss).toFixed(1)}` : ''
    figure(`idle RSS after start (${main.counts.entries}-entry vault; median${idleRange})`, median(idleRss), 'MB', { text: '<= 45 MB', max: 45 })
    figure("  of which the process's own memory (RssAnon; the rest: executable pages)", median(idleAnon), 'MB')
    figure('RSS after the read load', afterReads.rssMb, 'MB', { text: '<= 100 MB', max: 100 })
    figure('peak RSS during the read load', afterReads.peakMb, 'MB')
    const afterMix = afterRuns.mix
    figure(`RSS after the mix (max; vault then ${afterMix?.entries ?? '?'} entries)`, afterMix?.rssMb ?? null, 'MB', { text: '<= 100 MB', max: 100 })
    const afterWrites = afterRuns.write
    figure(`RSS after the write load (max; vault then ${afterWrites?.entries ?? '?'} entries)`, afterWrites?.rssMb ?? null, 'MB')
    figure('start-up to first answer (median)', median(startup), 'ms', { text: '<= 250 ms', max: 250 })
    figure(`start-up to first answer, ${many.users} users`, median(startupMany), 'ms')
    const one = writeLatency['1 user']?.[1]
    const manyOne = writeLatency[`${many.users} users`]?.[1]
    if (one && manyOne) {
      figure(`write p50, 1 connection: 1 user`, one.p50, 'ms')
      figure(`write p50, 1 connection: ${many.users} users`, manyOne.p50, 'ms')
      figure(`write p50 ratio ${many.users} users / 1 user`, manyOne.p50 / one.p50, 'x')
    }

    const printed = [table(rows), '', figuresTable(figures)].join('\n')
    console.log(printed)
    const missed = [
      ...rows
        .filter((row) => row.met === false)
        .map((row) => `${row.label} at ${row.connections} connections: ${row.target} (ratio ${fmt(row.ratio, 2)}, p99 ${fmt(row.service?.p99, 2)} ms)`),
      ...figures.filter((f) => f.met === false).map((f) => `${f.measure}: ${fmt(f.value)} ${f.unit} (${f.target})`),
    ]
    if (missed.length > 0) console.log(`\nmissed targets:\n${missed.map((line) => `  - ${line}`).join('\n')}`)
    if (notes.length > 0) console.log(`\nnotes:\n${notes.map((line) => `  - ${line}`).join('\n')}`)

    const report = {
      kind: 'svc-vault-bench',
      mode: options.smoke ? 'smoke' : 'full',
      date: new Date().toISOString(),
      machine: {
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model ?? null,
        bun: Bun.version,
        platform: `${process.platform} ${process.arch}`,
        loadAverageAtEnd: loadavg(),
      },
      options: {
        durationSeconds: options.duration,
        rounds: options.rounds,
        warmupSeconds: options.warmup,
        requestsPerRun: options.amount ?? null,
        connections: options.connections,
      },
      seed: {
        main: main.counts,
        manyUsers: { users: many.users, entriesPerUser: sizes.entriesPerUser },
        seedSeconds: main.seedSeconds + many.seedSeconds + single.seedSeconds,
      },
      rows,
      figures,
      startupMs: { main: startup, manyUsers: startupMany },
      missed,
      notes,
      table: printed,
      totalSeconds: (performance.now() - started) / 1000,
    }
    mkdirSync(dirname(options.out), { recursive: true })
    writeFileSync(options.out, JSON.stringify(report, (key, value) => (key === 'latencies' ? undefined : value), 2) + '\n')
    console.log(`\nwritten to ${options.out} in ${report.totalSeconds.toFixed(1)} s`)
  } finally {
    for (const running of [...liveProcesses]) await running.stop()
    rmSync(work, { recursive: true, force: true })
  }
}

/** The vault's entry count as the service reports it (null when it cannot say). */
async function totalEntries(server: BenchProcess, key: string): Promise<number | null> {
  try {
    const answer = await fetch(`${server.url}/api/stats`, { headers: { authorization: `Bearer ${key}` } })
    return answer.ok ? (((await answer.json()) as { totalEntries?: number }).totalEntries ?? null) : null
  } catch {
    return null
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    for (const running of liveProcesses) running.proc.kill('SIGKILL')
    process.exit(130)
  })
}

// --scale: the scale curves with wrk (bench/scale.ts); --store postgres: PostgreSQL beside the file store (bench/postgres.ts).
const argv = process.argv.slice(2)
const storeAt = argv.findIndex((arg) => arg === '--store' || arg.startsWith('--store='))
const store = storeAt < 0 ? undefined : argv[storeAt].includes('=') ? argv[storeAt].split('=')[1] : argv[storeAt + 1]
if (store !== undefined && store !== 'postgres') throw new Error('--store: only `postgres` (PostgreSQL beside the file store)')
const run = store
  ? import('./postgres').then((pg) => pg.runPostgresBench(argv))
  : process.argv.includes('--scale')
    ? import('./scale').then((scale) => scale.runScale(argv))
    : main()
run.then(
  () => process.exit(0),
  (error) => {
    console.error(`bench failed: ${error?.stack ?? error}`)
    for (const running of liveProcesses) running.proc.kill('SIGKILL')
    process.exit(1)
  },
)
