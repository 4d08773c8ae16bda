// The built `svc` executable (dist/svc, compiled once per test process by `bun run build:cli`)
// run as a user runs it: its own config folder, a chosen environment, real signals.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT } from '../support/server'

export const SVC = join(ROOT, 'dist', 'svc')

let built: Promise<void> | undefined
/** Compiles dist/svc from the current sources, once per test process. */
export function buildCli(): Promise<void> {
  built ??= (async () => {
    const proc = Bun.spawn(['bun', 'run', 'build:cli'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
    const [code, err] = await Promise.all([proc.exited, new Response(proc.stderr).text()])
    if (code !== 0) throw new Error(`bun run build:cli failed: ${err}`)
  })()
  return built
}

export interface SvcHome {
  /** XDG_CONFIG_HOME for this run. */
  config: string
  home: string
  env: Record<string, string>
}

/** A fresh HOME and XDG_CONFIG_HOME: no stored sign-in, nothing inherited from the machine. */
export function svcHome(extra: Record<string, string> = {}): SvcHome {
  const home = mkdtempSync(join(tmpdir(), 'svc-cli-home-'))
  const config = join(home, 'xdg')
  return { home, config, env: { PATH: process.env.PATH!, HOME: home, XDG_CONFIG_HOME: config, ...extra } }
}

export interface SvcResult {
  code: number | null
  signal: string | null
  stdout: string
  stderr: string
}

/** Runs dist/svc to its end. */
export async function svc(args: string[], options: { env: Record<string, string>; stdin?: string; timeoutMs?: number }): Promise<SvcResult> {
  const proc = Bun.spawn([SVC, ...args], {
    env: options.env,
    stdin: options.stdin === undefined ? 'ignore' : new Blob([options.stdin]),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const timer = setTimeout(() => proc.kill('SIGKILL'), options.timeoutMs ?? 20_000)
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  await proc.exited
  clearTimeout(timer)
  return { code: proc.exitCode, signal: proc.signalCode === null ? null : String(proc.signalCode), stdout, stderr }
}

/** Starts dist/svc and collects its output as it comes, for tests that act while it runs. */
export function startSvc(args: string[], options: { env: Record<string, string> }) {
  const proc = Bun.spawn([SVC, ...args], { env: options.env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const output = { stdout: '', stderr: '' }
  const collect = async (stream: ReadableStream<Uint8Array>, into: 'stdout' | 'stderr') => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) output[into] += decoder.decode(chunk, { stream: true })
  }
  const done = Promise.all([collect(proc.stdout as ReadableStream<Uint8Array>, 'stdout'), collect(proc.stderr as ReadableStream<Uint8Array>, 'stderr')])
  return {
    proc,
    output,
    /** Waits until `test` holds for the output so far (polling; a timeout fails with what came). */
    async waitFor(test: (out: typeof output) => boolean, timeoutMs = 15_000): Promise<void> {
      const started = Date.now()
      while (!test(output)) {
        if (Date.now() - started > timeoutMs) throw new Error(`timed out; stdout: ${output.stdout} stderr: ${output.stderr}`)
        if (proc.exitCode !== null || proc.signalCode !== null) {
          await done
          if (!test(output)) throw new Error(`svc ended (${proc.exitCode ?? proc.signalCode}); stdout: ${output.stdout} stderr: ${output.stderr}`)
          return
        }
        await Bun.sleep(20)
      }
    },
    async end(): Promise<SvcResult> {
      await proc.exited
      await done
      return { code: proc.exitCode, signal: proc.signalCode === null ? null : String(proc.signalCode), ...output }
    },
  }
}
