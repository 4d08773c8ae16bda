// `svc-vault healthcheck`: asks the server on this machine whether it is ready (GET /readyz) and
// exits 0 when it is, 1 when not. For container health checks, where no curl is at hand.
const WILDCARD = new Set(['0.0.0.0', '::', '[::]', ''])

export async function healthcheck(env: Record<string, string | undefined> = process.env): Promise<number> {
  const port = env.PORT?.trim() || '3000'
  const host = env.HOST?.trim() ?? ''
  const address = WILDCARD.has(host) ? '127.0.0.1' : host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
  try {
    const response = await fetch(`http://${address}:${port}/readyz`, { signal: AbortSignal.timeout(5000) })
    await response.body?.cancel()
    if (response.status === 200) return 0
    console.error(`svc-vault healthcheck: not ready (${response.status})`)
  } catch (error) {
    console.error(`svc-vault healthcheck: ${(error as Error).message}`)
  }
  return 1
}
