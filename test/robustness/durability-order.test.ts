// Durability order, seen from the kernel: the server runs under `strace -f`, and for every
// acknowledged write the trace must show its bytes written to disk and fsynced before the first
// byte of the 2xx answer leaves on the socket. A `kill -9` keeps the page cache, so only this
// test notices a missing fsync (or an answer sent before the fsync returned).
//
//  - a vault or accounts write: pwrite of the change log line (`<file>.log`), then fdatasync (or
//    fsync) of the log, and for a log the write created, fsync of its folder; accounts.json
//    itself is not rewritten for it (issue 19: an accounts write costs what changed);
//  - a rewrite (a vault file on creation or when its log is folded into it): write of the
//    temporary file, fsync of it, rename over the target, fsync of the folder.
//
// Requests and answers are matched by a unique header in each request (seen in `recvfrom`) and
// the first send on the same socket after it; files by the paths strace's `-yy` shows for fds.
import { afterAll, expect } from 'bun:test'
import { spawnSync } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { signUp, uniqueEmail, PASSWORD, Client, type Answer } from '../support/client'
import { missingCommand, testNeeding } from '../support/requirements'
import { removeDir, ROOT, tempDir, TEST_MASTER_KEY } from '../support/server'
import { modules } from './support'

const TRACED = 'write,pwrite64,writev,pwritev,pwritev2,fsync,fdatasync,rename,renameat,renameat2,sendto,sendmsg,recvfrom,recvmsg'

const dirs: string[] = []
let stopServer: (() => Promise<void>) | undefined
afterAll(async () => {
  await stopServer?.()
  for (const dir of dirs) removeDir(dir)
})

interface Event {
  pid: string
  name: string
  /** Everything between the parentheses (and after, for a resumed call). */
  text: string
  /** Line where the call began and where it returned. */
  start: number
  end: number
}

/** The calls of an `strace -f` output, an unfinished call joined with its resumption. */
function parseTrace(output: string): Event[] {
  const events: Event[] = []
  const pending = new Map<string, Event>()
  const lines = output.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = /^(\d+)\s+(.*)$/.exec(lines[i])
    if (!line) continue
    const [, pid, rest] = line
    const resumed = /^<\.\.\. (\w+) resumed>(.*)$/.exec(rest)
    if (resumed) {
      const event = pending.get(pid)
      if (event && event.name === resumed[1]) {
        event.text += resumed[2]
        event.end = i
        pending.delete(pid)
      }
      continue
    }
    const call = /^(\w+)\((.*)$/.exec(rest)
    if (!call) continue
    const event: Event = { pid, name: call[1], text: call[2], start: i, end: i }
    events.push(event)
    if (call[2].endsWith('<unfinished ...>')) {
      event.end = Number.POSITIVE_INFINITY
      pending.set(pid, event)
    }
  }
  return events
}

/** The path `-yy` shows for the call's first argument (a file, a folder or TCP:[a->b]). */
const fdPath = (event: Event) => /^\d+<(TCP:\[[^\]]*\]|[^>]*)>/.exec(event.text)?.[1]
/** The call's first string argument, as strace escaped it. */
const firstString = (event: Event) => /"((?:[^"\\]|\\.)*)"/.exec(event.text)?.[1] ?? ''
const strings = (event: Event) => [...event.text.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1])
const succeeded = (event: Event) => /\)\s+= \d+/.test(event.text)

const WRITES = new Set(['write', 'pwrite64', 'writev', 'pwritev', 'pwritev2'])
const SYNCS = new Set(['fsync', 'fdatasync'])
const SENDS = new Set(['sendto', 'sendmsg', 'write', 'writev'])
const RENAMES = new Set(['rename', 'renameat', 'renameat2'])

type Durable =
  /** An append to `<file>.log`; `newLog`: the append creates the log (its folder is fsynced). */
  | { kind: 'append'; file: string; marker: string; newLog?: boolean }
  /** An atomic rewrite of `file` (with the marker in it, when given). */
  | { kind: 'rewrite'; file: string; marker?: string }
  /** No temporary file of `file` is written between the request and its answer (an append only). */
  | { kind: 'noRewrite'; file: string }

