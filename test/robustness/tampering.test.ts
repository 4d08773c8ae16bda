// Tampering with the stored ciphertexts: a flipped byte, a ciphertext moved to another record, kind
// or user, data keys swapped between users. Every reveal then answers 404 with the resource's code:
// never another plaintext, never 500. Putting the files back makes every reveal work again.
import { afterAll, beforeAll, expect } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { signUp, type Client } from '../support/client'
import { removeDir, startTestServer, tempDir, type TestServer } from '../support/server'
import type { Draft, VaultDocument } from '../../src/store/records'
import { modules, TOTP_SECRET, type Modules } from './support'
import { ON_POSTGRES } from '../support/postgres'
import { testOnFileStore } from '../support/requirements'

// Every test here works on the data folder's own files: on the file store only (the reason is
// printed with each skip).
const test = testOnFileStore('it tampers with the vault files of the data folder')

const dataDir = tempDir('svc-vault-tamper-')
let server: TestServer
let mods: Modules
let alice: Client & { user: { id: string } }
let bob: Client & { user: { id: string } }

interface Secrets {
  entries: { id: string; value: string }[]
  tokens: { id: string }[]
  files: { projectId: string; id: string; content: string }[]
}
const secrets: Record<'alice' | 'bob', Secrets> = {
  alice: { entries: [], tokens: [], files: [] },
  bob: { entries: [], tokens: [], files: [] },
}

async function fill(client: Client, who: 'alice' | 'bob') {
  if (mods.entries) {
    const category = (await client.post('/api/categories', { name: 'API', keyType: 'simple', envVarName: 'API_KEY' })).body
    for (const n of [1, 2]) {
      const value = `${who}-entry-secret-${n}`
      const made = await client.post('/api/entries', { categoryId: category.id, name: `app${n}`, value })
      expect(made.status).toBe(201)
      secrets[who].entries.push({ id: made.body.id, value })
    }
  }
  if (mods.twoFactor) {
    for (const n of [1, 2]) {
      const made = await client.post('/api/2fa', { service: `svc${n}`, accountName: who, secret: TOTP_SECRET })
      expect(made.status).toBe(201)
      secrets[who].tokens.push({ id: made.body.id })
    }
  }
  if (mods.envs) {
    for (const n of [1, 2]) {
      const project = (await client.post('/api/envs', { name: `p${n}` })).body.data
      const content = `SECRET=${who}-env-secret-${n}\n`
      const file = await client.post(`/api/envs/${project.id}/files`, { fileType: 'env', content })
      expect(file.status).toBe(201)
      secrets[who].files.push({ projectId: project.id, id: file.body.data.id, content })
    }
  }
}

const vaultPath = (userId: string) => join(dataDir, 'vaults', `${userId}.json`)
let originals: Record<string, string> = {}

beforeAll(async () => {
  // Bun runs this even when every test is skipped.
  if (ON_POSTGRES) return
  server = await startTestServer({ dataDir })
  mods = await modules(server.url)
  alice = await signUp(server.url)
  bob = await signUp(server.url)
  await fill(alice, 'alice')
  await fill(bob, 'bob')
  await server.stop()
  originals = { alice: readFileSync(vaultPath(alice.user.id), 'utf8'), bob: readFileSync(vaultPath(bob.user.id), 'utf8') }
})
// Every test stops the server it started (withTampered's finally).
afterAll(() => removeDir(dataDir))

/** Reveals everything of a user: 'ok' when it shows the right plaintext, else the 4xx code. */
async function revealAll(client: Client, who: 'alice' | 'bob'): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  const outcome = (answer: { status: number; body: any; text: string }, right: (body: any) => boolean, key: string) => {
    expect({ key, status: answer.status < 500 }).toEqual({ key, status: true })
    if (answer.status === 200) out[key] = right(answer.body) ? 'ok' : `WRONG PLAINTEXT ${answer.text}`
    else {
      expect(Object.keys(answer.body).sort()).toEqual(['code', 'error'])
      out[key] = `${answer.status} ${answer.body.code}`
    }
  }
  for (const e of secrets[who].entries) outcome(await client.post(`/api/entries/${e.id}/reveal`), (b) => b.value === e.value, `entry ${e.id}`)
  for (const t of secrets[who].tokens) outcome(await client.post(`/api/2fa/${t.id}/reveal`), (b) => /^\d{6}$/.test(b.code), `2fa ${t.id}`)
  for (const f of secrets[who].files) {
    outcome(await client.post(`/api/envs/${f.projectId}/files/${f.id}/reveal`), (b) => b.data.content === f.content, `envfile ${f.id}`)
  }
  return out
}

