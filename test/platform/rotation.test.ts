// `bun run rotate-master-key`: every secret stays readable under the new key, the old key no
// longer starts the server, a running server blocks it, and an interrupted rotation is finished
// by running it again.
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Keyring, type SecretKind } from '../../src/crypto/keyring'
import { Client, signUp } from '../support/client'
import { removeDir, ROOT, runServerToExit, spawnServer, tempDir, TEST_MASTER_KEY } from '../support/server'
import { expectSecretsReadable, seedSecrets, type SeededSecrets } from './secrets'

const dirs: string[] = []
afterAll(() => dirs.forEach(removeDir))

async function rotate(env: Record<string, string>, args: string[] = []): Promise<{ code: number; output: string }> {
  const proc = Bun.spawn(['bun', 'run', 'rotate-master-key', ...args], {
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
    // A vault's audit anchor notes the log's last line (and the lines and bytes up to it) as the
    // log grows: it moves with those reveals too.
    if (name.startsWith('vaults/') && name.endsWith('.json')) {
      const vault = JSON.parse(files[name])
      if (vault.auditChain) for (const field of ['head', 'lines', 'bytes']) delete vault.auditChain[field]
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
async function seededFolder(env: Record<string, string | undefined>): Promise<Seeded> {
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

async function expectAllReadable(seeded: Seeded, env: Record<string, string | undefined>) {
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
  readdirSync(join(dataDir, 'vaults'))
    .filter((name) => name.endsWith('.json'))
    .map((name) => {
      const vault = JSON.parse(readFileSync(join(dataDir, 'vaults', name), 'utf8'))
      return {
        dataKey: vault.dataKey as string,
        sealed: [
          ...vault.entries.map((e: any) => e.encryptedValue),
          ...vault.twoFactor.map((t: any) => t.encryptedSecret),
          ...vault.envFiles.map((f: any) => f.encryptedContent),
        ],
      }
    })

describe('rotate-master-key', () => {
  test('key in master.key: re-wraps data keys only, replaces the file (0600); every secret stays readable; the old key no longer starts', async () => {
    const seeded = await seededFolder({ SVC_MASTER_KEY: undefined })
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

    await expectAllReadable(seeded, { SVC_MASTER_KEY: undefined })
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
    const seeded = await seededFolder({ SVC_MASTER_KEY: undefined })
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

    for (const env of [{}, { SVC_MASTER_KEY: newKey }] as Record<string, string>[]) {
      const refused = await runServerToExit({ SVC_DATA_DIR: seeded.dataDir, ...env })
      expect(refused.code).toBe(1)
      expect(refused.output).not.toContain('listening')
      expect(refused.output).toContain('rotation was interrupted')
    }

    const finished = await rotate({ SVC_DATA_DIR: seeded.dataDir })
    expect(finished.code).toBe(0)
    expect(readFileSync(keyPath, 'utf8').trim()).toBe(newKey)
    expect(existsSync(join(seeded.dataDir, 'master.key.new'))).toBe(false)
    await expectAllReadable(seeded, { SVC_MASTER_KEY: undefined })
  }, 30_000)
})

// ---- --rekey (issue 14) ----

const keyOf = (base64: string) => new Keyring(new Uint8Array(Buffer.from(base64, 'base64')))

/** Every vault file's JSON, by user id. */
function vaultFiles(dataDir: string): Record<string, any> {
  const out: Record<string, any> = {}
  for (const name of readdirSync(join(dataDir, 'vaults'))) {
    if (name.endsWith('.json')) out[name.slice(0, -5)] = JSON.parse(readFileSync(join(dataDir, 'vaults', name), 'utf8'))
  }
  return out
}

/** Each sealed field of a vault with its kind and record id. */
const sealedOf = (vault: any): { kind: SecretKind; id: string; sealed: string }[] => [
  ...vault.entries.map((e: any) => ({ kind: 'entry' as const, id: e.id, sealed: e.encryptedValue })),
  ...vault.twoFactor.map((t: any) => ({ kind: 'totp' as const, id: t.id, sealed: t.encryptedSecret })),
  ...vault.envFiles.map((f: any) => ({ kind: 'envfile' as const, id: f.id, sealed: f.encryptedContent })),
]

/**
 * What an attacker holding the old master key and a copy of the vault files from before the
 * rotation opens of the current files: the plaintext of every field that opens, by record id.
 */
function openedWithOldKeyAndOldFiles(oldKey: string, oldFiles: Record<string, any>, current: Record<string, any>): Record<string, string> {
  const opened: Record<string, string> = {}
  for (const [userId, vault] of Object.entries(current)) {
    // The old data key from the old file, and whatever the current file's wrapped key gives the old master key.
    const ciphers = [oldFiles[userId]?.dataKey, vault.dataKey].filter(Boolean).map((wrapped) => keyOf(oldKey).vault(userId, wrapped))
    for (const { kind, id, sealed } of sealedOf(vault)) {
      for (const cipher of ciphers) {
        const plaintext = cipher.open(kind, id, sealed)
        if (plaintext !== null) opened[id] = plaintext
      }
    }
  }
  return opened
}

/** A server on the folder, user 0 stores new secrets (after the rotation), then it stops. */
async function writeAfterRotation(seeded: Seeded, env: Record<string, string | undefined>): Promise<SeededSecrets> {
  const server = await spawnServer({ dataDir: seeded.dataDir, env })
  try {
    const client = new Client(server.url, seeded.users[0].client.credentials)
    return await seedSecrets(client, { simple: `sk-after-rotation-${crypto.randomUUID()}`, envContent: 'AFTER_ROTATION=canary-after\n' })
  } finally {
    expect(await server.stop()).toBe(0)
  }
}

describe('rotate-master-key --rekey', () => {
  test('without --rekey, the old key and an old vault file still open what is written after the rotation (why --rekey exists)', async () => {
    const seeded = await seededFolder({ SVC_MASTER_KEY: undefined })
    const oldKey = readFileSync(join(seeded.dataDir, 'master.key'), 'utf8').trim()
    const oldFiles = vaultFiles(seeded.dataDir)
    expect((await rotate({ SVC_DATA_DIR: seeded.dataDir })).code).toBe(0)
    const after = await writeAfterRotation(seeded, { SVC_MASTER_KEY: undefined })
    const opened = openedWithOldKeyAndOldFiles(oldKey, oldFiles, vaultFiles(seeded.dataDir))
    expect(opened[after.simple.id]).toBe(after.simple.value)
  }, 30_000)

  test('new data keys, every record sealed again: the old key and pre-rotation files open nothing written afterwards; every secret stays readable', async () => {
    const seeded = await seededFolder({ SVC_MASTER_KEY: undefined })
    const keyPath = join(seeded.dataDir, 'master.key')
    const oldKey = readFileSync(keyPath, 'utf8').trim()
    const oldFiles = vaultFiles(seeded.dataDir)

    const result = await rotate({ SVC_DATA_DIR: seeded.dataDir }, ['--rekey'])
    expect(result.code).toBe(0)
    expect(result.output).toContain('new data key')
    const newKey = readFileSync(keyPath, 'utf8').trim()
    expect(newKey).not.toBe(oldKey)
    expect(statSync(keyPath).mode & 0o777).toBe(0o600)
    expect(result.output).not.toContain(newKey)
    expect(readdirSync(seeded.dataDir).filter((name) => name.startsWith('master.key'))).toEqual(['master.key'])

    // Every wrapped data key and every sealed field is new; the new data key is not the old one.
    const rekeyed = vaultFiles(seeded.dataDir)
    for (const [userId, vault] of Object.entries(rekeyed)) {
      expect(vault.dataKey).not.toBe(oldFiles[userId].dataKey)
      const before = new Set(sealedOf(oldFiles[userId]).map((f) => f.sealed))
      for (const field of sealedOf(vault)) expect(before.has(field.sealed)).toBe(false)
      // The old master key does not unwrap the new data key at all.
      expect(sealedOf(vault).every(({ kind, id, sealed }) => keyOf(oldKey).vault(userId, vault.dataKey).open(kind, id, sealed) === null)).toBe(true)
    }
    // No change log keeps the old ciphertexts beside the files.
    expect(
      readdirSync(join(seeded.dataDir, 'vaults')).filter((name) => name.endsWith('.json.log') && statSync(join(seeded.dataDir, 'vaults', name)).size > 0),
    ).toEqual([])

    await expectAllReadable(seeded, { SVC_MASTER_KEY: undefined })
    const after = await writeAfterRotation(seeded, { SVC_MASTER_KEY: undefined })
    const current = vaultFiles(seeded.dataDir)
    // The attack: the old key and the pre-rotation files open nothing of today's files, old or new.
    expect(openedWithOldKeyAndOldFiles(oldKey, oldFiles, current)).toEqual({})
    expect(sealedOf(current[seeded.users[0].client.user.id]).map((f) => f.id)).toContain(after.simple.id)
    await expectAllReadable({ ...seeded, users: [{ client: seeded.users[0].client, secrets: after }, ...seeded.users] }, { SVC_MASTER_KEY: undefined })
    expect((await runServerToExit({ SVC_DATA_DIR: seeded.dataDir, SVC_MASTER_KEY: oldKey })).code).toBe(1)
  }, 60_000)

  test('key in SVC_MASTER_KEY: --rekey with SVC_NEW_MASTER_KEY; the old key opens nothing', async () => {
    const seeded = await seededFolder({ SVC_MASTER_KEY: TEST_MASTER_KEY })
    const oldFiles = vaultFiles(seeded.dataDir)
    const chosen = Buffer.alloc(32, 9).toString('base64')
    const result = await rotate({ SVC_DATA_DIR: seeded.dataDir, SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_NEW_MASTER_KEY: chosen }, ['--rekey'])
    expect(result.code).toBe(0)
    await expectAllReadable(seeded, { SVC_MASTER_KEY: chosen })
    const after = await writeAfterRotation(seeded, { SVC_MASTER_KEY: chosen })
    const opened = openedWithOldKeyAndOldFiles(TEST_MASTER_KEY, oldFiles, vaultFiles(seeded.dataDir))
    expect(opened).toEqual({})
    expect(after.simple.id).toBeTruthy()
    const bad = await rotate({ SVC_DATA_DIR: seeded.dataDir, SVC_MASTER_KEY: chosen }, ['--rekey', '--force'])
    expect(bad.code).toBe(1)
    expect(bad.output).toContain('unknown argument --force')
  }, 60_000)

  test('an interrupted --rekey: the server refuses to start, a re-run (even without the flag) finishes the vaults left', async () => {
    const seeded = await seededFolder({ SVC_MASTER_KEY: undefined })
    const keyPath = join(seeded.dataDir, 'master.key')
    const oldKey = readFileSync(keyPath, 'utf8').trim()
    const newKey = Buffer.alloc(32, 6).toString('base64')
    const oldFiles = vaultFiles(seeded.dataDir)
    // The state a run leaves when it dies after re-keying the first vault: the new key staged, the
    // key check set to the re-key marker, one vault with a new data key and every field sealed
    // again (one atomic write), the other still under the old key.
    writeFileSync(join(seeded.dataDir, 'master.key.new'), newKey + '\n', { mode: 0o600 })
    const accountsPath = join(seeded.dataDir, 'accounts.json')
    const accounts = JSON.parse(readFileSync(accountsPath, 'utf8'))
    accounts.keyCheck = 'rekey-in-progress'
    writeFileSync(accountsPath, JSON.stringify(accounts))
    const firstUser = seeded.users[0].client.user.id
    const secondUser = seeded.users[1].client.user.id
    const vaultPath = join(seeded.dataDir, 'vaults', `${firstUser}.json`)
    const vault = JSON.parse(readFileSync(vaultPath, 'utf8'))
    const rekey = keyOf(oldKey).rekeyVault(firstUser, vault.dataKey, keyOf(newKey))
    vault.dataKey = rekey.wrapped
    for (const entry of vault.entries) entry.encryptedValue = rekey.reseal('entry', entry.id, entry.encryptedValue)
    for (const token of vault.twoFactor) token.encryptedSecret = rekey.reseal('totp', token.id, token.encryptedSecret)
    for (const file of vault.envFiles) file.encryptedContent = rekey.reseal('envfile', file.id, file.encryptedContent)
    writeFileSync(vaultPath, JSON.stringify(vault))
    const halfway = vaultFiles(seeded.dataDir)

    for (const env of [{}, { SVC_MASTER_KEY: newKey }] as Record<string, string>[]) {
      const refused = await runServerToExit({ SVC_DATA_DIR: seeded.dataDir, ...env })
      expect(refused.code).toBe(1)
      expect(refused.output).not.toContain('listening')
      expect(refused.output).toContain('rotation was interrupted')
    }
    // A plain rotation may not be finished as a re-key, nor the reverse be mistaken for one.
    const plain = await rotate({ SVC_DATA_DIR: seeded.dataDir })
    expect(plain.code).toBe(0)
    expect(plain.output).toContain('finishing it as a re-key')
    expect(readFileSync(keyPath, 'utf8').trim()).toBe(newKey)
    expect(existsSync(join(seeded.dataDir, 'master.key.new'))).toBe(false)

    const finished = vaultFiles(seeded.dataDir)
    // The first vault was done already: left as it was. The second got a new data key and new fields.
    expect(sealedOf(finished[firstUser])).toEqual(sealedOf(halfway[firstUser]))
    expect(finished[secondUser].dataKey).not.toBe(oldFiles[secondUser].dataKey)
    const before = new Set(sealedOf(oldFiles[secondUser]).map((f) => f.sealed))
    for (const field of sealedOf(finished[secondUser])) expect(before.has(field.sealed)).toBe(false)
    await expectAllReadable(seeded, { SVC_MASTER_KEY: undefined })
    expect(openedWithOldKeyAndOldFiles(oldKey, oldFiles, vaultFiles(seeded.dataDir))).toEqual({})
  }, 60_000)

  test('--rekey refuses to finish an interrupted rotation that was not a re-key; nothing changes', async () => {
    const seeded = await seededFolder({ SVC_MASTER_KEY: TEST_MASTER_KEY })
    const accountsPath = join(seeded.dataDir, 'accounts.json')
    const accounts = JSON.parse(readFileSync(accountsPath, 'utf8'))
    accounts.keyCheck = 'rotation-in-progress'
    writeFileSync(accountsPath, JSON.stringify(accounts))
    const before = snapshot(seeded.dataDir)
    const refused = await rotate(
      { SVC_DATA_DIR: seeded.dataDir, SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_NEW_MASTER_KEY: Buffer.alloc(32, 3).toString('base64') },
      ['--rekey'],
    )
    expect(refused.code).toBe(1)
    expect(refused.output).toContain('without --rekey')
    expect(snapshot(seeded.dataDir)).toEqual(before)
  }, 30_000)
})
