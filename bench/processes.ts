// The benchmark's servers as processes of their own on loopback: started on a free port, their last
// 20 KB of output kept for error messages, stopped by SIGTERM (SIGKILL after a grace period).
import { resolve } from 'node:path'

const ROOT = resolve(import.meta.dir, '..')

export interface BenchProcess {
  name: string
  url: string
  pid: number
  proc: ReturnType<typeof Bun.spawn>
  output(): string
  stop(): Promise<void>
}

/** Every process still running: killed when the benchmark ends or is interrupted. */
export const liveProcesses = new Set<BenchProcess>()

export function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  probe.stop(true)
  return port
}

/** `bun <args>` from the repository root, listening on `port`; `graceMs` between SIGTERM and SIGKILL. */
export function spawnBench(name: string, args: string[], env: Record<string, string>, port: number, graceMs = 5000): BenchProcess {
  let output = ''
  const proc = Bun.spawn(['bun', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', HOST: '127.0.0.1', PORT: String(port), ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) output = (output + decoder.decode(chunk)).slice(-20_000)
  }
  void collect(proc.stdout as ReadableStream<Uint8Array>)
  void collect(proc.stderr as ReadableStream<Uint8Array>)
  const running: BenchProcess = {
    name,
    url: `http://127.0.0.1:${port}`,
    pid: proc.pid,
    proc,
    output: () => output,
    async stop() {
      liveProcesses.delete(running)
      if (proc.exitCode === null) {
        proc.kill('SIGTERM')
        const killer = setTimeout(() => proc.kill('SIGKILL'), graceMs)
        await proc.exited
        clearTimeout(killer)
      }
    },
  }
  liveProcesses.add(running)
  return running
}
