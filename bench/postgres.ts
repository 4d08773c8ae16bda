// `bun run bench --store postgres`: the PostgreSQL store beside the file store, in one run on
// one machine. The same seed is written into a data folder and into a database through the
// service's own code; the server (`bun run build`, `bun dist/index.js`, as `bun run start`) is
// started on each, and the two are loaded in alternating slices with wrk (one thread, 32
// connections) so that a drift of the machine's speed hits both alike.
//
//   bun run bench --store postgres                 full run (a few minutes)
//   bun run bench --store postgres --smoke         tiny seed and runs (it works; no figure means anything)
//   bun run bench --store postgres --duration=9 --rounds=3 --users=50000
//
// Figures and targets: reveal p50 (PostgreSQL within 1.25x of the file store), a write's p50
// (within 2x), start-up to the first answer with 50,000 accounts (under 500 ms), and the RSS of
// an instance (no higher than the file store's). Beside them, to tell where a difference comes
// from: each load's CPU per request by process (bench/cpu.ts), and the reveals again on both
// stores with the audit log off (SVC_AUDIT=off). PostgreSQL comes from SVC_TEST_POSTGRES, or
// a throwaway cluster started here (bench/pg-cluster.ts). JSON in bench/results/postgres.json.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { CpuTally, cpuSnapshot } from './cpu'
import { FULL_SIZES, SMOKE_SIZES } from './fixture'
import { openBenchCluster } from './pg-cluster'
import { freePort, liveProcesses, spawnBench, type BenchProcess } from './processes'
import { seedAccounts, seedMainVault } from './seed'
import { ensureWrk, wrk, WRK_UNIQUE_ID, type WrkResult } from './wrk'

const ROOT = resolve(import.meta.dir, '..')
type StoreName = 'file' | 'postgres'
const STORES: StoreName[] = ['file', 'postgres']

interface Options {
  smoke: boolean
  duration: number
  rounds: number
  users: number
  connections: number
  startups: number
  out: string
}

