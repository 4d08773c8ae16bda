// Issue 20 added two lists to the vault document (versions, trash): vaults stored before open with
// them empty, a change log naming them replays over a file without them, and backups carry them.
import { afterAll, expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { applyChanges } from '../../src/store/changes'
import { VAULT_LISTS } from '../../src/store/records'
import { Client, signUp } from '../support/client'
import { removeDir, ROOT, startTestServer, tempDir, TEST_MASTER_KEY } from '../support/server'

const dirs: string[] = []
afterAll(() => dirs.forEach(removeDir))

test('a change log that names a list the file lacks replays onto an empty list', () => {
  const data: Record<string, unknown> = { categories: [], entries: [], twoFactor: [], envProjects: [], envFiles: [] }
  applyChanges(data, VAULT_LISTS, [[['put', 'versions', { id: 'entry:x:1' }]]])
  expect(data.versions).toEqual([{ id: 'entry:x:1' }])
})

test('a vault stored before issue 20 opens, keeps versions and trash, and a backup carries them', async () => {
  const dataDir = tempDir()
  dirs.push(dataDir)
  let server = await startTestServer({ dataDir })
  const alice = await signUp(server.url)
  const cat = (await alice.post('/api/categories', { name: 'C', keyType: 'simple', envVarName: 'C_KEY' })).body
  const e = (await alice.post('/api/entries', { categoryId: cat.id, name: 'n', value: 'old' })).body
  await server.stop()
  const path = join(dataDir, 'vaults', `${alice.user.id}.json`)
  const stored = JSON.parse(readFileSync(path, 'utf8'))
  delete stored.versions
  delete stored.trash
  writeFileSync(path, JSON.stringify(stored))

  server = await startTestServer({ dataDir })
  expect((await new Client(server.url, alice.credentials).get(`/api/entries/${e.id}/versions`)).body).toEqual([])
  const client = new Client(server.url, alice.credentials)
  expect((await client.put(`/api/entries/${e.id}`, { value: 'new' })).status).toBe(200)
  const other = (await client.post('/api/entries', { categoryId: cat.id, name: 'gone', value: 'x' })).body
  expect((await client.delete(`/api/entries/${other.id}`)).status).toBe(204)
  // The change log now names versions and trash while the file has neither: a restart replays it.
  await server.stop()
  server = await startTestServer({ dataDir })
  const again = new Client(server.url, alice.credentials)
  expect((await again.post(`/api/entries/${e.id}/versions/1/reveal`)).body.value).toBe('old')
  expect((await again.get('/api/trash')).body.map((i: any) => i.recordId)).toEqual([other.id])
  const version = server.deps.store.openedVault(alice.user.id)!.data.versions[0]
  await server.stop()

  const bundle = join(dataDir, '..', `${crypto.randomUUID()}.backup.json`)
  const proc = Bun.spawn(['bun', 'src/cli/backup.ts', bundle, '--data-dir', dataDir], {
    cwd: ROOT,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', SVC_MASTER_KEY: TEST_MASTER_KEY },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  expect(await proc.exited).toBe(0)
  const files: { data: string }[] = JSON.parse(readFileSync(bundle, 'utf8')).files
  removeDir(bundle)
  const text = files.map((file) => Buffer.from(file.data, 'base64').toString('utf8')).join('\n')
  expect(text).toContain(version.encryptedValue)
  expect(text).toContain(other.id)
})
