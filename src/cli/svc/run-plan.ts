// svc run's options, checked before anything is sent, and its first request started early: the
// served file sends the export request as soon as the arguments are read, and loads the rest of
// itself (the child process, crypto and the other commands' code) while the vault answers. So this
// module and what it imports stay light: no node:child_process, no node:crypto.
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { parseArgs, str } from './args'
import { VaultClient } from './client'
import { credentials, type Credentials } from './config'
import { ENVIRONMENTS, environmentName } from './environments'
import { CliError, usageError } from './errors'
import { fetchExportUnparsed, type Fetched, type Selection } from './variables'

const DEFAULT_INTERVAL_S = 10
export const DEFAULT_FALLBACK_MAX_AGE_MS = 24 * 3600_000

export const RUN_OPTIONS = [
  { name: 'env', short: 'e', value: true },
  { name: 'name', short: 'n', value: true },
  { name: 'project', value: true },
  { name: 'file', value: true },
  { name: 'watch' },
  { name: 'interval', value: true },
  { name: 'mount', value: true },
  { name: 'override' },
  { name: 'mask' },
  { name: 'no-mask' },
  { name: 'fallback-max-age', value: true },
  { name: 'allow-env', value: true, repeat: true },
  { name: 'pass-token' },
  { name: 'vault', value: true },
]

export function selectionFrom(options: Record<string, string | boolean | undefined>): Selection {
  if (options.file !== undefined && options.project === undefined) throw usageError('--file needs --project')
  const raw = str(options.env)
  const environment = raw === undefined ? undefined : environmentName(raw)
  if (environment !== undefined && !(ENVIRONMENTS as readonly string[]).includes(environment)) {
    throw usageError(`-e takes ${ENVIRONMENTS.join(', ')} (or dev, stage, prod), got ${raw}`)
  }
  return { environment, name: str(options.name), project: str(options.project), file: str(options.file) }
}

function parseInterval(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_INTERVAL_S * 1000
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(raw.trim())
  const ms = match ? Number(match[1]) * (match[2] === 'ms' ? 1 : match[2] === 'm' ? 60_000 : 1000) : NaN
  if (!Number.isFinite(ms) || ms < 100 || ms > 86_400_000) throw usageError(`--interval must be seconds (e.g. 10, 2.5, 500ms, 1m), got ${raw}`)
  return ms
}

/** `--fallback-max-age`: 24h, 90m, 30s, 2d, or 0 (off); a bare number is seconds. */
export function parseMaxAge(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_FALLBACK_MAX_AGE_MS
  const match = /^(\d{1,9})(s|m|h|d)?$/.exec(raw.trim())
  if (!match) throw usageError(`--fallback-max-age must be a duration such as 24h, 90m or 0 (off), got ${raw}`)
  const unit = { s: 1000, m: 60_000, h: 3600_000, d: 86_400_000 }[match[2] ?? 's']!
  return Number(match[1]) * unit
}

/** CI=true, CI=1 and the like; unset, empty, 0 and false are off. */
const isSet = (value: string | undefined) => value !== undefined && value !== '' && !/^(0|false|no)$/i.test(value)

export interface RunPlan {
  command: string[]
  selection: Selection
  override: boolean
  watch: boolean
  intervalMs: number
  passToken: boolean
  allowed: Set<string>
  mountPath: string | undefined
  masking: boolean
  maxAgeMs: number
  creds: Credentials
  vault: string | undefined
}

/** svc run's arguments and sign-in, every usage error thrown before anything is sent. */
export function planRun(argv: string[]): RunPlan {
  const { options, positionals, rest, lists } = parseArgs(argv, RUN_OPTIONS, { stopAtPositional: true })
  const command = [...positionals, ...rest]
  if (command.length === 0) throw usageError('svc run needs a command: svc run [options] -- CMD ARGS')
  const selection = selectionFrom(options)
  const watch = options.watch === true
  const intervalMs = parseInterval(str(options.interval))
  const allowed = new Set(lists['allow-env'] ?? [])
  for (const name of allowed) if (!/^[^=\u0000]+$/.test(name)) throw usageError(`--allow-env takes a variable name, got ${name}`)
  if (options.interval !== undefined && !watch) throw usageError('--interval needs --watch')
  const mountPath = str(options.mount) === undefined ? undefined : resolve(str(options.mount)!)
  if (mountPath !== undefined && existsSync(mountPath)) {
    throw new CliError(`--mount: ${mountPath} already exists; remove it or choose another path (svc removes the file it writes)`)
  }
  if (options.mask === true && options['no-mask'] === true) throw usageError('--mask and --no-mask exclude each other')
  const masking = options['no-mask'] === true ? false : options.mask === true || isSet(process.env.CI)
  const maxAgeMs = parseMaxAge(str(options['fallback-max-age']))
  return {
    command,
    selection,
    override: options.override === true,
    watch,
    intervalMs,
    passToken: options['pass-token'] === true,
    allowed,
    mountPath,
    masking,
    maxAgeMs,
    creds: credentials(),
    vault: str(options.vault),
  }
}

export interface StartedRun {
  plan: RunPlan
  client: VaultClient
  /** The first export, unparsed (a rejection is svc run's to report). */
  first: Promise<Fetched | null>
}

/**
 * The run startRun began, kept on globalThis: the served file holds two copies of this module,
 * one compiled before the request and one with the rest of the CLI after it (src/cli/svc/node.ts).
 */
const STARTED = Symbol.for('svc-vault: svc run started')
const holder = globalThis as { [STARTED]?: { argv: string[]; run: StartedRun } | null }

/**
 * For `svc run`, plans it and sends the export request at once; resolves when the request is on
 * its way (at once for any other command, or arguments svc run will refuse: it says why then).
 */
export function startRun(argv: string[]): Promise<void> {
  if (argv[0] !== 'run') return Promise.resolve()
  let plan: RunPlan
  try {
    plan = planRun(argv.slice(1))
  } catch {
    return Promise.resolve()
  }
  const client = VaultClient.signedIn(plan.creds, plan.vault)
  const sent = new Promise<void>((done) => client.onceSent(done))
  const first = fetchExportUnparsed(client, plan.selection)
  // Awaited by run(); this only keeps an early failure from being reported as unhandled.
  first.catch(() => {})
  holder[STARTED] = { argv: argv.slice(1), run: { plan, client, first } }
  return Promise.race([
    sent,
    first.then(
      () => {},
      () => {},
    ),
  ])
}

/** The run startRun began for these arguments, once. */
export function takeStartedRun(argv: string[]): StartedRun | null {
  const found = holder[STARTED] ?? null
  holder[STARTED] = null
  if (!found || found.argv.length !== argv.length || found.argv.some((arg, i) => arg !== argv[i])) return null
  return found.run
}