function parseOptions(argv: string[]): Options {
  const value = (name: string) =>
    argv
      .find((arg) => arg.startsWith(`--${name}=`))
      ?.split('=')
      .slice(1)
      .join('=')
  const smoke = argv.includes('--smoke') || process.env.BENCH_SMOKE === '1'
  const options: Options = {
    smoke,
    duration: Number(value('duration') ?? (smoke ? 1 : 9)),
    rounds: Number(value('rounds') ?? (smoke ? 1 : 3)),
    users: Number(value('users') ?? (smoke ? 200 : 50_000)),
    connections: Number(value('connections') ?? 32),
    startups: smoke ? 1 : 3,
    out: resolve(value('out') ?? (smoke ? join(tmpdir(), `svc-vault-bench-pg-${process.pid}.json`) : join(ROOT, 'bench', 'results', 'postgres.json'))),
  }
  for (const [name, n] of Object.entries({ duration: options.duration, rounds: options.rounds, users: options.users, connections: options.connections }))
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number`)
  return options
}

/** Resident memory of a process in MB (VmRSS), and the process's own part (RssAnon). */
function memory(server: BenchProcess): { rssMb: number; anonMb: number } {
  const status = readFileSync(`/proc/${server.pid}/status`, 'utf8')
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN)
  return { rssMb: kb('VmRSS') / 1024, anonMb: kb('RssAnon') / 1024 }
}

async function startServer(name: string, env: Record<string, string>, probe: { path: string; key: string }): Promise<BenchProcess & { startupMs: number }> {
  const since = performance.now()
  const server = spawnBench(name, ['dist/index.js'], { NODE_ENV: 'production', ...env }, freePort())
  while (true) {
    const answered = await fetch(server.url + probe.path, { headers: { authorization: `Bearer ${probe.key}` } }).then(
      async (response) => {
        await response.arrayBuffer()
        return response.status === 200
      },
      () => false,
    )
    if (answered) return Object.assign(server, { startupMs: performance.now() - since })
    if (server.proc.exitCode !== null) throw new Error(`${name} exited with ${server.proc.exitCode}: ${server.output()}`)
    if (performance.now() - since > 60_000) throw new Error(`${name} gave no 200 within 60 s: ${server.output()}`)
    await Bun.sleep(1)
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

/** Slices of wrk combined: requests add up; p50 and p99 are the medians of the slices'. */
function combine(results: WrkResult[], seconds: number): { rps: number; p50: number; p99: number; non2xx: number; errors: number } {
  return {
    rps: results.reduce((sum, r) => sum + r.rps, 0) / results.length,
    p50: median(results.map((r) => r.p50)),
    p99: median(results.map((r) => r.p99)),
    non2xx: results.reduce((sum, r) => sum + r.non2xx, 0),
    errors: results.reduce((sum, r) => sum + r.errors, 0),
  }
}

export async function runPostgresBench(argv: string[]): Promise<void> {
  const options = parseOptions(argv)
  const started = performance.now()
  const log = (line: string) => console.error(`[bench pg ${((performance.now() - started) / 1000).toFixed(1)}s] ${line}`)
  const work = mkdtempSync(join(tmpdir(), 'svc-vault-bench-pg-work-'))
  const masterKey = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')
  const sizes = options.smoke ? SMOKE_SIZES : FULL_SIZES
  ensureWrk()
  const cluster = await openBenchCluster()
  log(`PostgreSQL: ${cluster.source}`)
  try {
    const build = Bun.spawnSync(['bun', 'run', 'build'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
    if (build.exitCode !== 0) throw new Error(`bun run build failed: ${build.stderr.toString()}`)
    const settings = {
      server_version: await cluster.setting('server_version'),
      fsync: await cluster.setting('fsync'),
      synchronous_commit: await cluster.setting('synchronous_commit'),
      shared_buffers: await cluster.setting('shared_buffers'),
    }

    // The same seed in both stores (each with its own random ids and keys).
    const envOf: Record<StoreName, { main: Record<string, string>; users: Record<string, string> }> = {
      file: { main: {}, users: {} },
      postgres: { main: { SVC_DATABASE_URL: await cluster.createDatabase('main') }, users: { SVC_DATABASE_URL: await cluster.createDatabase('users') } },
    }
    const seeded = {} as Record<StoreName, { main: Awaited<ReturnType<typeof seedMainVault>>; users: Awaited<ReturnType<typeof seedAccounts>> }>
    const seedSeconds = {} as Record<StoreName, { main: number; users: number }>
    for (const store of STORES) {
      log(`seeding ${store}: ${sizes.entries} entries, then ${options.users} accounts...`)
      const main = await seedMainVault(join(work, `${store}-main`), masterKey, sizes, envOf[store].main)
      const users = await seedAccounts(join(work, `${store}-users`), masterKey, options.users, envOf[store].users)
      seeded[store] = { main, users }
      seedSeconds[store] = { main: main.seedSeconds, users: users.seedSeconds }
      log(`${store} seeded: main ${main.seedSeconds.toFixed(1)} s, accounts ${users.seedSeconds.toFixed(1)} s`)
    }
    // The seeds wrote tens of MB: written back now (a checkpoint; the page cache synced), not in
    // the middle of a measured slice.
    await cluster.checkpoint()
    Bun.spawnSync(['sync'])
    const envFor = (store: StoreName, set: 'main' | 'users') => ({ SVC_DATA_DIR: seeded[store][set].dataDir, SVC_MASTER_KEY: masterKey, ...envOf[store][set] })

    // Start-up to the first authenticated answer with many accounts, alternating the stores.
    const startup: Record<StoreName, number[]> = { file: [], postgres: [] }
    for (let i = 0; i < options.startups; i++) {
      for (const store of STORES) {
        const users = seeded[store].users
        const server = await startServer(`${store}-users`, envFor(store, 'users'), { path: '/api/categories', key: users.key })
        startup[store].push(server.startupMs)
        await server.stop()
      }
    }
    log(
      `start-up with ${options.users} accounts: file ${startup.file.map((ms) => ms.toFixed(0)).join(', ')} ms; postgres ${startup.postgres.map((ms) => ms.toFixed(0)).join(', ')} ms`,
    )

    // One long-lived instance per store on the main seed: idle memory, then the loads.
    const servers = {} as Record<StoreName, BenchProcess & { startupMs: number }>
    for (const store of STORES) servers[store] = await startServer(store, envFor(store, 'main'), { path: '/api/entries', key: seeded[store].main.key })
    await Bun.sleep(options.smoke ? 200 : 2000)
    const idle = { file: memory(servers.file), postgres: memory(servers.postgres) }
    log(`idle RSS: file ${idle.file.rssMb.toFixed(1)} MB, postgres ${idle.postgres.rssMb.toFixed(1)} MB`)

    const slice = Math.max(1, Math.round(options.duration / options.rounds))
    const load = async (label: string, method: string, paths: (store: StoreName) => string[], body?: (store: StoreName) => string) => {
      const slices: Record<StoreName, WrkResult[]> = { file: [], postgres: [] }
      const cpu: Record<StoreName, CpuTally> = { file: new CpuTally(), postgres: new CpuTally() }
      const once = (store: StoreName, connections: number, seconds: number, tally?: CpuTally) => {
        const before = tally && cpuSnapshot(servers[store].pid)
        const result = wrk(servers[store].url, {
          connections,
          seconds,
          method,
          paths: paths(store),
          headers: { authorization: `Bearer ${seeded[store].main.key}` },
          body: body?.(store),
        })
        if (tally && before) tally.add(before, cpuSnapshot(servers[store].pid), result.requests, result.cpuMs)
        return result
      }
      // Warm-up (the optimizing compiler, the pool's connections) on both.
      if (!options.smoke) for (const store of STORES) once(store, 8, 1)
      for (let round = 0; round < options.rounds; round++) for (const store of STORES) slices[store].push(once(store, options.connections, slice, cpu[store]))
      const result = {
        file: { ...combine(slices.file, slice), cpu: cpu.file.share() },
        postgres: { ...combine(slices.postgres, slice), cpu: cpu.postgres.share() },
      }
      log(
        `${label}: file p50 ${result.file.p50.toFixed(2)} ms (${result.file.rps.toFixed(0)} req/s), postgres p50 ${result.postgres.p50.toFixed(2)} ms (${result.postgres.rps.toFixed(0)} req/s)`,
      )
      return result
    }
    const revealPaths = (store: StoreName) => seeded[store].main.entryIds.slice(0, 64).map((id) => `/api/entries/${id}/reveal`)
    const reveal = await load('reveal', 'POST', revealPaths)
    const afterReveal = { file: memory(servers.file), postgres: memory(servers.postgres) }
    const write = await load(
      'write',
      'POST',
      () => ['/api/entries'],
      (store) =>
        JSON.stringify({
          categoryId: seeded[store].main.writeCategoryId,
          name: `bench-${WRK_UNIQUE_ID}`,
          value: `sk_bench_${'x'.repeat(40)}`,
          environment: 'production',
        }),
    )
    const afterWrite = { file: memory(servers.file), postgres: memory(servers.postgres) }
    for (const store of STORES) await servers[store].stop()

    // The same reveals with the audit log off (SVC_AUDIT=off, a switch for the benchmark only):
    // what of the difference is the durable audit line each reveal waits for.
    for (const store of STORES)
      servers[store] = await startServer(
        `${store}-audit-off`,
        { ...envFor(store, 'main'), SVC_AUDIT: 'off' },
        { path: '/api/entries', key: seeded[store].main.key },
      )
    const revealUnaudited = await load('reveal, audit off', 'POST', revealPaths)
    for (const store of STORES) await servers[store].stop()

    const ratio = (pick: (s: StoreName) => number) => pick('postgres') / pick('file')
    const judged = (value: number, max: number) => (options.smoke ? null : value <= max)
    const targets = [
      {
        measure: 'reveal p50, postgres / file',
        value: ratio((s) => reveal[s].p50),
        target: '<= 1.25x',
        met: judged(
          ratio((s) => reveal[s].p50),
          1.25,
        ),
      },
      {
        measure: 'write p50, postgres / file',
        value: ratio((s) => write[s].p50),
        target: '<= 2x',
        met: judged(
          ratio((s) => write[s].p50),
          2,
        ),
      },
      {
        measure: `start-up at ${options.users} accounts, postgres (median)`,
        value: median(startup.postgres),
        target: '< 500 ms',
        met: judged(median(startup.postgres), 499.999),
      },
      {
        measure: 'idle RSS, postgres / file',
        value: ratio((s) => idle[s].rssMb),
        target: '<= 1x',
        met: judged(
          ratio((s) => idle[s].rssMb),
          1,
        ),
      },
    ]
    const row = (label: string, f: number, p: number, unit: string, digits = 2) =>
      `${label.padEnd(44)} ${f.toFixed(digits).padStart(9)} ${p.toFixed(digits).padStart(10)}  ${unit.padEnd(6)} ${(f > 0 ? (p / f).toFixed(2) : '').padStart(6)}`
    // Where the CPU of a load's slices went, per request (bench/cpu.ts).
    const cpuRows = (what: string, load: typeof reveal) => {
      const [f, p] = [load.file.cpu, load.postgres.cpu]
      return [
        row(`${what}: CPU per request, all below`, f.all, p.all, 'µs', 0),
        row('  the server', f.server, p.server, 'µs', 0),
        row("  PostgreSQL's processes", f.postgres, p.postgres, 'µs', 0),
        row("  the kernel's threads", f.kernel, p.kernel, 'µs', 0),
        row('  wrk', f.wrk, p.wrk, 'µs', 0),
        row('  the machine busy meanwhile', f.busyPercent, p.busyPercent, '%', 0),
      ]
    }
    const lines = [
      `${'measure'.padEnd(44)} ${'file'.padStart(9)} ${'postgres'.padStart(10)}  ${'unit'.padEnd(6)} ${'pg/file'.padStart(6)}`,
      row(`reveal p50 (wrk, ${options.connections} connections)`, reveal.file.p50, reveal.postgres.p50, 'ms'),
      row('reveal p99', reveal.file.p99, reveal.postgres.p99, 'ms'),
      row('reveal req/s', reveal.file.rps, reveal.postgres.rps, 'req/s', 0),
      ...cpuRows('reveal', reveal),
      row('reveal p50, audit off (SVC_AUDIT=off)', revealUnaudited.file.p50, revealUnaudited.postgres.p50, 'ms'),
      row('reveal req/s, audit off', revealUnaudited.file.rps, revealUnaudited.postgres.rps, 'req/s', 0),
      row(`write p50 (POST /api/entries, ${options.connections} conns)`, write.file.p50, write.postgres.p50, 'ms'),
      row('write p99', write.file.p99, write.postgres.p99, 'ms'),
      row('write req/s', write.file.rps, write.postgres.rps, 'req/s', 0),
      ...cpuRows('write', write),
      row(`start-up, ${options.users} accounts (median of ${options.startups})`, median(startup.file), median(startup.postgres), 'ms', 0),
      row('idle RSS after start', idle.file.rssMb, idle.postgres.rssMb, 'MB', 1),
      row("  of which the process's own (RssAnon)", idle.file.anonMb, idle.postgres.anonMb, 'MB', 1),
      row('RSS after the reveal load', afterReveal.file.rssMb, afterReveal.postgres.rssMb, 'MB', 1),
      row('RSS after the write load', afterWrite.file.rssMb, afterWrite.postgres.rssMb, 'MB', 1),
      '',
      ...targets.map((t) => `${t.measure.padEnd(44)} ${t.value.toFixed(2).padStart(9)}  ${t.met === null ? '' : t.met ? 'ok' : 'MISS'} (${t.target})`),
    ]
    const failures = STORES.flatMap((store) =>
      [
        ['reveal', reveal[store]],
        ['write', write[store]],
        ['reveal with the audit off', revealUnaudited[store]],
      ].flatMap(([what, r]: any) => (r.non2xx + r.errors > 0 ? [`${store} ${what}: ${r.non2xx} non-2xx answers, ${r.errors} connection errors`] : [])),
    )
    if (failures.length > 0) lines.push('', 'notes:', ...failures.map((f) => `  - ${f}`))
    console.log(lines.join('\n'))

    const report = {
      kind: 'svc-vault-bench-postgres',
      mode: options.smoke ? 'smoke' : 'full',
      date: new Date().toISOString(),
      machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? null, bun: Bun.version, loadAverageAtEnd: loadavg() },
      postgres: { source: cluster.source, ...settings },
      options: { durationSeconds: options.duration, rounds: options.rounds, sliceSeconds: slice, connections: options.connections, users: options.users },
      seed: { main: seeded.file.main.counts, accounts: options.users, seedSeconds },
      reveal,
      revealUnaudited,
      write,
      startupMs: startup,
      memoryMb: { idle, afterReveal, afterWrite },
      targets,
      failures,
      table: lines.join('\n'),
      totalSeconds: (performance.now() - started) / 1000,
    }
    mkdirSync(dirname(options.out), { recursive: true })
    writeFileSync(options.out, JSON.stringify(report, null, 2) + '\n')
    console.log(`\nwritten to ${options.out} in ${report.totalSeconds.toFixed(1)} s`)
  } finally {
    for (const running of [...liveProcesses]) await running.stop()
    await cluster.close()
    rmSync(work, { recursive: true, force: true })
  }
}
