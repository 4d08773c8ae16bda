// Issue 32: import files the plain variables of an app (no service, no shared prefix) in one group
// rather than one category each, answers one key per pasted variable, and a re-import of unchanged
// values marks them "same" and leaves the entries as they were (no new version, no history churn).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { signUp, type Client } from '../support/client'
import { startTestServer, type TestServer } from '../support/server'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

const APP = [
  'NODE_ENV=production',
  'PORT=3000',
  'DB_PASSWORD=hunter2',
  'LOG_LEVEL=info',
  'SESSION_SECRET=s3cret',
  'OPENAI_API_KEY=sk-live',
  'JWT_SECRET=jwt-1',
  'JWT_ISSUER=me',
  'PUBLIC_URL=https://blog.example',
  'TIMEZONE=UTC',
  'WORKERS=4',
  'FEATURE_FLAGS=a,b',
  'ADMIN_EMAIL=me@example.test',
].join('\n')

const importApp = (client: Client, text: string) => client.post('/api/ai/import', { text, apply: true, name: 'blog', environment: 'production' })

describe('import: plain variables and unchanged values', () => {
  test('13 pasted variables are 13 keys; the plain ones share one group, not a category each', async () => {
    const alice = await signUp(server.url)
    const first = await importApp(alice, APP)
    expect(first.status).toBe(200)
    expect(first.body.data.keys).toHaveLength(13)
    const categories = (await alice.get('/api/categories')).body
    // OpenAI, the JWT group and the one group of plain variables.
    expect(categories.map((c: any) => c.name).sort()).toEqual(['JWT', 'OpenAI', 'Variables'])
    const plain = first.body.data.keys.filter((k: any) => k.categoryName === 'Variables').map((k: any) => k.name)
    expect(plain.sort()).toEqual([
      'ADMIN_EMAIL',
      'DB_PASSWORD',
      'FEATURE_FLAGS',
      'LOG_LEVEL',
      'NODE_ENV',
      'PORT',
      'PUBLIC_URL',
      'SESSION_SECRET',
      'TIMEZONE',
      'WORKERS',
    ])
    // Each entry says how many variables it holds (names only): 13 in all, as pasted.
    const listed = (await alice.get('/api/entries')).body
    expect(listed.reduce((sum: number, e: any) => sum + (e.fields?.length ?? 1), 0)).toBe(13)
    expect(listed.find((e: any) => e.category.name === 'Variables').fields.sort()).toEqual(plain)
    expect(JSON.stringify(listed)).not.toContain('hunter2')
    // The export gives back every variable as pasted.
    const exported = (await alice.get('/api/export?environment=production&name=blog')).text
    for (const line of APP.split('\n')) expect(exported).toContain(line.split('=')[0])

    // Another project's plain variables go to the same group, in an entry of their own.
    await alice.post('/api/ai/import', { text: 'PORT=8080\nCACHE_TTL=60\n', apply: true, name: 'shop' })
    expect((await alice.get('/api/categories')).body).toHaveLength(3)
  })

  test('re-importing unchanged values marks them same and writes no version; a changed value is updated', async () => {
    const bob = await signUp(server.url)
    expect((await importApp(bob, APP)).status).toBe(200)
    const entriesBefore = (await bob.get('/api/entries')).body
    for (let round = 0; round < 3; round++) {
      const again = await importApp(bob, APP)
      expect(again.status).toBe(200)
      expect(again.body.data.keys.every((k: any) => k.same === true)).toBe(true)
      expect(again.body.data.updated.entries).toEqual([])
      expect(again.body.data.unchanged.entries.sort()).toEqual(entriesBefore.map((e: any) => e.id).sort())
    }
    const entriesAfter = (await bob.get('/api/entries')).body
    expect(entriesAfter.map((e: any) => e.updatedAt)).toEqual(entriesBefore.map((e: any) => e.updatedAt))
    for (const entry of entriesAfter) expect((await bob.get(`/api/entries/${entry.id}/versions`)).body).toEqual([])

    // One value changed: only its entry is rewritten (one version kept); the rest stay the same.
    const changed = await importApp(bob, APP.replace('PORT=3000', 'PORT=4000'))
    const port = changed.body.data.keys.find((k: any) => k.name === 'PORT')
    expect(port.same).toBeUndefined()
    expect(changed.body.data.keys.find((k: any) => k.name === 'OPENAI_API_KEY').same).toBe(true)
    expect(changed.body.data.updated.entries).toHaveLength(1)
    const variables = entriesAfter.find((e: any) => e.category.name === 'Variables')
    expect(changed.body.data.updated.entries).toEqual([variables.id])
    expect((await bob.get(`/api/entries/${variables.id}/versions`)).body).toHaveLength(1)
    expect((await bob.post(`/api/entries/${variables.id}/reveal`)).body.value).toMatchObject({ PORT: '4000', NODE_ENV: 'production' })
  })
})
