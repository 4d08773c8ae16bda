// `bun run bench --scale`: the scale curves, measured against the built server (dist/) as
// `bun run start` runs it, with wrk (Debian's package, installed when missing) as the load
// generator on one thread, so that it takes no more than one of the machine's cores.
//
//   accounts: 100 / 10,000 / 50,000 users  start to first answer, idle RSS, access-key create,
//             register and login p50, reveal p99 of one user while another creates keys,
//             RSS after one list by each user (SVC_OPEN_VAULTS bounds it)
//   one vault: 1,000 / 10,000 / 100,000 entries  write p50, reveal right after a write, any
//             reveal, the whole list and a page of 100
//   wrk at 32 connections: entry reveal and list against the bare baseline (bench/baseline-server.ts)
//
//   bun run bench --scale                    everything (about 10 minutes)
//   bun run bench --scale --users=100,10000  other user counts
//   bun run bench --scale --entries=1000     other vault sizes
//   bun run bench --scale --smoke            tiny sizes, seconds (checks the bench itself runs)
//   bun run bench --scale --out=path.json    where the JSON goes (default bench/results/scale.json)
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { Keyring } from '../src/crypto/keyring'
import { sha256Hex } from '../src/crypto/tokens'
import { sealEntryValue } from '../src/modules/entries/values'
import {
  FORMAT_VERSION,
  type AccessKeyRecord,
  type AccountsDocument,
  type CategoryRecord,
  type Draft,
  type EntryRecord,
  type SessionRecord,
  type UserRecord,
  type VaultDocument,
} from '../src/store/records'
import { SMOKE_SIZES } from './fixture'
import { seedMainVault } from './seed'
import { freePort, liveProcesses, spawnBench, type BenchProcess } from './processes'
import { ensureWrk, wrk, type WrkResult } from './wrk'

const ROOT = resolve(import.meta.dir, '..')
const PASSWORD = 'bench password 1234'

// ---------------------------------------------------------------------------------------------
// Processes

/** `bun <args>` on a free port, in production mode; ten seconds to stop before SIGKILL (a large vault folds its log). */
const startBun = (args: string[], env: Record<string, string>): BenchProcess =>
  spawnBench('server', args, { NODE_ENV: 'production', ...env }, freePort(), 10_000)

/** Starts the service; resolves with the milliseconds until `path` first answered 200. */
async function startService(
  dataDir: string,
  masterKey: string,
  key: string,
  env: Record<string, string> = {},
): Promise<{ server: BenchProcess; startMs: number }> {
  const since = performance.now()
  const server = startBun(['dist/index.js'], { SVC_DATA_DIR: dataDir, SVC_MASTER_KEY: masterKey, SVC_SIGNUP: 'open', SVC_REGISTER_LIMIT: '0', ...env })
  while (true) {
    try {
      const response = await fetch(`${server.url}/api/access-keys`, { headers: { authorization: `Bearer ${key}` } })
      await response.arrayBuffer()
      // Access keys cannot list access keys (session only): 403 proves the key was checked.
      if (response.status === 403 || response.status === 200) return { server, startMs: performance.now() - since }
    } catch {
      // Not listening yet.
    }
    if (server.proc.exitCode !== null) throw new Error(`service exited ${server.proc.exitCode}: ${server.output()}`)
    if (performance.now() - since > 60_000) throw new Error(`service did not answer: ${server.output()}`)
    await Bun.sleep(1)
  }
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN) / 1024
}

// ---------------------------------------------------------------------------------------------
// Seeding straight into files (50,000 accounts through the API would take hours of argon2)

interface SeededAccounts {
  /** Session cookies (the first user also has an access key). */
  cookies: string[]
  keys: string[]
  emails: string[]
  userIds: string[]
}

const randomKey = () => `svc_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')}`

