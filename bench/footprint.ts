// What a deployment carries and holds: the size of the bundle `bun run start` runs (dist/ without
// the executable) and of the executable `bun run build:server` makes, and the idle memory of each,
// started side by side from folders holding nothing else (median of 5 starts, each read 2 s after
// its first answer, once start-up's compiled code is dropped).
//   bun bench/footprint.ts [--starts=5]
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..')
const STARTS = Number(process.argv.find((arg) => arg.startsWith('--starts='))?.split('=')[1] ?? 5)
const MASTER_KEY = Buffer.alloc(32, 9).toString('base64')
const MiB = 1024 * 1024

function run(command: string[]) {
  const result = Bun.spawnSync(command, { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  if (result.exitCode !== 0) throw new Error(`${command.join(' ')}: ${result.stderr.toString()}`)
}

const folderBytes = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce(
    (sum, entry) => sum + (entry.isDirectory() ? folderBytes(join(dir, entry.name)) : statSync(join(dir, entry.name)).size),
    0,
  )

function status(pid: number): { rss: number; anon: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)![1])
  return { rss: kb('VmRSS') / 1024, anon: kb('RssAnon') / 1024 }
}

async function idle(command: string[], cwd: string): Promise<{ rss: number; anon: number }> {
  const data = mkdtempSync(join(tmpdir(), 'svc-vault-footprint-data-'))
  const proc = Bun.spawn(command, {
    cwd,
    env: { PATH: '/usr/bin:/bin', HOME: cwd, SVC_MASTER_KEY: MASTER_KEY, SVC_DATA_DIR: data, PORT: '0' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  try {
    const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
    let output = ''
    while (!/listening on (http:\/\/\S+)/.test(output)) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`did not start: ${output}`)
      output += new TextDecoder().decode(value)
    }
    const url = /listening on (http:\/\/\S+)/.exec(output)![1]
    // A first answer through the whole stack (session, vault, list), as a user's first visit.
    const register = await fetch(`${url}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'footprint@example.test', password: 'footprint passphrase' }),
    })
    const cookie = register.headers.get('set-cookie')!.split(';')[0]
    await fetch(`${url}/api/entries`, { headers: { cookie } }).then((r) => r.arrayBuffer())
    await Bun.sleep(2000)
    return status(proc.pid)
  } finally {
    proc.kill('SIGTERM')
    await proc.exited
    rmSync(data, { recursive: true, force: true })
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const range = (values: number[]) => `${Math.min(...values).toFixed(1)}-${Math.max(...values).toFixed(1)}`

run(['bun', 'run', 'build'])
run(['bun', 'run', 'build:server'])
const dist = join(ROOT, 'dist')
const bundleFolder = mkdtempSync(join(tmpdir(), 'svc-vault-footprint-bundle-'))
const exeFolder = mkdtempSync(join(tmpdir(), 'svc-vault-footprint-exe-'))
try {
  // The bundle as a fresh `bun run build` writes it (dist/ keeps older chunks of earlier builds).
  run(['bun', 'scripts/build.ts', `--outdir=${bundleFolder}`])
  copyFileSync(join(dist, 'svc-vault'), join(exeFolder, 'svc-vault'))
  Bun.spawnSync(['chmod', '755', join(exeFolder, 'svc-vault')])

  const runtime = statSync(process.execPath).size
  const exe = statSync(join(exeFolder, 'svc-vault')).size
  const bundle = folderBytes(bundleFolder)
  const bundleIcons = readdirSync(bundleFolder)
    .filter((name) => name.endsWith('.pack'))
    .reduce((sum, name) => sum + statSync(join(bundleFolder, name)).size, 0)

  const measured: Record<string, { rss: number[]; anon: number[] }> = {
    'bun run start (bun dist/index.js)': { rss: [], anon: [] },
    'dist/svc-vault': { rss: [], anon: [] },
  }
  for (let i = 0; i < STARTS; i++) {
    // Alternated, so a drift in the machine hits both alike.
    for (const [name, command, cwd] of [
      ['bun run start (bun dist/index.js)', [process.execPath, 'index.js'], bundleFolder],
      ['dist/svc-vault', ['./svc-vault'], exeFolder],
    ] as const) {
      const sample = await idle([...command], cwd)
      measured[name].rss.push(sample.rss)
      measured[name].anon.push(sample.anon)
    }
  }

  console.log(`Bun ${Bun.version}, ${navigator.hardwareConcurrency} CPUs\n`)
  console.log(
    `bundle (dist/ without the executable): ${(bundle / MiB).toFixed(2)} MiB, of which the icon pack ${(bundleIcons / MiB).toFixed(2)} MiB; plus the bun runtime (${(runtime / MiB).toFixed(1)} MiB)`,
  )
  console.log(`executable dist/svc-vault: ${(exe / MiB).toFixed(1)} MiB, ${((exe - runtime) / MiB).toFixed(2)} MiB besides the Bun runtime inside it`)
  console.log(`\nidle memory, median of ${STARTS} starts (range):`)
  for (const [name, { rss, anon }] of Object.entries(measured)) {
    console.log(`  ${name}: VmRSS ${median(rss).toFixed(1)} MB (${range(rss)}), RssAnon ${median(anon).toFixed(1)} MB (${range(anon)})`)
  }
} finally {
  rmSync(bundleFolder, { recursive: true, force: true })
  rmSync(exeFolder, { recursive: true, force: true })
}
