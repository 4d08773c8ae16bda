// Start-up: from the spawn of the server to its first answer, median of N starts (docs/performance.md,
// "Start-up"). Two cases: an empty data folder to the first `GET /healthz` 200, and a folder
// holding one registered user to the first authenticated 200 (`GET /api/categories` with an access
// key). Besides the wall time (which other work on a shared machine stretches), the CPU time the
// process spent until that answer: every thread's run time (/proc/PID/task/*/schedstat, in ns)
// and user+sys from /proc/PID/stat (10 ms ticks, counting threads that have already ended).
//   bun run bench:startup [--starts=10] [--command="dist/svc-vault" ...]   (after `bun run build`)
// Several --command options are started in turn (a start of each, then the next round), so that a
// busy moment of a shared machine weighs on each alike: before/after comparisons in one run.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { processCpuMs } from './cpu'

const ROOT = join(import.meta.dir, '..')
const STARTS = Number(process.argv.find((arg) => arg.startsWith('--starts='))?.split('=')[1] ?? 10)
const given = process.argv.filter((arg) => arg.startsWith('--command=')).map((arg) => arg.slice('--command='.length))
const COMMANDS = (given.length ? given : ['bun dist/index.js']).map((command) => command.split(' '))
const MASTER_KEY = Buffer.alloc(32, 7).toString('base64')

interface Sample {
  wallMs: number
  cpuMs: number
  tickMs: number
}

/** Run time of every live thread of the process, in ms. */
function threadsCpuMs(pid: number): number {
  let ns = 0
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0])
    } catch {
      // The thread ended meanwhile.
    }
  }
  return ns / 1e6
}

async function freePort(): Promise<number> {
  const server = Bun.serve({ port: 0, fetch: () => new Response() })
  const port = server.port!
  server.stop(true)
  return port
}

/** Starts the server on `dataDir` and times it to the first 200 of `request` (polled). */
async function start(command: string[], dataDir: string, request: (base: string) => Promise<Response>): Promise<Sample> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const began = performance.now()
  const proc = Bun.spawn(command, {
    cwd: ROOT,
    env: { PATH: process.env.PATH, NODE_ENV: 'production', SVC_MASTER_KEY: MASTER_KEY, SVC_DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1' },
    stdout: 'ignore',
    stderr: 'pipe',
  })
  try {
    for (;;) {
      const response = await request(base).catch(() => undefined)
      if (response?.status === 200) {
        const wallMs = performance.now() - began
        const sample = { wallMs, cpuMs: threadsCpuMs(proc.pid), tickMs: processCpuMs(proc.pid) }
        await response.arrayBuffer()
        return sample
      }
      if (response) throw new Error(`answered ${response.status}: ${await response.text()}`)
      if (proc.exitCode !== null) throw new Error(`exited ${proc.exitCode}: ${await new Response(proc.stderr as ReadableStream).text()}`)
      await Bun.sleep(1)
    }
  } finally {
    proc.kill('SIGTERM')
    await proc.exited
  }
}

/** A folder with one user and an access key reading categories. */
async function prepareUser(command: string[], dataDir: string): Promise<string> {
  let key = ''
  await start(command, dataDir, async (base) => {
    const health = await fetch(`${base}/healthz`)
    if (health.status !== 200) return health
    const register = await fetch(`${base}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'startup@example.test', password: 'startup bench passphrase' }),
    })
    if (register.status !== 201) throw new Error(`register: ${register.status} ${await register.text()}`)
    const cookie = register.headers.get('set-cookie')!.split(';')[0]
    const created = await fetch(`${base}/api/access-keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie, origin: base },
      body: JSON.stringify({ name: 'startup', scopes: ['categories:read'] }),
    })
    if (created.status !== 201) throw new Error(`access key: ${created.status} ${await created.text()}`)
    key = ((await created.json()) as { key: string }).key
    return new Response('ok')
  })
  return key
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const summary = (samples: Sample[]) =>
  `wall ${median(samples.map((s) => s.wallMs)).toFixed(0)} ms (${Math.min(...samples.map((s) => s.wallMs)).toFixed(0)}-${Math.max(...samples.map((s) => s.wallMs)).toFixed(0)}), ` +
  `CPU ${median(samples.map((s) => s.cpuMs)).toFixed(0)} ms (threads' run time; user+sys ${median(samples.map((s) => s.tickMs)).toFixed(0)} ms)`

interface Run {
  command: string[]
  userDir: string
  key: string
  empty: Sample[]
  user: Sample[]
}

const runs: Run[] = []
try {
  for (const command of COMMANDS) {
    const userDir = mkdtempSync(join(tmpdir(), 'svc-vault-startup-user-'))
    runs.push({ command, userDir, key: '', empty: [], user: [] })
    runs.at(-1)!.key = await prepareUser(command, userDir)
  }
  for (let i = 0; i < STARTS; i++) {
    for (const run of runs) {
      const dataDir = mkdtempSync(join(tmpdir(), 'svc-vault-startup-empty-'))
      try {
        run.empty.push(await start(run.command, dataDir, (base) => fetch(`${base}/healthz`)))
      } finally {
        rmSync(dataDir, { recursive: true, force: true })
      }
      run.user.push(await start(run.command, run.userDir, (base) => fetch(`${base}/api/categories`, { headers: { authorization: `Bearer ${run.key}` } })))
    }
  }
  for (const run of runs) {
    console.log(`${run.command.join(' ')}, median of ${STARTS} starts`)
    console.log(`  empty folder to GET /healthz 200:          ${summary(run.empty)}`)
    console.log(`  one user to GET /api/categories 200 (key): ${summary(run.user)}`)
  }
} finally {
  for (const run of runs) rmSync(run.userDir, { recursive: true, force: true })
}