interface Step {
  label: string
  /** Unique: sent as the x-trace header. */
  tag: string
  answer: Answer
  durable: Durable[]
}

/** What is wrong with one acknowledged step in the trace; empty when its order is right. */
function checkStep(events: Event[], step: Step): string[] {
  const problems: string[] = []
  const received = events.find((e) => (e.name === 'recvfrom' || e.name === 'recvmsg') && firstString(e).includes(`x-trace: ${step.tag}`))
  if (!received) return [`${step.label}: its request is not in the trace`]
  const socket = fdPath(received)
  const sent = events.find((e) => SENDS.has(e.name) && e.start > received.end && fdPath(e) === socket)
  if (!sent) return [`${step.label}: no answer on ${socket} in the trace`]
  if (!firstString(sent).startsWith('HTTP/1.1 2')) return [`${step.label}: the answer is not 2xx: ${firstString(sent).slice(0, 40)}`]
  const before = (e: Event) => e.end < sent.start
  const on = (path: string) => (e: Event) => fdPath(e) === path
  const tempOf = (file: string) => (path: string | undefined) =>
    !!path && dirname(path) === dirname(file) && basename(path).startsWith(`.${basename(file)}.`) && path.endsWith('.tmp')
  for (const durable of step.durable) {
    if (durable.kind === 'noRewrite') {
      const temp = tempOf(durable.file)
      const rewrite = events.find((e) => WRITES.has(e.name) && temp(fdPath(e)) && e.start > received.end && before(e))
      if (rewrite) problems.push(`${step.label}: ${basename(durable.file)} was rewritten whole (${basename(fdPath(rewrite)!)}) rather than only logged`)
    } else if (durable.kind === 'append') {
      const log = `${durable.file}.log`
      const written = events.find((e) => WRITES.has(e.name) && on(log)(e) && firstString(e).includes(durable.marker) && succeeded(e))
      if (!written) {
        problems.push(`${step.label}: no write of ${durable.marker} to ${log}`)
        continue
      }
      if (!before(written)) problems.push(`${step.label}: answered before its log line was written`)
      const synced = events.find((e) => SYNCS.has(e.name) && on(log)(e) && e.start > written.end && before(e) && succeeded(e))
      if (!synced) problems.push(`${step.label}: answered without an fdatasync/fsync of ${log} after its line was written`)
      if (durable.newLog) {
        const dir = events.find((e) => e.name === 'fsync' && on(dirname(log))(e) && e.start > written.end && before(e) && succeeded(e))
        if (!dir) problems.push(`${step.label}: answered before the folder of the new ${basename(log)} was fsynced`)
      }
    } else {
      const temp = tempOf(durable.file)
      const written = events.filter(
        (e) => WRITES.has(e.name) && temp(fdPath(e)) && (!durable.marker || firstString(e).includes(durable.marker)) && succeeded(e) && before(e),
      )
      if (written.length === 0) {
        problems.push(`${step.label}: no write of a temporary file for ${durable.file}${durable.marker ? ` holding ${durable.marker}` : ''} before the answer`)
        continue
      }
      // The last such rewrite before the answer must be complete: fsync, rename, fsync of the folder.
      const last = written[written.length - 1]
      const tempPath = fdPath(last)!
      const synced = events.find((e) => SYNCS.has(e.name) && on(tempPath)(e) && e.start > last.end && before(e) && succeeded(e))
      if (!synced) {
        problems.push(`${step.label}: answered without an fsync of ${basename(tempPath)} after it was written`)
        continue
      }
      const renamed = events.find(
        (e) => RENAMES.has(e.name) && e.start > synced.end && before(e) && succeeded(e) && strings(e)[0] === tempPath && strings(e)[1] === durable.file,
      )
      if (!renamed) {
        problems.push(`${step.label}: answered without renaming ${basename(tempPath)} over ${basename(durable.file)} after its fsync`)
        continue
      }
      const dir = events.find((e) => e.name === 'fsync' && on(dirname(durable.file))(e) && e.start > renamed.end && before(e) && succeeded(e))
      if (!dir) problems.push(`${step.label}: answered before the folder of ${basename(durable.file)} was fsynced after the rename`)
    }
  }
  return problems
}

