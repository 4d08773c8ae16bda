// Closing vaults (SVC_OPEN_VAULTS, SVC_VAULT_IDLE) loses no write and races no request: many users
// write and read at once through a cache of two open vaults, the server is killed -9 in the
// middle, and every acknowledged write is found on disk after a restart. In process: a closed
// vault still held by a request is the same document when opened again (never a second writer
// on one file), idle vaults close on the clock, and a closed vault's data key is forgotten.
import { afterAll, describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { join } from 'node:path'
import { verifyChain } from '../../src/modules/audit/chain'
import { AuditService } from '../../src/modules/audit/service'
import { auditFileLines, databaseOf, storedAuditAnchor, storedAuditLines } from '../support/audit-file'
import { heldSync, turn } from '../support/held-sync'
import { signUp } from '../support/client'
import { removeDir, spawnServer, startTestServer, tempDir, type SpawnedServer } from '../support/server'
import { makeActor, modules, startWorkload, unparsableJson, verifyLanes, type Actor } from './support'

const dirs: string[] = []
let spawned: SpawnedServer | undefined
afterAll(async () => {
  await spawned?.kill()
  dirs.forEach(removeDir)
})

const SMALL_CACHE = { SVC_OPEN_VAULTS: '2', SVC_VAULT_IDLE: '1s' }

test('under load through a cache of 2 open vaults, every acknowledged write survives kill -9', async () => {
  const dataDir = tempDir('svc-vault-evict-')
  dirs.push(dataDir)
  spawned = await spawnServer({ dataDir, env: SMALL_CACHE })
  const mods = await modules(spawned.url)
  const actors: Actor[] = []
  for (let i = 0; i < 8; i++) actors.push(await makeActor(await signUp(spawned.url), mods, 1))
  const load = startWorkload(actors, mods, 160, 'evict')
  // Reads of every vault at the same time, each forcing others out of the cache.
  const readFailures: string[] = []
  let reading = true
  const readers = actors.map(async (actor) => {
    while (reading) {
      const answer = await actor.session.get('/api/categories').catch(() => null)
      if (answer && answer.status !== 200) readFailures.push(`${answer.status} ${answer.text}`)
      if (!answer) return
    }
  })
  let finished = false
  void load.done.then(() => (finished = true))
  while (load.acked() < 250 && !finished) await Bun.sleep(1)
  await spawned.kill()
  reading = false
  await Promise.all([load.done, ...readers])
  expect(load.acked()).toBeGreaterThan(0)
  expect(readFailures).toEqual([])
  expect(unparsableJson(dataDir)).toEqual([])

  spawned = await spawnServer({ dataDir, env: SMALL_CACHE })
  for (const actor of actors) for (const client of actor.writers) (client as { base: string }).base = spawned.url
  expect(await verifyLanes(load.lanes)).toEqual([])
  await spawned.stop()
  spawned = undefined
}, 60_000)

describe('open vaults in process', () => {
  let clock = Date.parse('2030-01-01T00:00:00Z')
  const now = () => clock

  test('beyond SVC_OPEN_VAULTS the least recently used close; a closed vault still held is the same document again', async () => {
    const server = await startTestServer({ env: { SVC_OPEN_VAULTS: '2' }, now })
    dirs.push(server.dataDir)
    try {
      const users = [await signUp(server.url), await signUp(server.url), await signUp(server.url)]
      const held = await server.deps.vaults.open(users[0].user.id)
      for (const user of users.slice(1)) {
        expect((await user.post('/api/categories', { name: 'c', keyType: 'simple', envVarName: 'C' })).status).toBe(201)
      }
      expect(server.deps.store.openVaultCount).toBe(2)
      expect(server.deps.store.openedVault(users[0].user.id)).toBeUndefined()
      // The request that held it writes; whoever opens the vault next sees the same document.
      const again = await server.deps.vaults.open(users[0].user.id)
      expect(again.doc).toBe(held.doc)
      expect((await users[0].post('/api/categories', { name: 'mine', keyType: 'simple', envVarName: 'MINE' })).status).toBe(201)
      expect((await users[0].get('/api/categories')).body.map((c: any) => c.name)).toEqual(['mine'])
    } finally {
      await server.stop()
    }
  })

  test('a vault unused for SVC_VAULT_IDLE is closed and its data key forgotten; it opens again on use', async () => {
    const server = await startTestServer({ env: { SVC_VAULT_IDLE: '10m' }, now })
    dirs.push(server.dataDir)
    try {
      const alice = await signUp(server.url)
      const bob = await signUp(server.url)
      expect((await alice.post('/api/categories', { name: 'a', keyType: 'simple', envVarName: 'A' })).status).toBe(201)
      clock += 6 * 60_000
      expect((await bob.post('/api/categories', { name: 'b', keyType: 'simple', envVarName: 'B' })).status).toBe(201)
      clock += 5 * 60_000
      expect(server.deps.store.closeIdleVaults()).toBe(1)
      expect(server.deps.store.openedVault(alice.user.id)).toBeUndefined()
      expect(server.deps.store.openVaultCount).toBe(1)
      const ciphers = (server.deps.keyring as unknown as { ciphers: Map<string, unknown> }).ciphers
      expect(ciphers.has(alice.user.id)).toBe(false)
      expect(ciphers.has(bob.user.id)).toBe(true)
      expect((await alice.get('/api/categories')).body.map((c: any) => c.name)).toEqual(['a'])
      expect(server.deps.store.openVaultCount).toBe(2)
    } finally {
      await server.stop()
    }
  })

  test('a closed vault closes its audit log too; reveals racing the closes are each recorded once, in one chain', async () => {
    const server = await startTestServer({ env: { SVC_VAULT_IDLE: '10m', SVC_SESSION_TTL: '366d' }, now })
    dirs.push(server.dataDir)
    try {
      const alice = await signUp(server.url)
      const category = (await alice.post('/api/categories', { name: 'a', keyType: 'simple', envVarName: 'A' })).body
      const entry = (await alice.post('/api/entries', { categoryId: category.id, name: 'shop', value: 'sk_evict_audit' })).body
      const logPath = join(server.dataDir, 'vaults', `${alice.user.id}.audit.log`)
      const openFiles = () =>
        readdirSync('/proc/self/fd').filter((fd) => {
          try {
            return readlinkSync(`/proc/self/fd/${fd}`) === logPath
          } catch {
            return false
          }
        }).length
      // On the file store the log is a file held open while its vault is (on the database: rows).
      const onFiles = !databaseOf(server)
      expect((await alice.post(`/api/entries/${entry.id}/reveal`)).status).toBe(200)
      if (onFiles) expect(openFiles()).toBe(1)
      clock += 11 * 60_000
      expect(server.deps.store.closeIdleVaults()).toBe(1)
      await server.deps.audit.settle()
      if (onFiles) expect(openFiles()).toBe(0)
      // The file holds its lines and nothing else.
      if (onFiles) expect(readFileSync(logPath).includes(0)).toBe(false)
      // 200 reveals in 10 waves, the vault (and its log) closed before each and again and again
      // while they run.
      let closes = 0
      const answers: { status: number }[] = []
      for (let wave = 0; wave < 10; wave++) {
        clock += 11 * 60_000
        closes += server.deps.store.closeIdleVaults()
        let settled = false
        const reveals = Promise.all(Array.from({ length: 20 }, () => alice.post(`/api/entries/${entry.id}/reveal`))).finally(() => (settled = true))
        // At most 40 closes a wave: each moves the clock 11 minutes, and a slow machine turning
        // the loop without bound would outlive the session.
        for (let turns = 0; !settled; turns++) {
          if (turns < 40) {
            clock += 11 * 60_000
            closes += server.deps.store.closeIdleVaults()
          }
          await turn()
        }
        answers.push(...(await reveals))
      }
      expect(answers.filter((answer) => answer.status !== 200)).toEqual([])
      // Each wave closed the vault at least once (on the database store a vault still being
      // opened again is not closed, so a wave may miss its close: at least half of them then).
      expect(closes).toBeGreaterThanOrEqual(onFiles ? 10 : 5)
      await server.deps.audit.settle()
      const lines = await storedAuditLines(server, alice.user.id)
      const events = lines.map((line) => JSON.parse(line))
      expect(events.filter((event) => event.action === 'entry.reveal').length).toBe(201)
      const chain = verifyChain(lines, await storedAuditAnchor(server, alice.user.id))
      expect(chain).toMatchObject({ ok: true })
    } finally {
      await server.stop()
    }
  })

  test('a log closed while a batch syncs and more wait: the next open waits for them, one chain', async () => {
    // A file's group commit with its sync held: the file store in both passes of the suite.
    const server = await startTestServer({ now, store: 'file' })
    dirs.push(server.dataDir)
    try {
      const alice = await signUp(server.url)
      const disk = heldSync()
      // The server's own service lets go of the log; a second one on the same store takes it, with
      // a sync the test holds.
      server.deps.audit.closeUserLog(alice.user.id)
      await server.deps.audit.settle()
      const audit = new AuditService({ ...server.deps, dataSync: disk.sync })
      const event = (n: number) => ({
        action: 'entry.reveal' as const,
        actor: { type: 'anonymous' as const, id: null, name: null },
        clientAddress: '127.0.0.1',
        userAgent: null,
        details: { n },
      })
      const first = audit.record(alice.user.id, event(1))
      while (disk.held.length === 0) await turn()
      // Queued behind the batch in flight, then the log is closed, then one more event comes.
      const second = audit.record(alice.user.id, event(2))
      await turn()
      audit.closeUserLog(alice.user.id)
      const third = audit.record(alice.user.id, event(3))
      for (let i = 0; i < 20; i++) await turn()
      // Nothing was opened again while the old log still had lines to write.
      expect(disk.held.length).toBe(1)
      while (disk.held.length > 0 || !(await Promise.race([Promise.all([first, second, third]).then(() => true), turn().then(() => false)]))) {
        if (disk.held.length > 0) disk.release()
        await turn()
      }
      await audit.close()
      const path = join(server.dataDir, 'vaults', `${alice.user.id}.audit.log`)
      const lines = auditFileLines(path)
      expect(
        lines
          .map((line) => JSON.parse(line))
          .filter((e) => e.action === 'entry.reveal')
          .map((e) => e.details.n),
      ).toEqual([1, 2, 3])
      const anchor = (await server.deps.vaults.open(alice.user.id)).doc.data.auditChain!
      expect(verifyChain(lines, anchor)).toMatchObject({ ok: true, lines: lines.length })
    } finally {
      await server.stop()
    }
  })
})
