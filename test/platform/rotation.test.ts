// `bun run rotate-master-key`: every secret stays readable under the new key, the old key no
// longer starts the server, a running server blocks it, and an interrupted rotation is finished
// by running it again.
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Keyring } from '../../src/crypto/keyring'
import { Client, signUp } from '../support/client'
import { removeDir, ROOT, runServerToExit, spawnServer, tempDir, TEST_MASTER_KEY } from '../support/server'
import { expectSecretsReadable, seedSecrets, type SeededSecrets } from './secrets'

const dirs: string[] = []
afterAll(() => dirs.forEach(removeDir))

async function rotate(env: Record<string, string>): Promise<{ code: number; output: string }> {
  const proc = Bun.spawn(['bun', 'run', 'rotate-master-key'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, output: out + err }
}

/** Every file's bytes under the data folder, by relative path. */
function snapshot(dir: string): Record<string, string> {
  const files: Record<string, string> = {}
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const path = join(dir, name)
    // The audit logs grow with every reveal the test makes (issue 17): not the rotation's doing.
    if (name.endsWith('audit.log')) continue
    if (!statSync(path).isFile()) continue
    files[name] = readFileSync(path, 'utf8')
    // A vault's audit anchor notes the log's last line at each stop: it moves with those reveals too.
    if (name.startsWith('vaults/') && name.endsWith('.json')) {
      const vault = JSON.parse(files[name])
      if (vault.auditChain) delete vault.auditChain.head
      files[name] = JSON.stringify(vault)
    }
  }
  return files
}

interface Seeded {
  dataDir: string
  users: { client: Client & { user: any }; secrets: SeededSecrets }[]
  key: string
}

/** A stopped server's data folder with two users' secrets and an access key. */
async function seededFolder(env: Record<string, string>): Promise<Seeded> {
  const server = await spawnServer({ env })
  dirs.push(server.dataDir)
  try {
    const users = []
    for (let i = 0; i < 2; i++) {
      const client = await signUp(server.url)
      users.push({ client, secrets: await seedSecrets(client) })
    }
    await signUp(server.url) // a user without a vault
    const key = (await users[0].client.post('/api/access-keys', { name: 'ci', scopes: ['entries:reveal'] })).body.key
    expect(await server.stop()).toBe(0)
    return { dataDir: server.dataDir, users, key }
  } finally {
    await server.kill()
  }
}

async function expectAllReadable(seeded: Seeded, env: Record<string, string>) {
  const server = await spawnServer({ dataDir: seeded.dataDir, env })
  try {
    for (const { client, secrets } of seeded.users) await expectSecretsReadable(new Client(server.url, client.credentials), secrets)
    const keyed = new Client(server.url, { key: seeded.key })
    expect((await keyed.post(`/api/entries/${seeded.users[0].secrets.simple.id}/reveal`)).body.value).toBe(seeded.users[0].secrets.simple.value)
  } finally {
    expect(await server.stop()).toBe(0)
  }
}

const sealedFields = (dataDir: string) =>
  readdirSync(join(dataDir, 'vaults')).filter((name) => name.endsWith('.json')).map((name) => {
    const vault = JSON.parse(readFileSync(join(dataDir, 'vaults', name), 'utf8'))
    return {
      dataKey: vault.dataKey as string,
      sealed: [...vault.entries.map((e: any) => e.encryptedValue), ...vault.twoFactor.map((t: any) => t.encryptedSecret), ...vault.envFiles.map((f: any) => f.encryptedContent)],
    }
  })

