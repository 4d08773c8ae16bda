// A server that must know its own address before it starts (SVC_BASE_URL, an OIDC redirect URI)
// starts on a port probed free just before. Another process may take that port in between (the
// suite's two passes start hundreds of servers and connections at once); the start then fails
// with EADDRINUSE, as it must (a server never shares a port), and is tried again on another port.
import { readFileSync } from 'node:fs'

/** A loopback port that was free just now (listened on with port 0, then closed). */
export async function freePort(): Promise<number> {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  await probe.stop(true)
  return port
}

const ATTEMPTS = 5

/**
 * `start(port)` on a free port, and again on another while the one it was given turns out taken.
 * `start` must leave nothing running when it fails.
 */
export async function onFreePort<T>(start: (port: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(await freePort())
    } catch (error) {
      if (attempt === ATTEMPTS || (error as { code?: unknown }).code !== 'EADDRINUSE') throw error
    }
  }
}

/**
 * A port for a program that cannot listen on port 0 and report its port (Caddy, PostgreSQL): a
 * random one below the kernel's range of ephemeral ports, from which every port-0 listener and
 * every outgoing connection of the run takes its port. Only another such pick can collide.
 */
export function unassignedPort(): number {
  let low = 32768
  try {
    low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || low
  } catch {
    // Not Linux: its default range's start.
  }
  const from = Math.min(10_000, low - 1_000)
  return from + Math.floor(Math.random() * (low - from))
}