/** N users, each with one session and a small vault (1 category, 2 entries); the first also with an access key (reads). */
export async function seedAccounts(dataDir: string, masterKey: string, users: number): Promise<SeededAccounts> {
  mkdirSync(join(dataDir, 'vaults'), { recursive: true, mode: 0o700 })
  const keyring = new Keyring(new Uint8Array(Buffer.from(masterKey, 'base64')))
  const passwordHash = await Bun.password.hash(PASSWORD, 'argon2id')
  const at = new Date().toISOString()
  const expires = new Date(Date.now() + 7 * 86_400_000).toISOString()
  const document = {
    version: FORMAT_VERSION,
    keyCheck: keyring.createKeyCheck(),
    users: [] as UserRecord[],
    sessions: [] as SessionRecord[],
    accessKeys: [] as AccessKeyRecord[],
    sharedVaults: [],
    vaultInvites: [],
    moves: [],
  } satisfies AccountsDocument
  const seeded: SeededAccounts = { cookies: [], keys: [], emails: [], userIds: [] }
  for (let i = 0; i < users; i++) {
    const id = crypto.randomUUID()
    const email = `user-${i}@example.test`
    document.users.push({ id, email, name: null, passwordHash, identities: [], createdAt: at })
    const cookie = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
    document.sessions.push({ id: crypto.randomUUID(), tokenHash: sha256Hex(cookie), userId: id, createdAt: at, expiresAt: expires })
    seeded.cookies.push(cookie)
    if (i < 2) {
      const key = randomKey()
      const record: AccessKeyRecord = {
        id: crypto.randomUUID(),
        userId: id,
        name: 'bench',
        keyPrefix: key.slice(0, 12),
        keyHash: sha256Hex(key),
        scopes: ['entries:read', 'entries:reveal', 'entries:write'],
        expiresAt: null,
        lastUsedAt: null,
        createdAt: at,
      }
      document.accessKeys.push(record)
      seeded.keys.push(key)
    }
    seeded.emails.push(email)
    seeded.userIds.push(id)
    const dataKey = keyring.createWrappedDataKey(id)
    const cipher = keyring.vault(id, dataKey)
    const category: CategoryRecord = {
      id: crypto.randomUUID(),
      userId: id,
      name: 'Stripe',
      keyType: 'simple',
      envVarName: 'STRIPE_KEY',
      icon: 'stripe',
      description: null,
      fieldDefinitions: null,
      createdAt: at,
      updatedAt: at,
    }
    const entries: EntryRecord[] = ['development', 'production'].map((environment) => {
      const entryId = crypto.randomUUID()
      return {
        id: entryId,
        categoryId: category.id,
        name: 'shop',
        environment: environment as EntryRecord['environment'],
        notes: null,
        encryptedValue: sealEntryValue(cipher, category, entryId, `sk_${environment}_${i}`),
        createdAt: at,
        updatedAt: at,
      }
    })
    const vault: VaultDocument = {
      version: FORMAT_VERSION,
      userId: id,
      dataKey,
      categories: [category],
      entries,
      twoFactor: [],
      envProjects: [],
      envFiles: [],
      versions: [],
      trash: [],
    }
    writeFileSync(join(dataDir, 'vaults', `${id}.json`), JSON.stringify(vault), { mode: 0o600 })
  }
  writeFileSync(join(dataDir, 'accounts.json'), JSON.stringify(document), { mode: 0o600 })
  return seeded
}

