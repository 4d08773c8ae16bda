// The benchmark's smoke mode runs end to end (seed, real server and baseline processes, load,
// table, JSON). Only completion and the shape of the output are checked: never timings.
import { expect, test } from 'bun:test'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT } from './support/server'

/** `bun bench/run.ts` with these arguments: its output and exit code. */
async function bench(args: string[], env: Record<string, string | undefined>) {
  const proc = Bun.spawn(['bun', 'bench/run.ts', ...args], { cwd: ROOT, env, stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { stdout, stderr, code }
}

test('bun run bench --smoke completes and prints the table', async () => {
  const out = join(tmpdir(), `svc-vault-bench-smoke-test-${process.pid}-${Date.now()}.json`)
  const { stdout, stderr, code } = await bench(['--smoke', `--out=${out}`], { ...process.env, BENCH_SMOKE: '1' })
  try {
    if (code !== 0) console.error(stdout, stderr)
    expect(code).toBe(0)
    expect(stdout).toMatch(/scenario\s+conns\s+req\/s\s+p50 ms\s+p99 ms\s+base req\/s\s+base p99\s+ratio/)
    for (const label of [
      'GET /api/entries',
      'POST /api/entries/{id}/reveal',
      // A shared vault's reveal beside the personal one (issue 33).
      'POST /api/vaults/{id}/entries/{id}/reveal',
      'POST /api/2fa/{id}/reveal',
      'GET /api/stats',
      'GET /api/export',
      'POST /api/entries (durable)',
      'mix 90% list / 10% create',
    ]) {
      expect(stdout).toContain(label)
    }
    expect(stdout).toContain('idle RSS after start')
    // Every load answer was 2xx (writes make unique entries: duplicates are 409 ENTRY_EXISTS).
    expect(stdout).not.toContain('non-2xx')
    expect(existsSync(out)).toBe(true)
    const report = JSON.parse(readFileSync(out, 'utf8'))
    expect(report.mode).toBe('smoke')
    expect(report.rows.length).toBeGreaterThanOrEqual(14)
    expect(report.rows.every((row: any) => typeof row.scenario === 'string' && typeof row.connections === 'number')).toBe(true)
    expect(report.figures.length).toBeGreaterThan(0)
  } finally {
    rmSync(out, { force: true })
  }
}, 120_000)

// PostgreSQL beside the file store (bench/postgres.ts), on the cluster the tests use.
const pgTest = process.env.SVC_TEST_POSTGRES || process.env.CI === 'true' ? test : test.skip
pgTest(
  `bun run bench --store postgres --smoke completes, every answer 2xx${process.env.SVC_TEST_POSTGRES ? '' : ' (skipped: SVC_TEST_POSTGRES is not set)'}`,
  async () => {
    if (!process.env.SVC_TEST_POSTGRES) throw new Error('SVC_TEST_POSTGRES is not set: under CI the PostgreSQL tests must run')
    const out = join(tmpdir(), `svc-vault-bench-pg-smoke-test-${process.pid}-${Date.now()}.json`)
    const { stdout, stderr, code } = await bench(['--store', 'postgres', '--smoke', `--out=${out}`], process.env)
    try {
      if (code !== 0) console.error(stdout, stderr)
      expect(code).toBe(0)
      for (const label of ['reveal p50', 'write p50', 'start-up, 200 accounts', 'idle RSS after start', 'CPU per request', 'reveal p50, audit off'])
        expect(stdout).toContain(label)
      expect(stdout).not.toContain('non-2xx')
      const report = JSON.parse(readFileSync(out, 'utf8'))
      expect(report).toMatchObject({ kind: 'svc-vault-bench-postgres', mode: 'smoke', postgres: { source: 'SVC_TEST_POSTGRES' } })
      // CPU by process (bench/cpu.ts): the server works on both stores, PostgreSQL's processes only
      // for the database's slices, and nothing is counted below zero (a backend that ended meanwhile).
      for (const load of [report.reveal, report.write]) {
        expect(load.file.cpu.server).toBeGreaterThan(0)
        expect(load.postgres.cpu.server).toBeGreaterThan(0)
        expect(load.postgres.cpu.postgres).toBeGreaterThan(0)
        for (const store of ['file', 'postgres']) for (const part of ['postgres', 'kernel', 'wrk']) expect(load[store].cpu[part]).toBeGreaterThanOrEqual(0)
      }
      expect(report.revealUnaudited.postgres.rps).toBeGreaterThan(0)
      expect(report.targets.map((t: { met: unknown }) => t.met)).toEqual([null, null, null, null]) // a smoke run judges nothing
    } finally {
      rmSync(out, { force: true })
    }
  },
  180_000,
)
