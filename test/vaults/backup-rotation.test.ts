// Backup, restore and rotate-master-key --rekey cover shared vaults: their documents are files
// under vaults/<vaultId> like a user's, owned by the accounts document's sharedVaults list.
import { afterAll, expect } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Client, PASSWORD, signUp } from '../support/client'
import { enableTwoFactor, oathtool, post } from '../account/support'
import { removeDir, ROOT, spawnServer, tempDir } from '../support/server'
import { createVault, seed } from './support'
import { DATA_FOLDER_TOOLS, testOnFileStore } from '../support/requirements'

// Every test here runs the data folder's tools (backup, restore, rotate-master-key): on the
// file store only until their PostgreSQL side is built (the reason is printed with each skip).
const test = testOnFileStore(DATA_FOLDER_TOOLS)

const dirs: string[] = []
afterAll(() => dirs.forEach(removeDir))

async function run(args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn(['bun', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, output: out + err }
}

/** A stopped server's folder (key in master.key) with a shared vault holding a secret. */
async function sharedFolder() {
  const server = await spawnServer({ env: { SVC_MASTER_KEY: undefined } })
  dirs.push(server.dataDir)
  try {
    const admin = await signUp(server.url)
    const vaultId = await createVault(admin)
    const ids = await seed(admin, `/api/vaults/${vaultId}`, 'kept-canary')
    expect(await server.stop()).toBe(0)
    return { dataDir: server.dataDir, admin, vaultId, ids }
  } finally {
    await server.kill()
  }
}

async function expectReadable(dataDir: string, folder: Awaited<ReturnType<typeof sharedFolder>>) {
  const server = await spawnServer({ dataDir, env: { SVC_MASTER_KEY: undefined } })
  try {
    const admin = new Client(server.url, folder.admin.credentials)
    expect((await admin.get('/api/vaults')).body.map((v: { id: string }) => v.id)).toEqual([folder.vaultId])
    const revealed = await admin.post(`/api/vaults/${folder.vaultId}/entries/${folder.ids.entryId}/reveal`)
    expect(revealed.body.value).toBe('kept-canary-entry-2')
  } finally {
    expect(await server.stop()).toBe(0)
  }
}

test('backup and restore keep a shared vault (its file is owned by the vault, not a user)', async () => {
  const folder = await sharedFolder()
  const bundle = join(tempDir(), 'backup.json')
  dirs.push(join(bundle, '..'))
  const backup = await run(['src/cli/backup.ts', bundle, '--data-dir', folder.dataDir])
  expect(backup.code).toBe(0)
  const paths = JSON.parse(readFileSync(bundle, 'utf8')).files.map((f: { path: string }) => f.path)
  expect(paths).toContain(`vaults/${folder.vaultId}.json`)
  expect(paths).toContain(`vaults/${folder.vaultId}.audit.log`)
  const restored = tempDir()
  dirs.push(restored)
  const restore = await run(['src/cli/restore.ts', bundle, '--data-dir', restored])
  expect(restore.code).toBe(0)
  // The master key is not in the bundle: the restored folder gets the original one.
  await Bun.write(join(restored, 'master.key'), readFileSync(join(folder.dataDir, 'master.key')))
  await expectReadable(restored, folder)
}, 60_000)

test('rotate-master-key --rekey gives a shared vault a new data key; its secrets stay readable', async () => {
  const folder = await sharedFolder()
  const file = join(folder.dataDir, 'vaults', `${folder.vaultId}.json`)
  const before = JSON.parse(readFileSync(file, 'utf8')).dataKey
  const rotated = await run(['run', 'rotate-master-key', '--rekey'], { SVC_DATA_DIR: folder.dataDir })
  expect(rotated.code).toBe(0)
  expect(JSON.parse(readFileSync(file, 'utf8')).dataKey).not.toBe(before)
  await expectReadable(folder.dataDir, folder)
}, 60_000)

test('rotate-master-key --rekey seals again what else the data key sealed: history, trash and the sign-in 2FA secret still open', async () => {
  // The file store here; test/store/migrate.test.ts runs the same on PostgreSQL.
  const server = await spawnServer({ env: { SVC_MASTER_KEY: undefined, SVC_DATABASE_URL: undefined } })
  dirs.push(server.dataDir)
  let alice: Awaited<ReturnType<typeof signUp>>
  let ids: Awaited<ReturnType<typeof seed>>
  let secret: string
  try {
    alice = await signUp(server.url)
    ids = await seed(alice, '', 'rekey-canary')
    secret = (await enableTwoFactor(alice, Date.now())).secret
    expect(await server.stop()).toBe(0)
  } finally {
    await server.kill()
  }
  const rotated = await run(['run', 'rotate-master-key', '--rekey'], { SVC_DATA_DIR: server.dataDir })
  expect(rotated.output).toMatch(/^rekey: \d+ records in .*; 1 vault\(s\) re-keyed$/m)
  expect(rotated.code).toBe(0)

  const after = await spawnServer({ dataDir: server.dataDir, env: { SVC_MASTER_KEY: undefined, SVC_DATABASE_URL: undefined } })
  try {
    const client = new Client(after.url, alice.credentials)
    const older = await client.post(`/api/entries/${ids.entryId}/versions/1/reveal`)
    expect(older.status).toBe(200)
    expect(older.body.value).toBe('rekey-canary-entry-1')
    expect((await client.post(`/api/trash/${ids.trashId}/restore`)).status).toBe(200)
    const doomed = (await client.get('/api/entries')).body.find((entry: { name: string }) => entry.name === 'doomed')
    const revealed = await client.post(`/api/entries/${doomed.id}/reveal`)
    expect(revealed.body.value).toBe('rekey-canary-doomed')
    // Two-factor sign-in: the next step's code (the step of enabling it is used).
    const login = await post(after.url, '/api/auth/login', { email: alice.email, password: PASSWORD })
    expect(login.body).toEqual({ twoFactorRequired: true })
    const second = await post(after.url, '/api/auth/login/2fa', { code: oathtool(secret, Date.now() + 30_000) }, { svc_2fa: login.cookies.svc_2fa })
    expect(second.status).toBe(200)
  } finally {
    expect(await after.stop()).toBe(0)
  }
}, 60_000)