/** One user whose vault holds `count` entries in 10 categories. */
export async function seedBigVault(
  dataDir: string,
  masterKey: string,
  count: number,
): Promise<{ key: string; userId: string; categoryId: string; entryIds: string[] }> {
  const seeded = await seedAccounts(dataDir, masterKey, 1)
  const userId = seeded.userIds[0]
  const path = join(dataDir, 'vaults', `${userId}.json`)
  const vault = JSON.parse(readFileSync(path, 'utf8')) as Draft<VaultDocument>
  const keyring = new Keyring(new Uint8Array(Buffer.from(masterKey, 'base64')))
  const cipher = keyring.vault(userId, vault.dataKey)
  const at = new Date().toISOString()
  const categories = Array.from(
    { length: 10 },
    (_, c): CategoryRecord => ({
      id: crypto.randomUUID(),
      userId,
      name: `Service ${c}`,
      keyType: 'simple',
      envVarName: `SERVICE_${c}_KEY`,
      icon: null,
      description: null,
      fieldDefinitions: null,
      createdAt: at,
      updatedAt: at,
    }),
  )
  vault.categories = categories
  vault.entries = Array.from({ length: count }, (_, i): EntryRecord => {
    const category = categories[i % categories.length]
    const id = crypto.randomUUID()
    return {
      id,
      categoryId: category.id,
      name: `project-${i}`,
      environment: 'production',
      notes: null,
      encryptedValue: sealEntryValue(cipher, category, id, `sk_live_${i}_${'x'.repeat(24)}`),
      createdAt: at,
      updatedAt: at,
    }
  })
  writeFileSync(path, JSON.stringify(vault), { mode: 0o600 })
  return { key: seeded.keys[0], userId, categoryId: categories[0].id, entryIds: vault.entries.map((e) => e.id) }
}

// ---------------------------------------------------------------------------------------------
// Measuring

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

/** p50 of `count` sequential calls of `call` (ms). */
async function p50Of(count: number, call: (i: number) => Promise<Response>): Promise<number> {
  const times: number[] = []
  for (let i = 0; i < count; i++) {
    const since = performance.now()
    const response = await call(i)
    await response.arrayBuffer()
    if (response.status >= 300) throw new Error(`answered ${response.status}`)
    times.push(performance.now() - since)
  }
  return median(times)
}

const json = (method: string, headers: Record<string, string>, body?: unknown): RequestInit => ({
  method,
  headers: { 'content-type': 'application/json', ...headers },
  body: body === undefined ? undefined : JSON.stringify(body),
})

async function login(url: string, email: string): Promise<string> {
  const response = await fetch(`${url}/api/auth/login`, json('POST', {}, { email, password: PASSWORD }))
  await response.arrayBuffer()
  const cookie = /svc_session=([^;]+)/.exec(response.headers.getSetCookie().join('\n'))?.[1]
  if (!cookie) throw new Error(`login answered ${response.status}`)
  return cookie
}

interface AccountsRow {
  users: number
  startMs: number
  idleRssMb: number
  keyCreateP50: number
  registerP50: number
  loginP50: number
  revealP99WhileKeysCreated: number
  revealP99Alone: number
  rssAfterListsMb: number
  openVaults: string
}

