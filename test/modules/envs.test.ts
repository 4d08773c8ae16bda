import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { signUp, type Client } from '../support/client'
import { startTestServer, type TestServer } from '../support/server'
import { setStoredFields } from '../support/stored'

let server: TestServer
let alice: Client & { user: any }
let bob: Client & { user: any }

// The server's clock: real time plus what a test moves it on (timestamps that differ, without waiting).
let clockOffset = 0
beforeAll(async () => {
  server = await startTestServer({ now: () => Date.now() + clockOffset })
  alice = await signUp(server.url)
  bob = await signUp(server.url)
})
afterAll(() => server.stop())

const CANARY = 'CANARY_ENV_CONTENT_7f3a9c'
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

async function project(client: Client, name = 'web app', description?: string) {
  const answer = await client.post('/api/envs', description === undefined ? { name } : { name, description })
  expect(answer.status).toBe(201)
  return answer.body.data
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? filesUnder(path) : [path]
  })
}

describe('env projects', () => {
  test('create, get, list, update, delete, all inside { data }', async () => {
    const created = await alice.post('/api/envs', { name: 'Billing API', description: 'stripe hooks' })
    expect(created.status).toBe(201)
    const data = created.body.data
    expect(Object.keys(created.body)).toEqual(['data'])
    expect(data).toMatchObject({ name: 'Billing API', description: 'stripe hooks', userId: alice.user.id, fileCount: 0 })
    expect(data.id).toMatch(UUID)
    expect(Date.parse(data.createdAt)).not.toBeNaN()
    expect(data.updatedAt).toBe(data.createdAt)

    const detail = await alice.get(`/api/envs/${data.id}`)
    expect(detail.status).toBe(200)
    expect(detail.body).toEqual({ data: { ...data, files: [] } })

    const list = await alice.get('/api/envs')
    expect(list.status).toBe(200)
    const item = list.body.data.find((p: any) => p.id === data.id)
    expect(item).toEqual({ id: data.id, name: 'Billing API', description: 'stripe hooks', fileCount: 0, createdAt: data.createdAt, updatedAt: data.updatedAt })

    const renamed = await alice.put(`/api/envs/${data.id}`, { name: 'Billing service' })
    expect(renamed.status).toBe(200)
    expect(renamed.body.data).toMatchObject({ id: data.id, userId: alice.user.id, name: 'Billing service', description: 'stripe hooks', fileCount: 0 })
    const described = await alice.put(`/api/envs/${data.id}`, { description: '' })
    expect(described.body.data).toMatchObject({ name: 'Billing service', description: '' })
    expect((await alice.put(`/api/envs/${data.id}`, {})).status).toBe(200)

    const removed = await alice.delete(`/api/envs/${data.id}`)
    expect(removed.status).toBe(204)
    expect(removed.text).toBe('')
    const gone = await alice.get(`/api/envs/${data.id}`)
    expect(gone.status).toBe(404)
    expect(gone.body).toEqual({ error: 'Env project not found', code: 'ENV_PROJECT_NOT_FOUND' })
    expect((await alice.delete(`/api/envs/${data.id}`)).status).toBe(404)
  })

  test('description defaults to an empty string', async () => {
    const data = await project(alice, 'no description')
    expect(data.description).toBe('')
  })

  test('search filters by a case-insensitive substring of the name', async () => {
    const user = await signUp(server.url)
    await project(user, 'Marketing Site')
    await project(user, 'internal TOOLS')
    await project(user, 'site-admin')
    const names = async (query: string) => ((await user.get(`/api/envs${query}`)).body.data as any[]).map((p) => p.name).sort()
    expect(await names('?search=SITE')).toEqual(['Marketing Site', 'site-admin'])
    expect(await names('?search=tools')).toEqual(['internal TOOLS'])
    expect(await names('?search=nothing-like-it')).toEqual([])
    expect(await names('?search=')).toEqual(['Marketing Site', 'internal TOOLS', 'site-admin'])
    expect(await names('')).toEqual(['Marketing Site', 'internal TOOLS', 'site-admin'])
    expect(await names(`?search=${encodeURIComponent('g s')}`)).toEqual(['Marketing Site'])
    // Other query parameters (a cache buster) are ignored.
    expect(await names('?search=admin&_=123')).toEqual(['site-admin'])
  })

  test('files: created 201, replaced 200 keeping the id, listed without content, revealed', async () => {
    const { id } = await project(alice, 'files')
    const first = await alice.post(`/api/envs/${id}/files`, { fileType: 'env', content: `API_KEY=${CANARY}-1\n` })
    expect(first.status).toBe(201)
    const file = first.body.data
    expect(first.body).toEqual({ data: { id: file.id, projectId: id, fileType: 'env', createdAt: file.createdAt, updatedAt: file.updatedAt } })
    expect(file.id).toMatch(UUID)

    const local = await alice.post(`/api/envs/${id}/files`, { fileType: 'env.local', content: '' })
    expect(local.status).toBe(201)

    clockOffset += 1000
    const replaced = await alice.post(`/api/envs/${id}/files`, { fileType: 'env', content: `API_KEY=${CANARY}-2\n` })
    expect(replaced.status).toBe(200)
    expect(replaced.body.data.id).toBe(file.id)
    expect(replaced.body.data.createdAt).toBe(file.createdAt)
    expect(replaced.body.data.updatedAt > file.updatedAt).toBe(true)

    const detail = (await alice.get(`/api/envs/${id}`)).body.data
    expect(detail.fileCount).toBe(2)
    expect(detail.updatedAt).toBe(replaced.body.data.updatedAt)
    expect(detail.files.map((f: any) => f.fileType).sort()).toEqual(['env', 'env.local'])
    for (const f of detail.files) expect(Object.keys(f).sort()).toEqual(['createdAt', 'fileType', 'id', 'projectId', 'updatedAt'])
    expect(((await alice.get('/api/envs')).body.data as any[]).find((p) => p.id === id).fileCount).toBe(2)

    const revealed = await alice.post(`/api/envs/${id}/files/${file.id}/reveal`)
    expect(revealed.status).toBe(200)
    expect(revealed.headers.get('cache-control')).toBe('no-store')
    expect(revealed.body).toEqual({ data: { id: file.id, projectId: id, fileType: 'env', content: `API_KEY=${CANARY}-2\n` } })
    const empty = await alice.post(`/api/envs/${id}/files/${local.body.data.id}/reveal`)
    expect(empty.body.data.content).toBe('')

    for (const fileType of ['env.production', 'env.development']) {
      expect((await alice.post(`/api/envs/${id}/files`, { fileType, content: 'A=1' })).status).toBe(201)
    }
    expect((await alice.get(`/api/envs/${id}`)).body.data.fileCount).toBe(4)
  })

  test('content keeps every byte: unicode, quotes, several lines, up to 1 MiB', async () => {
    const { id } = await project(alice, 'bytes')
    const tricky = 'A="x y"\nB=\'#not a comment\'\r\nC=`$HOME` \\n\n  D = ünïcødé 🔑  \n'
    const stored = await alice.post(`/api/envs/${id}/files`, { fileType: 'env', content: tricky })
    expect((await alice.post(`/api/envs/${id}/files/${stored.body.data.id}/reveal`)).body.data.content).toBe(tricky)

    const big = 'x'.repeat(1024 * 1024)
    const large = await alice.post(`/api/envs/${id}/files`, { fileType: 'env.local', content: big })
    expect(large.status).toBe(201)
    expect((await alice.post(`/api/envs/${id}/files/${large.body.data.id}/reveal`)).body.data.content.length).toBe(big.length)
  })

  test('deleting a file, and a file only exists through its own project', async () => {
    const one = await project(alice, 'one')
    const two = await project(alice, 'two')
    const file = (await alice.post(`/api/envs/${one.id}/files`, { fileType: 'env', content: 'A=1' })).body.data
    const notFound = { error: 'Env file not found', code: 'ENV_FILE_NOT_FOUND' }

    for (const answer of [
      await alice.delete(`/api/envs/${two.id}/files/${file.id}`),
      await alice.post(`/api/envs/${two.id}/files/${file.id}/reveal`),
      await alice.delete(`/api/envs/${one.id}/files/${crypto.randomUUID()}`),
      await alice.post(`/api/envs/${one.id}/files/${crypto.randomUUID()}/reveal`),
      await alice.post(`/api/envs/${one.id}/files/not-a-uuid/reveal`),
    ]) {
      expect(answer.status).toBe(404)
      expect(answer.body).toEqual(notFound)
    }
    const missingProject = await alice.delete(`/api/envs/${crypto.randomUUID()}/files/${file.id}`)
    expect(missingProject.body.code).toBe('ENV_PROJECT_NOT_FOUND')

    const removed = await alice.delete(`/api/envs/${one.id}/files/${file.id}`)
    expect(removed.status).toBe(204)
    expect(removed.text).toBe('')
    expect((await alice.get(`/api/envs/${one.id}`)).body.data).toMatchObject({ fileCount: 0, files: [] })
    expect((await alice.post(`/api/envs/${one.id}/files/${file.id}/reveal`)).body).toEqual(notFound)
    expect((await alice.delete(`/api/envs/${one.id}/files/${file.id}`)).status).toBe(404)
  })

  test('deleting a project deletes its files', async () => {
    const doomed = await project(alice, 'doomed')
    const kept = await project(alice, 'kept')
    const file = (await alice.post(`/api/envs/${doomed.id}/files`, { fileType: 'env', content: 'A=1' })).body.data
    const keptFile = (await alice.post(`/api/envs/${kept.id}/files`, { fileType: 'env', content: 'B=2' })).body.data
    expect((await alice.delete(`/api/envs/${doomed.id}`)).status).toBe(204)

    const { data } = await server.deps.vaults.open(alice.user.id)
    expect(data.envFiles.some((f) => f.id === file.id)).toBe(false)
    expect(data.envFiles.some((f) => f.id === keptFile.id)).toBe(true)
    expect((await alice.post(`/api/envs/${doomed.id}/files/${file.id}/reveal`)).body.code).toBe('ENV_PROJECT_NOT_FOUND')
    expect((await alice.post(`/api/envs/${kept.id}/files/${keptFile.id}/reveal`)).body.data.content).toBe('B=2')
  })

  test('content that does not decrypt answers as a missing file', async () => {
    const { id } = await project(alice, 'tampered')
    const file = (await alice.post(`/api/envs/${id}/files`, { fileType: 'env', content: 'A=1' })).body.data
    const other = (await alice.post(`/api/envs/${id}/files`, { fileType: 'env.local', content: 'B=2' })).body.data
    const { doc } = await server.deps.vaults.open(alice.user.id)
    // A ciphertext moved to another record does not open there (it is bound to its record id).
    await doc.update((data, write) => {
      setStoredFields(write.envFiles, data.envFiles, file.id, { encryptedContent: data.envFiles.find((f) => f.id === other.id)!.encryptedContent })
    })
    const answer = await alice.post(`/api/envs/${id}/files/${file.id}/reveal`)
    expect(answer.status).toBe(404)
    expect(answer.body).toEqual({ error: 'Env file not found', code: 'ENV_FILE_NOT_FOUND' })
  })

  test("another user's project and files answer exactly as missing ones, on every endpoint", async () => {
    const mine = await project(alice, 'private')
    const file = (await alice.post(`/api/envs/${mine.id}/files`, { fileType: 'env', content: `S=${CANARY}` })).body.data
    const projectNotFound = { error: 'Env project not found', code: 'ENV_PROJECT_NOT_FOUND' }
    for (const id of [mine.id, crypto.randomUUID(), 'not-a-uuid']) {
      for (const fileId of [file.id, crypto.randomUUID()]) {
        for (const answer of [
          await bob.get(`/api/envs/${id}`),
          await bob.put(`/api/envs/${id}`, { name: 'stolen' }),
          await bob.post(`/api/envs/${id}/files`, { fileType: 'env', content: 'X=1' }),
          await bob.delete(`/api/envs/${id}/files/${fileId}`),
          await bob.post(`/api/envs/${id}/files/${fileId}/reveal`),
          await bob.delete(`/api/envs/${id}`),
        ]) {
          expect(answer.status).toBe(404)
          expect(answer.body).toEqual(projectNotFound)
        }
      }
    }
    expect(((await bob.get('/api/envs')).body.data as any[]).map((p) => p.id)).not.toContain(mine.id)
    const still = (await alice.get(`/api/envs/${mine.id}`)).body.data
    expect(still).toMatchObject({ name: 'private', fileCount: 1 })
    expect((await alice.post(`/api/envs/${mine.id}/files/${file.id}/reveal`)).body.data.content).toBe(`S=${CANARY}`)
  })

  test('bad input is 400 naming the field, and changes nothing', async () => {
    const { id } = await project(alice, 'validated', 'as it was')
    const file = (await alice.post(`/api/envs/${id}/files`, { fileType: 'env', content: 'A=1' })).body.data
    const before = (await alice.get('/api/envs')).body.data.length
    const detailBefore = (await alice.get(`/api/envs/${id}`)).body

    const cases: [string, string, unknown, string][] = [
      ['post', '/api/envs', { name: 'x', extra: 1 }, 'extra'],
      ['post', '/api/envs', {}, 'name'],
      ['post', '/api/envs', { name: '' }, 'name'],
      ['post', '/api/envs', { name: 'x'.repeat(201) }, 'name'],
      ['post', '/api/envs', { name: 42 }, 'name'],
      ['post', '/api/envs', { name: 'x', description: 'x'.repeat(2001) }, 'description'],
      ['post', '/api/envs', { name: 'x', description: null }, 'description'],
      ['put', `/api/envs/${id}`, { name: '' }, 'name'],
      ['put', `/api/envs/${id}`, { name: 'x'.repeat(201) }, 'name'],
      ['put', `/api/envs/${id}`, { description: 'x'.repeat(2001) }, 'description'],
      ['put', `/api/envs/${id}`, { userId: bob.user.id }, 'userId'],
      ['put', `/api/envs/${id}`, { fileCount: 9 }, 'fileCount'],
      ['post', `/api/envs/${id}/files`, { fileType: 'env.staging', content: 'B=2' }, 'fileType'],
      ['post', `/api/envs/${id}/files`, { fileType: '.env', content: 'B=2' }, 'fileType'],
      ['post', `/api/envs/${id}/files`, { content: 'B=2' }, 'fileType'],
      ['post', `/api/envs/${id}/files`, { fileType: 'env' }, 'content'],
      ['post', `/api/envs/${id}/files`, { fileType: 'env', content: 5 }, 'content'],
      ['post', `/api/envs/${id}/files`, { fileType: 'env', content: 'B=2', id: file.id }, 'id'],
      ['post', `/api/envs/${id}/files`, { fileType: 'env', content: 'x'.repeat(1024 * 1024 + 1) }, 'content'],
      // Within the character count but over 1 MiB of UTF-8.
      ['post', `/api/envs/${id}/files`, { fileType: 'env', content: 'é'.repeat(600 * 1024) }, 'content'],
    ]
    for (const [method, path, body, field] of cases) {
      const answer = await alice.request(method.toUpperCase(), path, body)
      expect({ path, body: answer.body, status: answer.status }).toMatchObject({ status: 400, body: { code: 'VALIDATION_ERROR' } })
      expect(answer.body.error).toContain(field)
    }
    const malformed = await alice.post('/api/envs', '{"name":')
    expect(malformed.status).toBe(400)
    expect(malformed.body.code).toBe('INVALID_JSON')

    expect((await alice.get('/api/envs')).body.data.length).toBe(before)
    expect((await alice.get(`/api/envs/${id}`)).body).toEqual(detailBefore)
    expect((await alice.post(`/api/envs/${id}/files/${file.id}/reveal`)).body.data.content).toBe('A=1')
  })

  test('scopes: envs:read, envs:write, envs:reveal', async () => {
    const { id } = await project(alice, 'scoped')
    const fileId = (await alice.post(`/api/envs/${id}/files`, { fileType: 'env', content: 'A=1' })).body.data.id
    const calls: [string, string, string, unknown?][] = [
      ['envs:read', 'GET', '/api/envs'],
      ['envs:read', 'GET', `/api/envs/${id}`],
      ['envs:write', 'POST', '/api/envs', { name: 'by key' }],
      ['envs:write', 'PUT', `/api/envs/${id}`, { description: 'by key' }],
      ['envs:write', 'POST', `/api/envs/${id}/files`, { fileType: 'env.local', content: 'B=2' }],
      ['envs:reveal', 'POST', `/api/envs/${id}/files/${fileId}/reveal`],
      ['envs:write', 'DELETE', `/api/envs/${id}/files/${fileId}`],
      ['envs:write', 'DELETE', `/api/envs/${id}`],
    ]
    const others = ['categories:read', 'categories:write', 'entries:reveal', '2fa:read', '2fa:write', '2fa:reveal', 'export:read']
    for (const [scope, method, path, body] of calls) {
      const allOtherScopes = [...others, ...['envs:read', 'envs:write', 'envs:reveal'].filter((s) => s !== scope)]
      const denied = await (await alice.keyClient(allOtherScopes)).request(method, path, body)
      expect({ path, method, status: denied.status, code: denied.body.code }).toEqual({ path, method, status: 403, code: 'AUTH_SCOPE_REQUIRED' })
      expect(denied.body.error).toContain(scope)
      const allowed = await (await alice.keyClient([scope])).request(method, path, body)
      expect({ path, method, ok: allowed.status >= 200 && allowed.status < 300 }).toEqual({ path, method, ok: true })
    }
    const anonymous = await alice.anonymous().get('/api/envs')
    expect(anonymous.status).toBe(401)
    expect(anonymous.body.code).toBe('AUTH_REQUIRED')
  })

  test('content never appears outside reveal, nor in plaintext under the data folder', async () => {
    const { id } = await project(alice, 'canaries')
    const answers = [
      await alice.post(`/api/envs/${id}/files`, { fileType: 'env', content: `TOKEN=${CANARY}` }),
      await alice.post(`/api/envs/${id}/files`, { fileType: 'env', content: `TOKEN=${CANARY}-again` }),
      await alice.post(`/api/envs/${id}/files`, { fileType: 'env.production', content: CANARY }),
      await alice.get(`/api/envs/${id}`),
      await alice.get('/api/envs'),
      await alice.get(`/api/envs?search=canar`),
      await alice.put(`/api/envs/${id}`, { name: 'canaries renamed' }),
    ]
    for (const answer of answers) {
      expect(answer.status).toBeLessThan(300)
      expect(answer.text).not.toContain(CANARY)
      expect(answer.text).not.toContain('content')
    }
    for (const path of filesUnder(server.dataDir)) {
      expect(readFileSync(path).includes(CANARY)).toBe(false)
    }
    expect(server.logs.join('\n')).not.toContain(CANARY)
  })
})