describe('rotate-master-key', () => {
  test('key in master.key: re-wraps data keys only, replaces the file (0600); every secret stays readable; the old key no longer starts', async () => {
    const seeded = await seededFolder({ SVC_MASTER_KEY: '' })
    const keyPath = join(seeded.dataDir, 'master.key')
    const oldKey = readFileSync(keyPath, 'utf8').trim()
    const before = sealedFields(seeded.dataDir)

    const result = await rotate({ SVC_DATA_DIR: seeded.dataDir })
    expect(result.code).toBe(0)
    const newKey = readFileSync(keyPath, 'utf8').trim()
    expect(newKey).not.toBe(oldKey)
    expect(Buffer.from(newKey, 'base64')).toHaveLength(32)
    expect(statSync(keyPath).mode & 0o777).toBe(0o600)
    expect(result.output).toContain('master.key')
    expect(result.output).not.toContain(newKey)
    expect(result.output).not.toContain(oldKey)
    expect(readdirSync(seeded.dataDir).filter((name) => name.startsWith('master.key'))).toEqual(['master.key'])
    expect(existsSync(join(seeded.dataDir, 'svc-vault.lock'))).toBe(false)

    // Records are not re-encrypted: only each vault's wrapped data key changed.
    const after = sealedFields(seeded.dataDir)
    expect(after.map((v) => v.sealed)).toEqual(before.map((v) => v.sealed))
    for (let i = 0; i < after.length; i++) expect(after[i].dataKey).not.toBe(before[i].dataKey)

    await expectAllReadable(seeded, { SVC_MASTER_KEY: '' })
    const old = await runServerToExit({ SVC_DATA_DIR: seeded.dataDir, SVC_MASTER_KEY: oldKey })
    expect(old.code).toBe(1)
    expect(old.output).toContain('master key does not match')
  }, 30_000)

  test('key in SVC_MASTER_KEY: prints the generated key once and says to set SVC_MASTER_KEY; SVC_NEW_MASTER_KEY is honoured', async () => {
    const seeded = await seededFolder({ SVC_MASTER_KEY: TEST_MASTER_KEY })
    const result = await rotate({ SVC_DATA_DIR: seeded.dataDir, SVC_MASTER_KEY: TEST_MASTER_KEY })
    expect(result.code).toBe(0)
    const printed = result.output.split('\n').filter((line) => /^[A-Za-z0-9+/]{43}=$/.test(line.trim()))
    expect(printed).toHaveLength(1)
    const newKey = printed[0].trim()
    expect(result.output.split(newKey)).toHaveLength(2)
    expect(result.output).toContain('SVC_MASTER_KEY')
    expect(result.output).not.toContain(TEST_MASTER_KEY)
    expect(existsSync(join(seeded.dataDir, 'master.key'))).toBe(false)
    await expectAllReadable(seeded, { SVC_MASTER_KEY: newKey })
    expect((await runServerToExit({ SVC_DATA_DIR: seeded.dataDir, SVC_MASTER_KEY: TEST_MASTER_KEY })).code).toBe(1)

    // Chosen by the operator this time.
    const chosen = Buffer.alloc(32, 42).toString('base64')
    const again = await rotate({ SVC_DATA_DIR: seeded.dataDir, SVC_MASTER_KEY: newKey, SVC_NEW_MASTER_KEY: chosen })
    expect(again.code).toBe(0)
    expect(again.output).not.toContain(chosen)
    await expectAllReadable(seeded, { SVC_MASTER_KEY: chosen })
  }, 30_000)

  test('refuses while a server holds the data folder, with a wrong current key, or a bad new key; nothing changes', async () => {
    const seeded = await seededFolder({ SVC_MASTER_KEY: TEST_MASTER_KEY })
    const before = snapshot(seeded.dataDir)
    const server = await spawnServer({ dataDir: seeded.dataDir })
    try {
      const busy = await rotate({ SVC_DATA_DIR: seeded.dataDir, SVC_MASTER_KEY: TEST_MASTER_KEY })
      expect(busy.code).toBe(1)
      expect(busy.output).toMatch(/another svc-vault server .*is using/)
      await expectSecretsReadable(new Client(server.url, seeded.users[0].client.credentials), seeded.users[0].secrets)
    } finally {
      expect(await server.stop()).toBe(0)
    }
    const wrong = await rotate({ SVC_DATA_DIR: seeded.dataDir, SVC_MASTER_KEY: Buffer.alloc(32, 1).toString('base64') })
    expect(wrong.code).toBe(1)
    expect(wrong.output).toContain('does not match')
    const badNew = await rotate({ SVC_DATA_DIR: seeded.dataDir, SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_NEW_MASTER_KEY: 'short' })
    expect(badNew.code).toBe(1)
    expect(badNew.output).toContain('SVC_NEW_MASTER_KEY')
    const empty = tempDir()
    dirs.push(empty)
    const nothing = await rotate({ SVC_DATA_DIR: empty, SVC_MASTER_KEY: TEST_MASTER_KEY })
    expect(nothing.code).toBe(1)
    expect(nothing.output).toContain('nothing to rotate')
    expect(snapshot(seeded.dataDir)).toEqual(before)
  }, 30_000)

  test('an interrupted rotation: the server refuses to start with either key, and running the tool again finishes it', async () => {
    const seeded = await seededFolder({ SVC_MASTER_KEY: '' })
    const keyPath = join(seeded.dataDir, 'master.key')
    const oldKey = readFileSync(keyPath, 'utf8').trim()
    const newKey = Buffer.alloc(32, 5).toString('base64')
    // The state a run leaves when it dies after re-wrapping the first vault: the new key staged,
    // the key check set to the in-progress marker, one vault under the new key, one under the old.
    const oldRing = new Keyring(new Uint8Array(Buffer.from(oldKey, 'base64')))
    const newRing = new Keyring(new Uint8Array(Buffer.from(newKey, 'base64')))
    writeFileSync(join(seeded.dataDir, 'master.key.new'), newKey + '\n', { mode: 0o600 })
    const accountsPath = join(seeded.dataDir, 'accounts.json')
    const accounts = JSON.parse(readFileSync(accountsPath, 'utf8'))
    accounts.keyCheck = 'rotation-in-progress'
    writeFileSync(accountsPath, JSON.stringify(accounts))
    const firstUser = seeded.users[0].client.user.id
    const vaultPath = join(seeded.dataDir, 'vaults', `${firstUser}.json`)
    const vault = JSON.parse(readFileSync(vaultPath, 'utf8'))
    vault.dataKey = oldRing.rewrapDataKey(firstUser, vault.dataKey, newRing)
    writeFileSync(vaultPath, JSON.stringify(vault))

    for (const env of [{ SVC_MASTER_KEY: '' }, { SVC_MASTER_KEY: newKey }]) {
      const refused = await runServerToExit({ SVC_DATA_DIR: seeded.dataDir, ...env })
      expect(refused.code).toBe(1)
      expect(refused.output).not.toContain('listening')
      expect(refused.output).toContain('rotation was interrupted')
    }

    const finished = await rotate({ SVC_DATA_DIR: seeded.dataDir })
    expect(finished.code).toBe(0)
    expect(readFileSync(keyPath, 'utf8').trim()).toBe(newKey)
    expect(existsSync(join(seeded.dataDir, 'master.key.new'))).toBe(false)
    await expectAllReadable(seeded, { SVC_MASTER_KEY: '' })
  }, 30_000)
})
