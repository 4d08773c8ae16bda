// svc run: CMD with the vault's variables added to its environment. No shell: CMD and its
// arguments go to exec as given. Standard streams are inherited; SIGINT, SIGTERM, SIGHUP and
// SIGQUIT (and SIGUSR1/2) are passed on; svc ends the way CMD ended (its exit code, or the same
// signal). --watch polls the export with a conditional request and restarts CMD when the
// variables change; --mount also writes them as a dotenv file (0600, atomic) that is removed
// when CMD exits.
import { type ChildProcess, spawn } from 'node:child_process'
import { rmSync } from 'node:fs'
import type { Writable } from 'node:stream'
import { isatty } from 'node:tty'
import { envLine } from '../../modules/export/render'
import { VaultClient } from './client'
import { dropFallbacks, hasFallback, loadFallback, readFallback, saveFallback, selectionKey } from './fallback'
import { Masker } from './mask'
import { CliError, escapeControl, isCliError } from './errors'
import { refusedHooks } from './env-hooks'
import { writeSecretFile } from './files'
import { planRun, takeStartedRun } from './run-plan'
import { resolveEnvironment } from './templates'
import { describeSelection, fetchExport, fetchExportUnparsed, withProject, type Variables } from './variables'

/**
 * An offline copy the vault's answer confirms (same ETag) is written again, to date it anew, only
 * when it is older than this: its age then says at most this much more than the last answer's.
 */
const RESEAL_AFTER_MS = 60_000
/** After SIGTERM on a restart, CMD has this long to stop before SIGKILL. */
const RESTART_GRACE_MS = 5_000
/** Signals that usually end a program: passed on, and svc then ends as CMD does. */
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const
type Forwarded = (typeof FORWARDED)[number]
/** Signals programs use for their own purposes (reload, rotate logs): passed on only. */
const PASSED_ON = ['SIGUSR1', 'SIGUSR2'] as const

/**
 * The child's environment: the vault's variables added; ones already set win unless `override`.
 * svc's own key (SVC_TOKEN) stays out unless `passToken`: the command has no need of it, and it
 * would otherwise reach everything the command starts.
 */
export function childEnvironment(variables: Variables, override: boolean, base: NodeJS.ProcessEnv = process.env, passToken = false): Record<string, string> {
  // The vault's variables (thousands) copied by Object.assign (native code) rather than a loop:
  // run once, before the JIT warms up, a loop over 2,000 names costs Node a few milliseconds.
  const own = ownVariables(base, passToken)
  return override ? Object.assign(own, variables) : Object.assign(Object.assign({}, variables), own)
}

/** svc's own environment as the child gets it: no undefined values; SVC_TOKEN only with --pass-token. */
function ownVariables(base: NodeJS.ProcessEnv, passToken: boolean): Record<string, string> {
  const own: Record<string, string> = {}
  for (const name in base) {
    const value = base[name]
    if (Object.hasOwn(base, name) && value !== undefined && (passToken || name !== 'SVC_TOKEN')) own[name] = value
  }
  return own
}

export const dotenvText = (variables: Variables) =>
  Object.entries(variables)
    .map(([name, value]) => envLine(name, value) + '\n')
    .join('')

const sameVariables = (a: Variables, b: Variables) => {
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && a[key] === b[key])
}

