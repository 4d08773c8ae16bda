// The tests' servers that must name their own port (SVC_BASE_URL, a passkey's origin, an OIDC
// redirect) probe a free port and then start on it. Another process of the run can take that port
// in between; the start then fails (a server never shares a port) and is tried on another port,
// leaving nothing of the failed start open. A program that cannot listen on port 0 (Caddy,
// PostgreSQL) gets a port where no port-0 listener or connection of the run can be.
import { afterAll, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { LOCK_FILE } from '../../src/store/lock'
import { onFreePort, unassignedPort } from '../support/ports'
import { removeDir, startTestServer, tempDir, type TestServer } from '../support/server'

const dirs: string[] = []
afterAll(() => dirs.forEach(removeDir))

test('a port taken between the probe and the start: the vault starts on another, and the failed start left its data folder closed', async () => {
  const squatter = { server: undefined as ReturnType<typeof Bun.serve> | undefined }
  const tried: { port: number; dataDir: string }[] = []
  let vault: TestServer | undefined
  try {
    vault = await onFreePort(async (port) => {
      const dataDir = tempDir()
      dirs.push(dataDir)
      tried.push({ port, dataDir })
      // Another program takes the first port just after the probe.
      if (tried.length === 1) squatter.server = Bun.serve({ port, hostname: '127.0.0.1', fetch: () => new Response('squatter') })
      return await startTestServer({ port, dataDir, store: 'file', env: { SVC_BASE_URL: `http://127.0.0.1:${port}` } })
    })
    expect(tried).toHaveLength(2)
    expect(vault.url).toBe(`http://127.0.0.1:${tried[1].port}`)
    expect((await fetch(`${vault.url}/readyz`)).status).toBe(200)
    // The other program keeps its port; the failed start let go of its data folder.
    expect(await (await fetch(`http://127.0.0.1:${tried[0].port}/`)).text()).toBe('squatter')
    expect(existsSync(join(tried[0].dataDir, LOCK_FILE))).toBe(false)
    expect(existsSync(join(tried[1].dataDir, LOCK_FILE))).toBe(true)
  } finally {
    await vault?.stop()
    await squatter.server?.stop(true)
  }
})

test('a start on a taken port removes the data folder it made for itself', async () => {
  const squatter = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('squatter') })
  try {
    const failed = await startTestServer({ port: squatter.port, store: 'file' }).then(
      () => null,
      (error: { code?: string; dataDir?: string }) => error,
    )
    expect(failed?.code).toBe('EADDRINUSE')
    expect(failed?.dataDir).toBeString()
    expect(existsSync(failed!.dataDir!)).toBe(false)
  } finally {
    await squatter.stop(true)
  }
})

test('another failure is not tried again', async () => {
  let attempts = 0
  const failing = onFreePort(async () => {
    attempts++
    throw new Error('not a port')
  })
  await expect(failing).rejects.toThrow('not a port')
  expect(attempts).toBe(1)
})

test('baseHost: SVC_BASE_URL names the port the vault listens on', async () => {
  const vault = await startTestServer({ baseHost: 'localhost', store: 'file' })
  dirs.push(vault.dataDir)
  try {
    expect(vault.deps.config.baseUrl).toBe(vault.url.replace('127.0.0.1', 'localhost'))
  } finally {
    await vault.stop()
  }
})

test('a port for Caddy or PostgreSQL (which cannot take port 0) lies below the range the kernel hands port-0 listeners and connections', async () => {
  const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number)
  const picks = Array.from({ length: 1000 }, unassignedPort)
  expect(picks.every((port) => port >= 1024 && port < low)).toBe(true)
  expect(new Set(picks).size).toBeGreaterThan(900)
  const taken = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  try {
    expect(taken.port!).toBeGreaterThanOrEqual(low)
  } finally {
    await taken.stop(true)
  }
})