/** `bun src/index.ts` under `strace -f`, writing the trace to a file. */
async function spawnTraced(dataDir: string, traceFile: string) {
  const proc = Bun.spawn(['strace', '-f', '--seccomp-bpf', '-yy', '-s', '4000000', '-e', `trace=${TRACED}`, '-o', traceFile, 'bun', 'src/index.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', SVC_MASTER_KEY: TEST_MASTER_KEY, PORT: '0', SVC_SIGNUP: 'open', SVC_DATA_DIR: dataDir },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let output = ''
  void (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) output += decoder.decode(chunk)
  })()
  void (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of proc.stderr as ReadableStream<Uint8Array>) output += decoder.decode(chunk)
  })()
  const started = Date.now()
  let url = ''
  while (!url) {
    const match = /listening on (http:\/\/\S+)/.exec(output)
    if (match) url = match[1]
    else if (proc.exitCode !== null) throw new Error(`traced server exited with ${proc.exitCode}: ${output}`)
    else if (Date.now() - started > 30_000) throw new Error(`traced server did not start: ${output}`)
    else await Bun.sleep(20)
  }
  // strace's child is the server: SIGTERM goes to it (a signal to strace would only detach it).
  const server = Number(readFileSync(`/proc/${proc.pid}/task/${proc.pid}/children`, 'utf8').trim().split(/\s+/)[0])
  const stop = async () => {
    if (proc.exitCode !== null) return
    try {
      process.kill(server, 'SIGTERM')
    } catch {}
    await proc.exited
  }
  return { url, stop, output: () => output }
}

/** Why strace cannot trace here (not installed, or ptrace not permitted, as in some containers), or null. */
function straceMissing(): string | null {
  const missing = missingCommand('strace')
  if (missing) return missing
  const probe = spawnSync('strace', ['-f', '--seccomp-bpf', '-o', '/dev/null', '-e', 'trace=fsync', 'true'], { encoding: 'utf8' })
  return probe.status === 0 ? null : `strace cannot trace processes here: ${(probe.stderr ?? '').trim().split('\n')[0]}`
}

