// Every sealed field is bound to its user, record kind and record id: a ciphertext moved to another
// record, or a data key moved to another vault, does not decrypt, and the reveal answers 404: in
// a vault file, and in the database's rows (values sealed there exactly as in a file, same AAD).
import { afterAll, describe, expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Database } from '../../src/store/postgres/database'
import { loadDocument } from '../../src/store/postgres/document'
import { VAULT_LISTS } from '../../src/store/records'
import { Client, signUp } from '../support/client'
import { databaseFor, ON_POSTGRES } from '../support/postgres'
import { removeDir, startTestServer, type TestServer } from '../support/server'
import { created, expectSecretsReadable, seedSecrets } from './secrets'

const servers: TestServer[] = []
afterAll(async () => {
  for (const server of servers) removeDir(server.dataDir)
})

const vaultPath = (dataDir: string, userId: string) => join(dataDir, 'vaults', `${userId}.json`)

/**
 * A personal vault's document as stored: its file, or on the database store (the suite's second
 * pass) its rows, read whole. Written back as the file, or as the document's snapshot at its
 * latest version (what a server reads at start).
 */
async function readVault(dataDir: string, userId: string): Promise<any> {
  if (!ON_POSTGRES) return JSON.parse(readFileSync(vaultPath(dataDir, userId), 'utf8'))
  const db = new Database(await databaseFor(dataDir), { max: 1 })
  try {
    return (await loadDocument(db, userId, VAULT_LISTS))!.data
  } finally {
    await db.close()
  }
}
async function writeVault(dataDir: string, userId: string, data: unknown): Promise<void> {
  if (!ON_POSTGRES) return writeFileSync(vaultPath(dataDir, userId), JSON.stringify(data))
  const db = new Database(await databaseFor(dataDir), { max: 1 })
  try {
    const { version } = (await loadDocument(db, userId, VAULT_LISTS))!
    await db.run((sql) => sql`UPDATE svc_documents SET snapshot = ${JSON.stringify(data)}, packed = NULL, snapshot_version = ${version} WHERE id = ${userId}`)
  } finally {
    await db.close()
  }
}

/** Stops the server, lets `edit` change what it stored, starts a new server on the same folder (and database). */
async function restartAfter(server: TestServer, edit: () => Promise<void>): Promise<TestServer> {
  await server.stop()
  await edit()
  const next = await startTestServer({ dataDir: server.dataDir })
  servers.push(next)
  return next
}

const reconnect = (client: Client, url: string) => new Client(url, client.credentials)