const allOk = (who: 'alice' | 'bob') =>
  Object.fromEntries([
    ...secrets[who].entries.map((e) => [`entry ${e.id}`, 'ok']),
    ...secrets[who].tokens.map((t) => [`2fa ${t.id}`, 'ok']),
    ...secrets[who].files.map((f) => [`envfile ${f.id}`, 'ok']),
  ])

const NOT_FOUND: Record<string, string> = { entry: '404 ENTRY_NOT_FOUND', '2fa': '404 TWO_FACTOR_NOT_FOUND', envfile: '404 ENV_FILE_NOT_FOUND' }

/** Writes tampered vaults, starts the server, returns every reveal's outcome, stops it again. */
async function withTampered(mutate: (a: Draft<VaultDocument>, b: Draft<VaultDocument>) => void) {
  const a = JSON.parse(originals.alice) as Draft<VaultDocument>
  const b = JSON.parse(originals.bob) as Draft<VaultDocument>
  mutate(a, b)
  writeFileSync(vaultPath(alice.user.id), JSON.stringify(a))
  writeFileSync(vaultPath(bob.user.id), JSON.stringify(b))
  server = await startTestServer({ dataDir })
  for (const client of [alice, bob]) (client as { base: string }).base = server.url
  try {
    const outcomes = { alice: await revealAll(alice, 'alice'), bob: await revealAll(bob, 'bob') }
    // Lists, stats and the export keep working around what does not open: 200, every record
    // counted (tampering damages ciphertexts, not records), and the export holds exactly the
    // values that still open.
    const items = (body: any) => (Array.isArray(body) ? body : body.data) as unknown[]
    const lists: [string, number, boolean][] = [
      ['/api/categories', mods.entries ? 1 : 0, true],
      ['/api/entries', secrets.alice.entries.length, mods.entries],
      ['/api/2fa', secrets.alice.tokens.length, mods.twoFactor],
      ['/api/envs', secrets.alice.files.length, mods.envs],
    ]
    for (const [path, count, present] of lists) {
      if (!present) continue
      const answer = await alice.get(path)
      expect({ path, status: answer.status, count: items(answer.body)?.length }).toEqual({ path, status: 200, count })
      expect(answer.text).not.toContain('bob-')
    }
    if (mods.stats) {
      const stats = await alice.get('/api/stats')
      expect(stats.status).toBe(200)
      expect(stats.body).toMatchObject({
        totalCategories: mods.entries ? 1 : 0,
        totalEntries: secrets.alice.entries.length,
        total2fa: secrets.alice.tokens.length,
      })
    }
    if (mods.entries) {
      // Both entries write API_KEY: one export per project (a variable appears once, issue 30).
      const answers = await Promise.all(['app1', 'app2'].map((name) => alice.get(`/api/export?name=${name}`)))
      const exported = { status: answers.find((answer) => answer.status !== 200)?.status ?? 200, text: answers.map((answer) => answer.text).join('\n') }
      expect(exported.status).toBe(200)
      expect(exported.text).not.toContain('bob-')
      const inExport = secrets.alice.entries.map((e) => [e.id, exported.text.includes(e.value)])
      expect(inExport).toEqual(secrets.alice.entries.map((e) => [e.id, outcomes.alice[`entry ${e.id}`] === 'ok']))
    }
    return outcomes
  } finally {
    await server.stop()
    writeFileSync(vaultPath(alice.user.id), originals.alice)
    writeFileSync(vaultPath(bob.user.id), originals.bob)
  }
}

function flipByte(sealed: string, part: 1 | 2, at = 3): string {
  const parts = sealed.split('.')
  const bytes = Buffer.from(parts[part], 'base64url')
  bytes[at % bytes.length] ^= 0x01
  parts[part] = bytes.toString('base64url')
  return parts.join('.')
}

const fields = (doc: VaultDocument) => [
  ...doc.entries.map((r) => ({ kind: 'entry', record: r as unknown as Record<string, string>, field: 'encryptedValue' })),
  ...doc.twoFactor.map((r) => ({ kind: '2fa', record: r as unknown as Record<string, string>, field: 'encryptedSecret' })),
  ...doc.envFiles.map((r) => ({ kind: 'envfile', record: r as unknown as Record<string, string>, field: 'encryptedContent' })),
]

test('untouched files reveal every secret', async () => {
  const outcomes = await withTampered(() => {})
  expect(outcomes).toEqual({ alice: allOk('alice'), bob: allOk('bob') })
  expect(Object.keys(outcomes.alice).length).toBeGreaterThan(0)
})

