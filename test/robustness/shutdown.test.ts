// SIGTERM: the server stops taking requests, finishes the ones in flight, flushes every document,
// releases its lock and exits 0.
import { afterAll, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { signUp } from '../support/client'
import { ON_POSTGRES } from '../support/postgres'
import { removeDir, spawnServer, tempDir, type SpawnedServer } from '../support/server'
import { makeActor, modules, startWorkload, unparsableJson, verifyLanes } from './support'

const dataDir = tempDir('svc-vault-shutdown-')
let server: SpawnedServer | undefined
afterAll(async () => {
  if (server && server.proc.exitCode === null) await server.kill()
  removeDir(dataDir)
})

/** Opens a raw connection and sends the head and half the body of a request, holding the rest. */
function startSlowRequest(url: string, cookie: string, body: string): Promise<{ socket: Socket; finish: () => Promise<string> }> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      const half = Math.floor(body.length / 2)
      socket.write(
        `POST /api/categories HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nCookie: svc_session=${cookie}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body.slice(0, half)}`,
      )
      let answer = ''
      const ended = new Promise<string>((done) => {
        socket.on('data', (chunk) => (answer += chunk.toString()))
        socket.on('close', () => done(answer))
        socket.on('error', () => done(answer))
      })
      resolve({ socket, finish: () => (socket.write(body.slice(half)), ended) })
    })
    socket.on('error', reject)
  })
}

test('SIGTERM finishes requests in flight, flushes, releases the lock, exits 0', async () => {
  server = await spawnServer({ dataDir })
  const lock = join(dataDir, 'svc-vault.lock')
  // The file store locks its folder; instances on one database take no lock.
  expect(existsSync(lock)).toBe(!ON_POSTGRES)
  const mods = await modules(server.url)
  const alice = await signUp(server.url)
  const actor = await makeActor(alice, mods)

  // A request whose body is still arriving, and a crowd of writes under way.
  const slow = await startSlowRequest(
    server.url,
    alice.credentials.cookie!,
    JSON.stringify({ name: 'in flight', keyType: 'group', description: 'x'.repeat(2000) }),
  )
  // 20 answers to requests sent after the slow one's head: by then the server has read that head.
  const load = startWorkload([actor], mods, 60, 'term')
  while (load.acked() < 20) await Bun.sleep(1)
  server.proc.kill('SIGTERM')

  // The listening socket closes (the signal arrives asynchronously: waited for, not slept on),
  // while the slow request still holds the server open: no new request gets in.
  const tryConnect = () =>
    new Promise<boolean>((resolve) => {
      const { hostname, port } = new URL(server!.url)
      const socket = connect(Number(port), hostname, () => (socket.destroy(), resolve(true)))
      socket.on('error', () => resolve(false))
    })
  const deadline = Date.now() + 10_000
  while ((await tryConnect()) && Date.now() < deadline) await Bun.sleep(1)
  expect(await tryConnect()).toBe(false)
  expect(server.proc.exitCode).toBeNull()
  const refused = await fetch(`${server.url}/api/openapi`).then(
    (r) => r.status,
    () => 'refused',
  )
  expect(refused).toBe('refused')

  // The request in flight is answered in full, and it was durable when answered.
  const answer = await slow.finish()
  expect(answer).toMatch(/^HTTP\/1\.1 201/)
  const created = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))
  expect(created.name).toBe('in flight')

  expect(await server.proc.exited).toBe(0)
  await load.done
  expect(server.output()).toContain('stopped (SIGTERM)')
  expect(existsSync(lock)).toBe(false)
  expect(unparsableJson(dataDir)).toEqual([])

  // Every acknowledged write is there after the restart.
  server = await spawnServer({ dataDir })
  for (const client of actor.writers) (client as { base: string }).base = server.url
  expect((await alice.get(`/api/categories/${created.id}`)).body.name).toBe('in flight')
  expect(await verifyLanes(load.lanes)).toEqual([])
  expect(await server.stop()).toBe(0)
  expect(existsSync(lock)).toBe(false)
}, 20_000)

test('SIGTERM on an idle server exits 0 at once, lock released', async () => {
  const dir = tempDir('svc-vault-idle-')
  try {
    const idle = await spawnServer({ dataDir: dir })
    // A kept-alive idle connection must not hold the shutdown up.
    await fetch(`${idle.url}/api/openapi`)
    expect(await idle.stop()).toBe(0)
    expect(existsSync(join(dir, 'svc-vault.lock'))).toBe(false)
  } finally {
    removeDir(dir)
  }
})