describe('moved ciphertexts', () => {
  test('an entry value, 2FA secret or env file content moved to another record answers 404; the source still opens', async () => {
    let server = await startTestServer()
    servers.push(server)
    const alice = await signUp(server.url)
    const bob = await signUp(server.url)
    const a1 = await seedSecrets(alice)
    const a2 = await seedSecrets(alice)
    const b1 = await seedSecrets(bob)

    server = await restartAfter(server, async () => {
      const vault = await readVault(server.dataDir, alice.user.id)
      const byId = (list: any[], id: string) => list.find((record) => record.id === id)
      byId(vault.entries, a2.simple.id).encryptedValue = byId(vault.entries, a1.simple.id).encryptedValue
      byId(vault.entries, a2.group.id).encryptedValue = byId(vault.entries, a1.simple.id).encryptedValue
      byId(vault.twoFactor, a2.totp.id).encryptedSecret = byId(vault.twoFactor, a1.totp.id).encryptedSecret
      byId(vault.envFiles, a2.envFile.id).encryptedContent = byId(vault.envFiles, a1.envFile.id).encryptedContent
      await writeVault(server.dataDir, alice.user.id, vault)
      // Across users: bob's entry gets alice's ciphertext.
      const bobVault = await readVault(server.dataDir, bob.user.id)
      byId(bobVault.entries, b1.simple.id).encryptedValue = byId(vault.entries, a1.simple.id).encryptedValue
      await writeVault(server.dataDir, bob.user.id, bobVault)
    })
    const aliceNow = reconnect(alice, server.url)
    const bobNow = reconnect(bob, server.url)

    await expectSecretsReadable(aliceNow, a1)
    const answers: [Awaited<ReturnType<Client['post']>>, string][] = [
      [await aliceNow.post(`/api/entries/${a2.simple.id}/reveal`), 'ENTRY_NOT_FOUND'],
      [await aliceNow.post(`/api/entries/${a2.group.id}/reveal`), 'ENTRY_NOT_FOUND'],
      [await aliceNow.post(`/api/2fa/${a2.totp.id}/reveal`), 'TWO_FACTOR_NOT_FOUND'],
      [await aliceNow.post(`/api/envs/${a2.envFile.projectId}/files/${a2.envFile.id}/reveal`), 'ENV_FILE_NOT_FOUND'],
      [await bobNow.post(`/api/entries/${b1.simple.id}/reveal`), 'ENTRY_NOT_FOUND'],
    ]
    for (const [answer, code] of answers) {
      expect(answer.status).toBe(404)
      expect(answer.body).toEqual({ error: expect.any(String), code })
      expect(answer.text).not.toContain(a1.simple.value)
    }
    // The same answer as a missing record.
    const missing = await aliceNow.post(`/api/entries/${crypto.randomUUID()}/reveal`)
    expect(answers[0][0].text).toBe(missing.text)
    // The records themselves are still listed; only their secret does not open.
    expect((await aliceNow.get(`/api/entries/${a2.simple.id}`)).status).toBe(200)
    // Bob's other secrets are untouched.
    const bobGroup = await bobNow.post(`/api/entries/${b1.group.id}/reveal`)
    expect(bobGroup.body.value).toEqual(b1.group.value)
    await server.stop()
  })

  test("a vault's data key moved to another user's vault opens nothing there; a tampered ciphertext answers 404", async () => {
    let server = await startTestServer()
    servers.push(server)
    const alice = await signUp(server.url)
    const bob = await signUp(server.url)
    const a = await seedSecrets(alice)
    const b = await seedSecrets(bob)
    const category = await created(alice.post('/api/categories', { name: 'T', keyType: 'simple', envVarName: 'T' }))
    const tampered = await created(alice.post('/api/entries', { categoryId: category.id, name: 't', value: 'tamper me' }))

    server = await restartAfter(server, async () => {
      const aliceVault = await readVault(server.dataDir, alice.user.id)
      const bobVault = await readVault(server.dataDir, bob.user.id)
      bobVault.dataKey = aliceVault.dataKey
      await writeVault(server.dataDir, bob.user.id, bobVault)
      const entry = aliceVault.entries.find((e: any) => e.id === tampered.id)
      const last = entry.encryptedValue.at(-2) === 'A' ? 'B' : 'A'
      entry.encryptedValue = entry.encryptedValue.slice(0, -2) + last + entry.encryptedValue.at(-1)
      await writeVault(server.dataDir, alice.user.id, aliceVault)
    })
    const aliceNow = reconnect(alice, server.url)
    const bobNow = reconnect(bob, server.url)
    await expectSecretsReadable(aliceNow, a)
    expect((await aliceNow.post(`/api/entries/${tampered.id}/reveal`)).body.code).toBe('ENTRY_NOT_FOUND')
    expect((await bobNow.post(`/api/entries/${b.simple.id}/reveal`)).body.code).toBe('ENTRY_NOT_FOUND')
    expect((await bobNow.post(`/api/2fa/${b.totp.id}/reveal`)).body.code).toBe('TWO_FACTOR_NOT_FOUND')
    expect((await bobNow.post(`/api/envs/${b.envFile.projectId}/files/${b.envFile.id}/reveal`)).body.code).toBe('ENV_FILE_NOT_FOUND')
    await server.stop()
  })
})