async function measureAccounts(work: string, masterKey: string, users: number, smoke: boolean): Promise<AccountsRow> {
  const dataDir = join(work, `accounts-${users}`)
  const seeded = await seedAccounts(dataDir, masterKey, users)
  const starts: number[] = []
  for (let i = 0; i < (smoke ? 1 : 3); i++) {
    const { server, startMs } = await startService(dataDir, masterKey, seeded.keys[0])
    starts.push(startMs)
    await server.stop()
  }
  const { server } = await startService(dataDir, masterKey, seeded.keys[0])
  try {
    await Bun.sleep(smoke ? 1200 : 3000)
    const idleRssMb = rssMb(server.pid)
    const cookie = await login(server.url, seeded.emails[0])
    const session = { cookie: `svc_session=${cookie}` }
    const keyCreateP50 = await p50Of(smoke ? 10 : 200, (i) =>
      fetch(`${server.url}/api/access-keys`, json('POST', session, { name: `k${i}`, scopes: ['stats:read'] })),
    )
    const registerP50 = await p50Of(smoke ? 3 : 20, (i) =>
      fetch(`${server.url}/api/auth/register`, json('POST', {}, { email: `new-${i}-${users}@example.test`, password: PASSWORD })),
    )
    const loginP50 = await p50Of(smoke ? 3 : 20, (i) =>
      fetch(`${server.url}/api/auth/login`, json('POST', {}, { email: seeded.emails[(i * 7919) % users], password: PASSWORD })),
    )
    // Reveals of one user (wrk) alone, then while another user creates keys back to back.
    const reader = seeded.keys[users > 1 ? 1 : 0]
    const entries = await (await fetch(`${server.url}/api/entries`, { headers: { authorization: `Bearer ${reader}` } })).json()
    const revealPaths = (entries as { id: string }[]).map((e) => `/api/entries/${e.id}/reveal`)
    const revealLoad = () =>
      wrk(server.url, { connections: 8, seconds: smoke ? 1 : 5, method: 'POST', paths: revealPaths, headers: { authorization: `Bearer ${reader}` } })
    const alone = revealLoad()
    let creating = true
    const creator = (async () => {
      for (let i = 0; creating; i++) {
        const response = await fetch(`${server.url}/api/access-keys`, json('POST', session, { name: `busy${i}`, scopes: ['stats:read'] }))
        await response.arrayBuffer()
      }
    })()
    const busy = revealLoad()
    creating = false
    await creator
    // One list by every user (32 at a time), then the process's memory.
    let next = 0
    const lister = async () => {
      while (next < users) {
        const response = await fetch(`${server.url}/api/entries`, { headers: { cookie: `svc_session=${seeded.cookies[next++]}` } })
        await response.arrayBuffer()
        if (response.status !== 200) throw new Error(`list answered ${response.status}`)
      }
    }
    await Promise.all(Array.from({ length: 32 }, lister))
    await Bun.sleep(smoke ? 1000 : 5000)
    return {
      users,
      startMs: median(starts),
      idleRssMb,
      keyCreateP50,
      registerP50,
      loginP50,
      revealP99WhileKeysCreated: busy.p99,
      revealP99Alone: alone.p99,
      rssAfterListsMb: rssMb(server.pid),
      openVaults: 'SVC_OPEN_VAULTS default 1000',
    }
  } finally {
    await server.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

interface VaultRow {
  entries: number
  writeP50: number
  revealAfterWriteP50: number
  revealP50: number
  listMs: number
  listMb: number
  pageMs: number
}

async function measureVault(work: string, masterKey: string, count: number, smoke: boolean): Promise<VaultRow> {
  const dataDir = join(work, `vault-${count}`)
  const seeded = await seedBigVault(dataDir, masterKey, count)
  const { server } = await startService(dataDir, masterKey, seeded.key)
  const auth = { authorization: `Bearer ${seeded.key}` }
  try {
    // First list opens the vault.
    await (await fetch(`${server.url}/api/entries`, { headers: auth })).arrayBuffer()
    const writes = smoke ? 10 : 300
    const writeP50 = await p50Of(writes, (i) =>
      fetch(
        `${server.url}/api/entries`,
        json('POST', auth, { categoryId: seeded.categoryId, name: `bench-write-${i}`, value: 'sk_bench_value', environment: 'production' }),
      ),
    )
    const pick = (i: number) => seeded.entryIds[(i * 7919) % seeded.entryIds.length]
    const revealP50 = await p50Of(writes, (i) => fetch(`${server.url}/api/entries/${pick(i)}/reveal`, { method: 'POST', headers: auth }))
    const afterWrite: number[] = []
    for (let i = 0; i < (smoke ? 5 : 100); i++) {
      await (
        await fetch(
          `${server.url}/api/entries`,
          json('POST', auth, { categoryId: seeded.categoryId, name: `bench-after-${i}`, value: 'sk_bench_value', environment: 'production' }),
        )
      ).arrayBuffer()
      afterWrite.push(await p50Of(1, () => fetch(`${server.url}/api/entries/${pick(i)}/reveal`, { method: 'POST', headers: auth })))
    }
    const listTimes: number[] = []
    let listBytes = 0
    for (let i = 0; i < 5; i++) {
      const since = performance.now()
      const body = await (await fetch(`${server.url}/api/entries`, { headers: auth })).arrayBuffer()
      listTimes.push(performance.now() - since)
      listBytes = body.byteLength
    }
    const pageP50 = await p50Of(20, () => fetch(`${server.url}/api/entries?limit=100`, { headers: auth }))
    return { entries: count, writeP50, revealAfterWriteP50: median(afterWrite), revealP50, listMs: median(listTimes), listMb: listBytes / 1e6, pageMs: pageP50 }
  } finally {
    await server.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

interface WrkRow {
  scenario: string
  service: WrkResult
  baseline: WrkResult
  ratio: number
}

/** Entry reveal and list at 32 connections, service against the bare baseline, alternating rounds. */
async function measureAgainstBaseline(work: string, masterKey: string, smoke: boolean): Promise<WrkRow[]> {
  const main = await seedMainVault(
    join(work, 'wrk-main'),
    masterKey,
    smoke ? SMOKE_SIZES : { ...SMOKE_SIZES, categories: 100, entries: 1000, twoFactor: 50, envProjects: 0, users: 0 },
  )
  const fixturePath = join(work, 'wrk-fixture.json')
  writeFileSync(fixturePath, JSON.stringify(main.baseline))
  const unauditedDir = join(work, 'wrk-main-unaudited')
  cpSync(main.dataDir, unauditedDir, { recursive: true })
  const { server: service } = await startService(main.dataDir, masterKey, main.key)
  // The same service with its audit log off (SVC_AUDIT=off, a switch for benchmarks only): a reveal
  // as shipped waits for its audit event's disk sync, which the baseline does not do.
  const { server: unaudited } = await startService(unauditedDir, masterKey, main.key, { SVC_AUDIT: 'off' })
  const baseline = startBun(['bench/baseline-server.ts'], { BENCH_FIXTURE: fixturePath, BENCH_DATA_DIR: join(work, 'wrk-baseline') })
  for (let i = 0; ; i++) {
    const ok = await fetch(`${baseline.url}/api/stats`, { headers: { authorization: `Bearer ${main.key}` } }).then(
      (r) => r.status === 200,
      () => false,
    )
    if (ok) break
    if (i > 5000) throw new Error(`baseline did not start: ${baseline.output()}`)
    await Bun.sleep(2)
  }
  const headers = { authorization: `Bearer ${main.key}` }
  const revealPaths = main.entryIds.slice(0, 64).map((id) => `/api/entries/${id}/reveal`)
  const scenarios = [
    { scenario: 'POST /api/entries/{id}/reveal', method: 'POST', paths: revealPaths, service },
    { scenario: 'POST /api/entries/{id}/reveal, audit log off', method: 'POST', paths: revealPaths, service: unaudited },
    { scenario: 'GET /api/entries', method: 'GET', paths: ['/api/entries'], service },
  ]
  const rows: WrkRow[] = []
  try {
    for (const s of scenarios) {
      const run = (url: string) => wrk(url, { connections: 32, seconds: smoke ? 1 : 4, method: s.method, paths: s.paths, headers })
      // Warm both, then alternate so that a drift of the machine's speed hits both alike.
      run(s.service.url)
      run(baseline.url)
      const serviceRuns: WrkResult[] = []
      const baselineRuns: WrkResult[] = []
      for (let round = 0; round < (smoke ? 1 : 3); round++) {
        serviceRuns.push(run(s.service.url))
        baselineRuns.push(run(baseline.url))
      }
      const pick = (runs: WrkResult[]) => runs.sort((a, b) => a.rps - b.rps)[Math.floor(runs.length / 2)]
      const serviceResult = pick(serviceRuns)
      const baselineResult = pick(baselineRuns)
      rows.push({ scenario: s.scenario, service: serviceResult, baseline: baselineResult, ratio: serviceResult.rps / baselineResult.rps })
    }
  } finally {
    await service.stop()
    await unaudited.stop()
    await baseline.stop()
  }
  return rows
}

// ---------------------------------------------------------------------------------------------
// Output

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '-')

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)))
  const render = (cells: string[]) => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ')
  return [render(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(render)].join('\n')
}

