// `bun run bench:cli`: how long `svc run -- true` takes against a local vault of 1,000 entries,
// measured with hyperfine against `true` alone and against `bun -e 0` (a bare Bun start). The
// CLI's own overhead is svc's mean minus true's: start-up, the export request (the server
// decrypting and rendering 1,000 entries), the child's spawn. Target: under 100 ms.
//
//   bun run bench:cli              seeds, builds dist/svc and dist/index.js, measures
//   bun run bench:cli --runs=50    hyperfine runs per command (default 30)
//
// Needs hyperfine (apt-get install hyperfine). Writes bench/results/cli.json.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { createApp, openVault } from '../src/app'
import { loadConfig } from '../src/config'
import { pool } from './seed'

const ROOT = resolve(import.meta.dir, '..')
const MASTER_KEY = Buffer.alloc(32, 9).toString('base64')
const runs = Number(process.argv.find((arg) => arg.startsWith('--runs='))?.split('=')[1] ?? 30)

function must(command: string[], what: string): void {
  const result = Bun.spawnSync(command, { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  if (result.exitCode !== 0) throw new Error(`${what} failed: ${result.stderr.toString()}`)
}

if (Bun.spawnSync(['which', 'hyperfine']).exitCode !== 0) {
  console.error('bench:cli needs hyperfine: apt-get install hyperfine')
  process.exit(1)
}

const CATEGORIES = 100
const ENTRIES_PER_CATEGORY = 10

/**
 * 1,000 entries whose export runs as is: 100 group categories of 10 entries each, every entry
 * with its own two variables (bench/seed.ts's vault repeats variables across entries, which the
 * JSON export rightly refuses as ambiguous). Seeded through the app in this process.
 */
async function seed(dataDir: string): Promise<{ key: string; counts: { categories: number; entries: number } }> {
  const deps = await openVault(loadConfig({ SVC_MASTER_KEY: MASTER_KEY, SVC_DATA_DIR: dataDir, PORT: '0' }), () => {})
  const app = createApp(deps)
  const call = async (method: string, path: string, body: unknown, auth: Record<string, string>) => {
    const answer = await app.handle(
      new Request(`http://127.0.0.1${path}`, { method, headers: { 'content-type': 'application/json', ...auth }, body: JSON.stringify(body) }),
    )
    if (answer.status !== 201) throw new Error(`seed: ${method} ${path} answered ${answer.status} ${await answer.text()}`)
    return answer
  }
  try {
    const registered = await call('POST', '/api/auth/register', { email: 'bench@example.test', password: 'bench password 1234' }, {})
    const cookie = /svc_session=[^;]+/.exec(registered.headers.getSetCookie().join('\n'))![0]
    const created = (await (await call('POST', '/api/access-keys', { name: 'bench', scopes: ['export:read'] }, { cookie })).json()) as { key: string }
    const session = { cookie }
    await pool(
      Array.from({ length: CATEGORIES }, (_, i) => i),
      8,
      async (i) => {
        const category = (await (await call('POST', '/api/categories', { name: `Service ${i}`, keyType: 'group' }, session)).json()) as { id: string }
        for (let j = 0; j < ENTRIES_PER_CATEGORY; j++) {
          const value = { [`SERVICE_${i}_APP_${j}_USER`]: `user-${i}-${j}`, [`SERVICE_${i}_APP_${j}_TOKEN`]: crypto.randomUUID() + crypto.randomUUID() }
          await call('POST', '/api/entries', { categoryId: category.id, name: `app-${j}`, value: JSON.stringify(value) }, session)
        }
      },
    )
    return { key: created.key, counts: { categories: CATEGORIES, entries: CATEGORIES * ENTRIES_PER_CATEGORY } }
  } finally {
    await deps.store.close()
  }
}

const dataDir = mkdtempSync(join(tmpdir(), 'svc-vault-bench-cli-'))
const started = performance.now()
const seeded = await seed(dataDir)
console.log(`seeded ${seeded.counts.entries} entries in ${seeded.counts.categories} categories (${((performance.now() - started) / 1000).toFixed(1)} s)`)

const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
const port = probe.port
probe.stop(true)
const server = Bun.spawn(['bun', 'dist/index.js'], {
  cwd: ROOT,
  env: {
    PATH: process.env.PATH!,
    HOME: process.env.HOME ?? '/tmp',
    HOST: '127.0.0.1',
    PORT: String(port),
    SVC_DATA_DIR: dataDir,
    SVC_MASTER_KEY: MASTER_KEY,
    NODE_ENV: 'production',
  },
  stdout: 'ignore',
  stderr: 'inherit',
})
const url = `http://127.0.0.1:${port}`

try {
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${url}/api/auth/providers`)).ok) break
    } catch {}
    if (i > 2000) throw new Error('the server did not start')
    await Bun.sleep(10)
  }
  // What one export of 1,000 entries costs the server, as the CLI asks for it (after warm-up).
  const exportTimes: number[] = []
  // A vault without the JSON format: svc asks for the .env text (after one 400).
  const jsonAnswer = await fetch(`${url}/api/export?format=json`, { headers: { authorization: `Bearer ${seeded.key}` } })
  const exportPath = jsonAnswer.status === 200 ? '/api/export?format=json' : '/api/export'
  await jsonAnswer.arrayBuffer()
  for (let i = 0; i < 40; i++) {
    const t0 = performance.now()
    const answer = await fetch(url + exportPath, { headers: { authorization: `Bearer ${seeded.key}` } })
    const text = await answer.text()
    if (i === 0) console.log(`export: HTTP ${answer.status}, ${text.length} bytes, ${answer.headers.get('content-type')}`)
    if (i >= 10) exportTimes.push(performance.now() - t0)
  }
  exportTimes.sort((a, b) => a - b)
  const exportMedian = exportTimes[Math.floor(exportTimes.length / 2)]

  const out = join(tmpdir(), `svc-bench-cli-${process.pid}.json`)
  const svc = join(ROOT, 'dist', 'svc')
  // The CLI as the vault serves it (GET /cli/svc), run by Node.
  const servedFile = join(dataDir, 'svc.js')
  writeFileSync(servedFile, await (await fetch(`${url}/cli/svc`)).text())
  console.log('READY', url, seeded.key, servedFile, dataDir)
  await Bun.sleep(3000_000)
  const hyperfine = Bun.spawnSync(
    [
      'hyperfine',
      '-N',
      '--warmup',
      '5',
      '--runs',
      String(runs),
      '--export-json',
      out,
      'true',
      'bun -e 0',
      `${svc} run -- true`,
      'node -e 0',
      `node ${servedFile} run -- true`,
    ],
    {
      cwd: ROOT,
      env: { PATH: process.env.PATH!, HOME: dataDir, XDG_CONFIG_HOME: join(dataDir, 'xdg'), SVC_URL: url, SVC_TOKEN: seeded.key },
      stdout: 'inherit',
      stderr: 'inherit',
    },
  )
  if (hyperfine.exitCode !== 0) throw new Error('hyperfine failed')
  const results = (
    JSON.parse(readFileSync(out, 'utf8')) as { results: { command: string; mean: number; stddev: number; median: number; min: number; max: number }[] }
  ).results
  rmSync(out, { force: true })
  const ms = (seconds: number) => Math.round(seconds * 10_000) / 10
  const [bare, bun, cli, node, servedCli] = results
  const overhead = ms(cli.mean - bare.mean)
  const servedOverhead = ms(servedCli.mean - bare.mean)
  const table = {
    date: new Date().toISOString(),
    entries: seeded.counts.entries,
    runs,
    commands: results.map((r) => ({
      command: r.command.replace(ROOT + '/', ''),
      meanMs: ms(r.mean),
      stddevMs: ms(r.stddev),
      medianMs: ms(r.median),
      minMs: ms(r.min),
      maxMs: ms(r.max),
    })),
    serverExportMedianMs: Math.round(exportMedian * 10) / 10,
    cliOverheadMs: overhead,
    cliOverBunStartMs: ms(cli.mean - bun.mean),
    servedNodeCliOverheadMs: servedOverhead,
    servedNodeCliOverNodeStartMs: ms(servedCli.mean - node.mean),
    targetMs: 100,
    meetsTarget: overhead < 100 && servedOverhead < 100,
    loadAverage: loadavg(),
  }
  console.log(
    `\nsvc run -- true: ${ms(cli.mean)} ms mean, ${ms(cli.median)} ms median, ${ms(cli.min)} ms fastest; true: ${ms(bare.mean)} ms; bun -e 0: ${ms(bun.mean)} ms`,
  )
  console.log(
    `load average while measuring: ${loadavg()
      .map((n) => n.toFixed(1))
      .join(' ')} on ${cpus().length} cores`,
  )
  console.log(`CLI overhead (svc run -- true minus true): ${overhead} ms, compiled (target under 100 ms for both: ${table.meetsTarget ? 'met' : 'NOT met'})`)
  console.log(`served CLI on Node (node svc.js run -- true minus true): ${servedOverhead} ms; node -e 0: ${ms(node.mean)} ms`)
  console.log(`of which the server's export of ${seeded.counts.entries} entries: ${table.serverExportMedianMs} ms (median, measured apart)`)
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true })
  writeFileSync(join(ROOT, 'bench', 'results', 'cli.json'), JSON.stringify(table, null, 2) + '\n')
} finally {
  server.kill('SIGTERM')
  await server.exited
  rmSync(dataDir, { recursive: true, force: true })
}
