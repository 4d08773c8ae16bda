// A TCP proxy on loopback in front of PostgreSQL's Unix socket, which a test can cut and mend:
// the database "going away" (a network cut, a failover) without stopping the shared cluster.
import { connect, createServer, type Server, type Socket } from 'node:net'

export interface TcpProxy {
  port: number
  /**
   * Cuts the way through: open connections stay open but nothing passes any more, and new ones
   * are accepted and then left silent (packets dropped, as when a network is cut).
   */
  cut(): void
  /** Closes whatever was cut off, and lets new connections through again. */
  mend(): void
  close(): Promise<void>
}

export async function startTcpProxy(unixPath: string): Promise<TcpProxy> {
  let open = true
  const pairs = new Set<{ client: Socket; upstream: Socket | null }>()
  const server: Server = createServer((client) => {
    const pair: { client: Socket; upstream: Socket | null } = { client, upstream: null }
    pairs.add(pair)
    const end = () => {
      pairs.delete(pair)
      client.destroy()
      pair.upstream?.destroy()
    }
    client.on('error', end)
    client.on('close', end)
    if (!open) return
    const upstream = connect({ path: unixPath })
    pair.upstream = upstream
    upstream.on('error', end)
    upstream.on('close', end)
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  const mend = () => {
    for (const { client, upstream } of [...pairs]) {
      client.destroy()
      upstream?.destroy()
    }
    pairs.clear()
    open = true
  }
  return {
    port,
    cut() {
      open = false
      for (const { client, upstream } of pairs) {
        if (!upstream) continue
        client.unpipe(upstream)
        upstream.unpipe(client)
        // Whatever arrives from now on is dropped.
        client.removeAllListeners('data')
        upstream.removeAllListeners('data')
        client.on('data', () => {})
        upstream.on('data', () => {})
      }
    },
    mend,
    async close() {
      mend()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