export async function runScale(argv: string[]): Promise<void> {
  const value = (name: string) => argv.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1]
  const smoke = argv.includes('--smoke') || process.env.BENCH_SMOKE === '1'
  const userCounts = (value('users') ?? (smoke ? '20,50' : '100,10000,50000')).split(',').map(Number)
  const entryCounts = (value('entries') ?? (smoke ? '100,300' : '1000,10000,100000')).split(',').map(Number)
  const out = resolve(value('out') ?? (smoke ? join(tmpdir(), `svc-vault-scale-smoke-${process.pid}.json`) : join(ROOT, 'bench', 'results', 'scale.json')))
  const skip = new Set((value('skip') ?? '').split(','))
  const started = performance.now()
  const log = (line: string) => console.error(`[scale ${((performance.now() - started) / 1000).toFixed(1)}s] ${line}`)
  ensureWrk()
  const build = Bun.spawnSync(['bun', 'run', 'build'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  if (build.exitCode !== 0) throw new Error(`bun run build failed: ${build.stderr.toString()}`)
  const work = mkdtempSync(join(tmpdir(), 'svc-vault-scale-'))
  const masterKey = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')
  const result: { accounts: AccountsRow[]; vault: VaultRow[]; wrk: WrkRow[] } = { accounts: [], vault: [], wrk: [] }
  try {
    if (!skip.has('accounts')) {
      for (const users of userCounts) {
        log(`accounts: ${users} users...`)
        result.accounts.push(await measureAccounts(work, masterKey, users, smoke))
      }
    }
    if (!skip.has('vault')) {
      for (const count of entryCounts) {
        log(`one vault: ${count} entries...`)
        result.vault.push(await measureVault(work, masterKey, count, smoke))
      }
    }
    if (!skip.has('wrk')) {
      log('wrk at 32 connections against the baseline...')
      result.wrk = await measureAgainstBaseline(work, masterKey, smoke)
    }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
  if (result.accounts.length > 0) {
    console.log('\nAccounts (p50 in ms; RSS in MB)')
    console.log(
      table(
        ['users', 'start ms', 'idle RSS', 'key create', 'register', 'login', 'reveal p99', 'reveal p99 (keys created)', 'RSS after lists'],
        result.accounts.map((r) => [
          String(r.users),
          fmt(r.startMs, 0),
          fmt(r.idleRssMb),
          fmt(r.keyCreateP50, 2),
          fmt(r.registerP50, 1),
          fmt(r.loginP50, 1),
          fmt(r.revealP99Alone, 2),
          fmt(r.revealP99WhileKeysCreated, 2),
          fmt(r.rssAfterListsMb),
        ]),
      ),
    )
  }
  if (result.vault.length > 0) {
    console.log('\nOne vault (ms)')
    console.log(
      table(
        ['entries', 'write p50', 'reveal after write', 'reveal p50', 'whole list', 'list MB', 'page of 100'],
        result.vault.map((r) => [
          String(r.entries),
          fmt(r.writeP50, 2),
          fmt(r.revealAfterWriteP50, 2),
          fmt(r.revealP50, 2),
          fmt(r.listMs, 1),
          fmt(r.listMb, 2),
          fmt(r.pageMs, 2),
        ]),
      ),
    )
  }
  if (result.wrk.length > 0) {
    console.log('\nwrk, 1 thread, 32 connections (median of rounds)')
    console.log(
      table(
        ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'base req/s', 'base p99', 'ratio'],
        result.wrk.map((r) => [
          r.scenario,
          fmt(r.service.rps, 0),
          fmt(r.service.p50, 2),
          fmt(r.service.p99, 2),
          fmt(r.baseline.rps, 0),
          fmt(r.baseline.p99, 2),
          fmt(r.ratio, 2),
        ]),
      ),
    )
  }
  mkdirSync(dirname(out), { recursive: true })
  writeFileSync(out, JSON.stringify({ at: new Date().toISOString(), smoke, ...result }, null, 2))
  console.log(`\nwritten to ${out}`)
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    for (const server of liveProcesses) server.proc.kill('SIGKILL')
    process.exit(130)
  })
}