test('a flipped byte in a ciphertext, its tag, its IV, or a mangled format: 404', async () => {
  const manglers = [
    (s: string) => flipByte(s, 2, 0),
    (s: string) => flipByte(s, 2, -1 >>> 0),
    (s: string) => flipByte(s, 1),
    (s: string) => s.slice(0, -4),
    (s: string) => s.replace(/^v1\./, 'v2.'),
    () => '',
    () => 'v1..',
  ]
  for (const mangle of manglers) {
    const outcomes = await withTampered((a) => {
      // The first record of each kind is damaged; the second stays as it was.
      for (const kind of Object.keys(NOT_FOUND)) {
        const first = fields(a).find((f) => f.kind === kind)
        if (first) first.record[first.field] = mangle(first.record[first.field])
      }
    })
    const expected = allOk('alice')
    for (const kind of Object.keys(NOT_FOUND)) {
      const first = Object.keys(expected).find((key) => key.startsWith(`${kind} `))
      if (first) expected[first] = NOT_FOUND[kind]
    }
    expect(outcomes).toEqual({ alice: expected, bob: allOk('bob') })
  }
})

test('a ciphertext copied to another record, another kind, or another user: 404', async () => {
  const outcomes = await withTampered((a, b) => {
    const mine = fields(a)
    const theirs = fields(b)
    for (const kind of Object.keys(NOT_FOUND)) {
      const [first, second] = mine.filter((f) => f.kind === kind)
      if (!first) continue
      // Alice's second record gets her first record's ciphertext.
      second.record[second.field] = first.record[first.field]
      // Bob's first record gets Alice's first record's ciphertext.
      const bobs = theirs.find((f) => f.kind === kind)!
      bobs.record[bobs.field] = first.record[first.field]
    }
    // Across kinds: Bob's second token gets his second entry's ciphertext, and so on around.
    const seconds = Object.keys(NOT_FOUND)
      .map((kind) => theirs.filter((f) => f.kind === kind)[1])
      .filter(Boolean)
    const values = seconds.map((f) => f.record[f.field])
    seconds.forEach((f, i) => (f.record[f.field] = values[(i + 1) % values.length]))
  })
  const expectedAlice = allOk('alice')
  const expectedBob = allOk('bob')
  const kindsPresent = [secrets.bob.entries, secrets.bob.tokens, secrets.bob.files].filter((list) => list.length > 1).length
  for (const kind of Object.keys(NOT_FOUND)) {
    const aliceKeys = Object.keys(expectedAlice).filter((key) => key.startsWith(`${kind} `))
    if (aliceKeys[1]) expectedAlice[aliceKeys[1]] = NOT_FOUND[kind]
    const bobKeys = Object.keys(expectedBob).filter((key) => key.startsWith(`${kind} `))
    if (bobKeys[0]) expectedBob[bobKeys[0]] = NOT_FOUND[kind]
    // Rotated across kinds only when there are at least two kinds.
    if (bobKeys[1] && kindsPresent > 1) expectedBob[bobKeys[1]] = NOT_FOUND[kind]
  }
  expect(outcomes).toEqual({ alice: expectedAlice, bob: expectedBob })
})

test('data keys swapped between users: nothing of either opens, nothing answers 500', async () => {
  const outcomes = await withTampered((a, b) => {
    ;[a.dataKey, b.dataKey] = [b.dataKey, a.dataKey]
  })
  const none = (who: 'alice' | 'bob') => Object.fromEntries(Object.keys(allOk(who)).map((key) => [key, NOT_FOUND[key.split(' ')[0]]]))
  expect(outcomes).toEqual({ alice: none('alice'), bob: none('bob') })
})

test('a vault file moved to another user: nothing opens', async () => {
  const outcomes = await withTampered((a, b) => {
    // Bob's file now holds Alice's whole vault (her records, her wrapped key) under his id.
    const copy = JSON.parse(JSON.stringify(a)) as VaultDocument
    Object.assign(b, copy, { userId: b.userId })
  })
  expect(outcomes.alice).toEqual(allOk('alice'))
  // Bob's ids are gone from his vault: 404. And Alice's ids through Bob: 404, never her plaintext.
  const aliceThroughBob = await (async () => {
    const a = JSON.parse(originals.alice) as VaultDocument
    writeFileSync(vaultPath(bob.user.id), JSON.stringify({ ...a, userId: bob.user.id }))
    server = await startTestServer({ dataDir })
    ;(bob as { base: string }).base = server.url
    try {
      const saved = secrets.bob
      secrets.bob = secrets.alice
      const result = await revealAll(bob, 'bob')
      secrets.bob = saved
      return result
    } finally {
      await server.stop()
      writeFileSync(vaultPath(bob.user.id), originals.bob)
    }
  })()
  expect(Object.values(aliceThroughBob).every((v) => v.startsWith('404 '))).toBe(true)
  expect(Object.values(outcomes.bob).every((v) => v.startsWith('404 '))).toBe(true)
})
