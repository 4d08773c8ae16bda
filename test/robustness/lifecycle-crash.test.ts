// Issue 20: history and trash are in the kill -9 guarantee. Value changes (each keeping a version)
// and deletes (each moving to the trash) run concurrently; the server is killed mid-write; the data
// folder is then opened from disk and every acknowledged change is found: the value current or
// kept as a version, the deleted entry in the trash with its value.
import { afterAll, expect, test } from 'bun:test'
import { openVault } from '../../src/app'
import { loadConfig } from '../../src/config'
import { signUp } from '../support/client'
import { removeDir, spawnServer, tempDir, TEST_MASTER_KEY, type SpawnedServer } from '../support/server'
import { storeEnv } from '../support/postgres'

const dataDir = tempDir('svc-vault-lifecycle-crash-')
let server: SpawnedServer | undefined
afterAll(async () => {
  await server?.kill()
  removeDir(dataDir)
})

test('acknowledged versions and trash moves survive kill -9, read back from disk', async () => {
  server = await spawnServer({ dataDir, env: { SVC_HISTORY_VERSIONS: '1000' } })
  const alice = await signUp(server.url)
  const category = (await alice.post('/api/categories', { name: 'C', keyType: 'simple', envVarName: 'C_KEY' })).body
  const entries: string[] = []
  for (let i = 0; i < 6; i++) entries.push((await alice.post('/api/entries', { categoryId: category.id, name: `e${i}`, value: `e${i}-v0` })).body.id)

  // Entries 0-2 get value after value; entries 3-5 get values, then are deleted.
  const acked = new Map<string, string[]>()
  const deleted = new Set<string>()
  let ackCount = 0
  let stop = false
  const lane = async (id: string, deletes: boolean) => {
    for (let n = 1; !stop; n++) {
      const value = `${id}-v${n}`
      const answer = await alice.put(`/api/entries/${id}`, { value }).catch(() => null)
      if (answer?.status !== 200) return
      acked.set(id, [...(acked.get(id) ?? []), value])
      ackCount++
      if (deletes && n === 15) {
        const removed = await alice.delete(`/api/entries/${id}`).catch(() => null)
        if (removed?.status === 204) deleted.add(id)
        return
      }
    }
  }
  const lanes = entries.map((id, i) => lane(id, i >= 3))
  while (ackCount < 60) await Bun.sleep(1)
  await server.kill()
  stop = true
  await Promise.all(lanes)
  expect(ackCount).toBeGreaterThanOrEqual(60)

  // From the store (the vault file and its change log, or the database), opened as the server opens it.
  const deps = await openVault(loadConfig({ SVC_MASTER_KEY: TEST_MASTER_KEY, ...(await storeEnv(dataDir)), SVC_DATA_DIR: dataDir }), () => {})
  try {
    const { data, cipher } = await deps.vaults.open(alice.user.id)
    for (const id of entries) {
      const live = data.entries.find((e) => e.id === id)
      const trashed = data.trash.find((t) => t.entries.some((e) => e.id === id))?.entries.find((e) => e.id === id)
      if (deleted.has(id)) expect(trashed).toBeDefined()
      const record = live ?? trashed
      expect(record).toBeDefined()
      const current = cipher.open('entry', id, record!.encryptedValue)
      const kept = new Set(data.versions.filter((v) => v.recordId === id).map((v) => cipher.openVersion('entry', id, v.version, v.encryptedValue)))
      // Every acknowledged value is the current one or a version; the versions are whole.
      expect(kept.has(null)).toBe(false)
      for (const value of acked.get(id) ?? []) expect(value === current || kept.has(value)).toBe(true)
    }
  } finally {
    await deps.store.close()
  }
}, 30_000)