testNeeding(straceMissing())(
  'every acknowledged write is written and fsynced before its answer leaves (strace)',
  async () => {
    const dataDir = tempDir('svc-vault-strace-')
    dirs.push(dataDir)
    const traceFile = join(tempDir('svc-vault-trace-'), 'trace.txt')
    dirs.push(dirname(traceFile))
    const server = await spawnTraced(dataDir, traceFile)
    stopServer = server.stop
    const mods = await modules(server.url)
    const accounts = join(dataDir, 'accounts.json')
    const steps: Step[] = []
    let n = 0
    const tag = () => `trace-${++n}-${Math.random().toString(36).slice(2, 10)}`
    const step = async (
      label: string,
      run: (headers: Record<string, string>, tag: string) => Promise<Answer>,
      durable: (tag: string, answer: Answer) => Durable[],
    ) => {
      const t = tag()
      const answer = await run({ 'x-trace': t }, t)
      expect({ label, status: answer.status }).toEqual({ label, status: answer.status >= 200 && answer.status < 300 ? answer.status : 200 })
      steps.push({ label, tag: t, answer, durable: durable(t, answer) })
      return answer
    }

    // Accounts: every write appends what changed (the user, a session, a key) to accounts.json.log,
    // fdatasynced, and never rewrites accounts.json (the first one creates the log: its folder is
    // fsynced too). Registering also creates the user's vault (the start of its audit chain lives
    // there): the vault file (a rewrite) and its change log (a new file).
    const email = uniqueEmail('traced')
    const vaultOf = (answer: { body: { user: { id: string } } }) => join(dataDir, 'vaults', `${answer.body.user.id}.json`)
    const registered = await step(
      'register',
      (headers) => new Client(server.url).post('/api/auth/register', { email, password: PASSWORD }, headers),
      (_t, answer) => [
        { kind: 'append', file: accounts, marker: email, newLog: true },
        { kind: 'noRewrite', file: accounts },
        { kind: 'rewrite', file: vaultOf(answer) },
        { kind: 'append', file: vaultOf(answer), marker: 'auditChain', newLog: true },
      ],
    )
    const alice = new Client(server.url, { cookie: /svc_session=([^;]*)/.exec(registered.headers.getSetCookie().join('\n'))![1] })
    const vault = join(dataDir, 'vaults', `${registered.body.user.id}.json`)
    await step(
      'create an access key',
      (h, t) => alice.post('/api/access-keys', { name: t, scopes: ['stats:read'] }, h),
      (t) => [
        { kind: 'append', file: accounts, marker: t },
        { kind: 'noRewrite', file: accounts },
      ],
    )

    const first = await step(
      'first category',
      (h, t) => alice.post('/api/categories', { name: t, keyType: 'group' }, h),
      (t) => [{ kind: 'append', file: vault, marker: t }],
    )
    const second = await step(
      'second category',
      (h, t) => alice.post('/api/categories', { name: t, keyType: 'group' }, h),
      (t) => [{ kind: 'append', file: vault, marker: t }],
    )
    await step(
      'rename a category',
      (h, t) => alice.put(`/api/categories/${first.body.id}`, { name: t }, h),
      (t) => [{ kind: 'append', file: vault, marker: t }],
    )
    await step(
      'delete a category',
      (h) => alice.delete(`/api/categories/${second.body.id}`, h),
      () => [{ kind: 'append', file: vault, marker: second.body.id }],
    )
    if (mods.entries) {
      const category = await alice.post('/api/categories', { name: 'Keys', keyType: 'simple', envVarName: 'K' })
      await step(
        'create an entry',
        (h, t) => alice.post('/api/entries', { categoryId: category.body.id, name: t, value: 'secret' }, h),
        (t) => [{ kind: 'append', file: vault, marker: t }],
      )
    }
    // A log longer than 64 KiB and than the file is folded into the file by the next write:
    // appended first, then the vault file rewritten, both before the answer.
    const project = await alice.post('/api/envs', { name: 'big' })
    expect(project.status).toBe(201)
    expect((await alice.post(`/api/envs/${project.body.data.id}/files`, { fileType: 'env', content: `BIG=${'x'.repeat(80 * 1024)}\n` })).status).toBe(201)
    await step(
      'a write that folds the log into the vault file',
      (h, t) => alice.post('/api/categories', { name: t, keyType: 'group' }, h),
      (t) => [
        { kind: 'append', file: vault, marker: t },
        { kind: 'rewrite', file: vault, marker: t },
      ],
    )

    // Concurrent writes share commits: each is still answered only after its own line is synced.
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        step(
          `concurrent category ${i}`,
          (h, t) => alice.post('/api/categories', { name: t, keyType: 'group' }, h),
          (t) => [{ kind: 'append', file: vault, marker: t }],
        ),
      ),
    )
    const bob = await signUp(server.url)
    await Promise.all([
      step(
        'concurrent access key',
        (h, t) => bob.post('/api/access-keys', { name: t, scopes: ['stats:read'] }, h),
        (t) => [
          { kind: 'append', file: accounts, marker: t },
          { kind: 'noRewrite', file: accounts },
        ],
      ),
      step(
        'concurrent access key 2',
        (h, t) => alice.post('/api/access-keys', { name: t, scopes: ['stats:read'] }, h),
        (t) => [
          { kind: 'append', file: accounts, marker: t },
          { kind: 'noRewrite', file: accounts },
        ],
      ),
    ])

    await server.stop()
    stopServer = undefined
    const events = parseTrace(readFileSync(traceFile, 'utf8'))
    rmSync(traceFile, { force: true })
    expect(events.length).toBeGreaterThan(0)
    expect(steps.flatMap((s) => checkStep(events, s))).toEqual([])
  },
  90_000,
)