function formatAge(ms: number): string {
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`
  return `${Math.round(ms / 3_600_000)} h`
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))

interface Child {
  kill(signal: NodeJS.Signals): void
  /** How CMD ended. */
  exited: Promise<{ code: number | null; signal: string | null }>
  /** Its masked output is all written (at once when not masked). */
  drained: Promise<void>
}

/** Output through the masker to `target`, held tails written when the stream ends. */
function pipeMasked(from: NodeJS.ReadableStream, masker: Masker, target: Writable): Promise<void> {
  return new Promise((done) => {
    from.on('data', (chunk: Buffer) => {
      const bytes = masker.push(chunk)
      if (bytes.length) target.write(bytes)
    })
    from.on('end', () => {
      const rest = masker.end()
      if (rest.length) target.write(rest)
      done()
    })
    from.on('error', () => done())
  })
}

/** CMD started with node:child_process (the CLI runs on Node as well as on Bun). */
function startChild(command: string[], env: Record<string, string>, mask: { out: Masker; err: Masker } | null): Promise<Child> {
  return new Promise((started, failed) => {
    const proc: ChildProcess = spawn(command[0], command.slice(1), { stdio: ['inherit', mask ? 'pipe' : 'inherit', mask ? 'pipe' : 'inherit'], env })
    const exited = new Promise<{ code: number | null; signal: string | null }>((done) => proc.once('exit', (code, signal) => done({ code, signal })))
    const drained = mask
      ? Promise.all([pipeMasked(proc.stdout!, mask.out, process.stdout), pipeMasked(proc.stderr!, mask.err, process.stderr)]).then(() => {})
      : Promise.resolve()
    proc.once('error', failed)
    proc.once('spawn', () => {
      proc.off('error', failed)
      // A later error (a signal to a process already gone) is not svc's failure.
      proc.on('error', () => {})
      started({ kill: (signal) => void proc.kill(signal), exited, drained })
    })
  })
}

const SIGNAL_NUMBERS: Record<string, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGABRT: 6,
  SIGKILL: 9,
  SIGUSR1: 10,
  SIGSEGV: 11,
  SIGUSR2: 12,
  SIGPIPE: 13,
  SIGTERM: 15,
}

export async function run(argv: string[]): Promise<never> {
  // The served file has planned the run and sent its first request already (run-plan.ts).
  const started = takeStartedRun(argv)
  const plan = started?.plan ?? planRun(argv)
  const { command, selection, override, watch, intervalMs, passToken, allowed, mountPath, masking, maxAgeMs, creds } = plan
  const refusal = (names: string[]) =>
    `the vault sets ${names.join(', ')}, which make${names.length === 1 ? 's' : ''} programs load or run other code: refused (if you trust ${names.length === 1 ? 'it' : 'them'}, add ${names.map((name) => `--allow-env ${name}`).join(' ')})`
  const client = started?.client ?? VaultClient.signedIn(creds, plan.vault)
  const cacheKey = { url: creds.url, key: creds.key }
  const cacheSelection = selectionKey(selection)
  /** A key the vault refused must not keep working from a cache. */
  const forgetIfRefused = (error: unknown) => {
    if (isCliError(error) && (error.status === 401 || error.status === 403)) dropFallbacks(cacheKey)
  }
  let exported: Variables
  let etag: string | null
  let variables: Variables
  let keepCopy: (() => void) | null = null
  const firstAnswer = started?.first ?? fetchExportUnparsed(client, selection)
  // Read while the vault answers. An answer with the copy's ETag holds the copy's values: its
  // text is not parsed, and the copy is not written again unless it is RESEAL_AFTER_MS old.
  const copy = maxAgeMs > 0 && selection.project === undefined ? readFallback(cacheKey, cacheSelection) : null
  const ownEnv = Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined))
  // Also while the vault answers: the checks and the environment the copy's values make, used
  // only if the answer confirms the copy (the same objects below, compared by identity).
  const ready = copy && {
    variables: copy.variables,
    hooks: refusedHooks(Object.keys(copy.variables), allowed),
    env: childEnvironment(copy.variables, override, ownEnv, passToken),
  }
  try {
    const first = (await firstAnswer)!
    const confirmed = copy !== null && copy.etag !== null && first.etag === copy.etag
    exported = confirmed ? copy.variables : first.variables
    etag = first.etag
    variables = await withProject(client, selection, exported)
    if ((selection.name || selection.environment) && Object.keys(exported).length === 0) {
      throw new CliError(`nothing matched: the export of ${describeSelection(selection)} holds no variable`)
    }
    // Kept once the command has started, so that the copy's encryption and write overlap it. The
    // ETag only for the export as it came: an env project file's variables are not in it.
    const copyEtag = selection.project === undefined ? etag : null
    if (maxAgeMs > 0 && !(confirmed && Date.now() - copy.savedAt < RESEAL_AFTER_MS)) {
      keepCopy = () => saveFallback(cacheKey, cacheSelection, variables, Date.now(), process.env, copyEtag)
    }
  } catch (error) {
    forgetIfRefused(error)
    if (!(isCliError(error) && error.unreachable)) throw error
    const cached = loadFallback(cacheKey, cacheSelection, maxAgeMs)
    if (!cached) {
      // Said only when there is a copy that could not be used; otherwise the plain failure.
      if (!hasFallback(cacheKey, cacheSelection)) throw error
      const why = maxAgeMs > 0 ? `the offline copy is older than ${formatAge(maxAgeMs)} (--fallback-max-age)` : 'the offline copy is off (--fallback-max-age 0)'
      throw new CliError(`${error.message}; ${why}`)
    }
    process.stderr.write(
      `svc: ${error.message}; running with the offline copy from ${new Date(cached.savedAt).toISOString()} (${formatAge(Date.now() - cached.savedAt)} old)\n`,
    )
    exported = cached.variables
    etag = null
    variables = cached.variables
  }
  // Values of the form svc://NAME/ENV/VARIABLE in svc's own environment name a vault variable.
  const baseEnv = await resolveEnvironment(client, ownEnv)
  const prepared = ready && variables === ready.variables && baseEnv === ownEnv ? ready : null
  const masker = masking
    ? (current: Variables) => {
        const values = [
          ...Object.values(current),
          ...Object.entries(baseEnv)
            .filter(([name, value]) => process.env[name] !== value)
            .map(([, value]) => value),
        ]
        return { out: new Masker(values), err: new Masker(values) }
      }
    : null
  // Before anything is written or started.
  const hooks = prepared?.hooks ?? refusedHooks(Object.keys(variables), allowed)
  if (hooks.length > 0) throw new CliError(refusal(hooks))

  let mounted = false
  const unmount = () => {
    if (!mounted) return
    mounted = false
    rmSync(mountPath!, { force: true })
  }
  const mount = () => {
    if (mountPath === undefined) return
    writeSecretFile(mountPath, dotenvText(variables))
    mounted = true
  }
  let child: Child | undefined
  let stopping: Forwarded | null = null
  let restarting = false
  // CMD has ended for good: an in-flight poll must not start it again.
  let finished = false
  // Ctrl-C at a terminal sends SIGINT to the whole foreground process group, CMD included: passing
  // it on as well would make it two, which many programs read as "force quit".
  const terminalDeliversSigint = isatty(0)
  for (const signal of FORWARDED) {
    process.on(signal, () => {
      stopping = signal
      if (signal === 'SIGINT' && terminalDeliversSigint) return
      child?.kill(signal)
    })
  }
  // Handled too, so that they never end svc itself before it removes a --mount file.
  for (const signal of PASSED_ON) process.on(signal, () => child?.kill(signal))
  // The last resort: whatever path ends this process (short of SIGKILL) removes the file.
  process.on('exit', unmount)
  try {
    mount()
  } catch (error) {
    throw new CliError(`--mount: cannot write ${mountPath}: ${(error as Error).message}`)
  }

  const start = async () => {
    try {
      const env = prepared && variables === prepared.variables ? prepared.env : childEnvironment(variables, override, baseEnv, passToken)
      child = await startChild(command, env, masker ? masker(variables) : null)
      // A signal that came while svc was still fetching goes to CMD at once.
      if (stopping !== null) child.kill(stopping)
    } catch (error) {
      unmount()
      const code = (error as NodeJS.ErrnoException).code
      const message = (error as Error).message ?? String(error)
      if (code === 'ENOENT' || /not found|ENOENT/i.test(message)) throw new CliError(`command not found: ${command[0]}`, 127)
      throw new CliError(`cannot run ${command[0]}: ${message.split('\n')[0]}`, 126)
    }
    return child
  }

  let pollTimer: ReturnType<typeof setTimeout> | undefined
  let lastWarning = ''
  const poll = async () => {
    try {
      const answer = await fetchExport(client, selection, etag)
      if (answer) {
        exported = answer.variables
        etag = answer.etag
      }
      // An env project has no ETag: with --project its file is read on every poll.
      const next = answer || selection.project ? await withProject(client, selection, exported) : variables
      // New hook variables: the command keeps its current values (said once, as other failures).
      const newHooks = refusedHooks(Object.keys(next), allowed)
      if (newHooks.length > 0) throw new CliError(refusal(newHooks))
      lastWarning = ''
      if (!sameVariables(next, variables) && stopping === null && !finished) {
        variables = next
        mount()
        process.stderr.write('svc: the variables changed in the vault; restarting the command\n')
        await restart()
      }
    } catch (error) {
      forgetIfRefused(error)
      const message = isCliError(error) ? error.message : String((error as Error)?.message ?? error)
      if (message !== lastWarning) process.stderr.write(`svc: watch: ${escapeControl(message)}; the command keeps its current values\n`)
      lastWarning = message
    }
    if (stopping === null && !finished) pollTimer = setTimeout(poll, intervalMs)
  }

  const restart = async () => {
    restarting = true
    const old = child!
    old.kill('SIGTERM')
    const killer = setTimeout(() => old.kill('SIGKILL'), RESTART_GRACE_MS)
    await old.exited
    clearTimeout(killer)
    restarting = false
    if (stopping === null && !finished) await start()
  }

  await start()
  keepCopy?.()
  if (watch) pollTimer = setTimeout(poll, intervalMs)

  // Wait for a child exit that is not a restart's.
  for (;;) {
    const current = child!
    await current.exited
    if (restarting || current !== child!) {
      // A restart is under way or done: wait for the new child.
      while (restarting) await sleep(10)
      if (stopping === null) continue
    }
    break
  }
  finished = true
  clearTimeout(pollTimer)
  unmount()
  const ended = await child!.exited
  await child!.drained
  const signal = ended.signal
  if (signal) {
    // End the same way, so whoever waits on svc sees what CMD did.
    process.removeAllListeners(signal)
    process.kill(process.pid, signal as NodeJS.Signals)
    await sleep(100)
    process.exit(128 + (SIGNAL_NUMBERS[signal] ?? 0))
  }
  process.exit(ended.code ?? 1)
}
