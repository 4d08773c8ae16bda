import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { signUp, type Client } from '../support/client'
import { startTestServer, type TestServer } from '../support/server'
import { setStoredFields } from '../support/stored'
import { storedTexts } from '../support/audit-file'

let server: TestServer
let alice: Client & { user: any }
let bob: Client & { user: any }
let openai: any
let anthropic: any
let aws: any
let smtp: any

const CANARY = 'canary-entry-7f3a9c1e-do-not-leak'

beforeAll(async () => {
  server = await startTestServer()
  alice = await signUp(server.url)
  bob = await signUp(server.url)
  openai = (await alice.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY', icon: 'openai' })).body
  anthropic = (await alice.post('/api/categories', { name: 'Anthropic', keyType: 'simple', envVarName: 'ANTHROPIC_API_KEY' })).body
  aws = (await alice.post('/api/categories', { name: 'AWS', keyType: 'group', fieldDefinitions: ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'] })).body
  smtp = (await alice.post('/api/categories', { name: 'SMTP', keyType: 'group' })).body
})
afterAll(() => server.stop())

// Issue 20 added dueStatus, expiresAt, rotateEveryDays and rotatedAt.
const ENTRY_KEYS = ['categoryId', 'createdAt', 'dueStatus', 'environment', 'expiresAt', 'id', 'name', 'notes', 'rotateEveryDays', 'rotatedAt', 'updatedAt']
const ENTRY_NOT_FOUND = { error: 'Entry not found', code: 'ENTRY_NOT_FOUND' }
const CATEGORY_NOT_FOUND = { error: 'Category not found', code: 'CATEGORY_NOT_FOUND' }

async function createEntry(client: Client, body: Record<string, unknown>) {
  const answer = await client.post('/api/entries', body)
  if (answer.status !== 201) throw new Error(`entry not created: ${answer.status} ${answer.text}`)
  return answer.body
}

describe('entries', () => {
  test('create, get, list, update, reveal, delete a simple entry', async () => {
    const created = await alice.post('/api/entries', {
      categoryId: openai.id,
      name: 'blog',
      value: 'sk-live-123',
      environment: 'production',
      notes: 'main key',
    })
    expect(created.status).toBe(201)
    expect(Object.keys(created.body).sort()).toEqual(ENTRY_KEYS)
    expect(created.body).toMatchObject({ categoryId: openai.id, name: 'blog', environment: 'production', notes: 'main key' })
    expect(created.body.id).toMatch(/^[0-9a-f-]{36}$/)
    expect(created.body.createdAt).toBe(created.body.updatedAt)
    const id = created.body.id

    const detail = await alice.get(`/api/entries/${id}`)
    expect(detail.status).toBe(200)
    expect(detail.body).toEqual(created.body)

    const list = await alice.get('/api/entries')
    expect(list.status).toBe(200)
    const item = list.body.find((e: any) => e.id === id)
    expect(item).toEqual({ ...created.body, category: { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY', icon: 'openai' } })

    const revealed = await alice.post(`/api/entries/${id}/reveal`)
    expect(revealed.status).toBe(200)
    expect(revealed.body).toEqual({ id, name: 'blog', value: 'sk-live-123', environment: 'production' })
    expect(revealed.headers.get('cache-control')).toBe('no-store')

    const updated = await alice.put(`/api/entries/${id}`, { name: 'blog-v2', value: 'sk-live-456' })
    expect(updated.status).toBe(200)
    expect(updated.body).toMatchObject({ id, name: 'blog-v2', environment: 'production', notes: 'main key', createdAt: created.body.createdAt })
    expect((await alice.post(`/api/entries/${id}/reveal`)).body.value).toBe('sk-live-456')

    const cleared = await alice.put(`/api/entries/${id}`, { environment: null, notes: null })
    expect(cleared.status).toBe(200)
    expect(cleared.body).toMatchObject({ environment: null, notes: null, name: 'blog-v2' })
    expect((await alice.post(`/api/entries/${id}/reveal`)).body).toEqual({ id, name: 'blog-v2', value: 'sk-live-456', environment: null })

    const removed = await alice.delete(`/api/entries/${id}`)
    expect(removed.status).toBe(204)
    expect(removed.text).toBe('')
    for (const answer of [await alice.get(`/api/entries/${id}`), await alice.post(`/api/entries/${id}/reveal`), await alice.delete(`/api/entries/${id}`)]) {
      expect(answer.status).toBe(404)
      expect(answer.body).toEqual(ENTRY_NOT_FOUND)
    }
  })

  test('optional fields default to null', async () => {
    const created = await createEntry(alice, { categoryId: openai.id, name: 'bare', value: '' })
    expect(created).toMatchObject({ environment: null, notes: null })
    expect((await alice.post(`/api/entries/${created.id}/reveal`)).body.value).toBe('')
  })

  test('a group value goes in as JSON text and is revealed as an object', async () => {
    const value = { AWS_ACCESS_KEY_ID: 'AKIA123', AWS_SECRET_ACCESS_KEY: 'secret/with "quotes"' }
    const created = await alice.post('/api/entries', { categoryId: aws.id, name: 'infra', value: JSON.stringify(value), environment: 'staging' })
    expect(created.status).toBe(201)
    expect(created.body).not.toHaveProperty('value')
    expect(created.body).not.toHaveProperty('category')
    const revealed = await alice.post(`/api/entries/${created.body.id}/reveal`)
    expect(revealed.body).toEqual({ id: created.body.id, name: 'infra', value, environment: 'staging' })

    // Fields without declared definitions are free, as long as they name variables.
    const free = await createEntry(alice, { categoryId: smtp.id, name: 'mail', value: '{"SMTP_HOST":"mail.example","SMTP_PASS":"p w"}' })
    expect((await alice.post(`/api/entries/${free.id}/reveal`)).body.value).toEqual({ SMTP_HOST: 'mail.example', SMTP_PASS: 'p w' })

    // A field named __proto__ is an ordinary field, in the answer and in the export.
    const proto = await createEntry(alice, { categoryId: smtp.id, name: 'proto', value: '{"__proto__":"p","SMTP_HOST":"h"}' })
    const protoAnswer = await alice.post(`/api/entries/${proto.id}/reveal`)
    expect(JSON.parse(protoAnswer.text).value).toEqual(JSON.parse('{"__proto__":"p","SMTP_HOST":"h"}'))
    expect(protoAnswer.text).toContain('"__proto__":"p"')
    expect((await alice.get('/api/export?name=proto')).text).toContain('\n__proto__=p\n')

    const replaced = await alice.put(`/api/entries/${created.body.id}`, { value: '{"AWS_ACCESS_KEY_ID":"AKIA999"}' })
    expect(replaced.status).toBe(200)
    expect((await alice.post(`/api/entries/${created.body.id}/reveal`)).body.value).toEqual({ AWS_ACCESS_KEY_ID: 'AKIA999' })
  })

  test('a group value that is not a JSON object of strings, or uses undeclared fields, is 400 INVALID_VALUE', async () => {
    const before = (await alice.get('/api/entries')).body.length
    for (const [value, mention] of [
      ['not json', 'JSON object'],
      ['["a","b"]', 'JSON object'],
      ['"a string"', 'JSON object'],
      ['null', 'JSON object'],
      ['{"AWS_ACCESS_KEY_ID":5}', 'AWS_ACCESS_KEY_ID'],
      ['{"AWS_ACCESS_KEY_ID":{"x":"y"}}', 'AWS_ACCESS_KEY_ID'],
      ['{"AWS_ACCESS_KEY_ID":"a","EXTRA_FIELD":"b"}', 'EXTRA_FIELD'],
    ] as const) {
      const answer = await alice.post('/api/entries', { categoryId: aws.id, name: 'bad', value })
      expect(answer.status).toBe(400)
      expect(answer.body.code).toBe('INVALID_VALUE')
      expect(answer.body.error).toContain('value')
      expect(answer.body.error).toContain(mention)
    }
    const badName = await alice.post('/api/entries', { categoryId: smtp.id, name: 'bad', value: '{"not a name":"x"}' })
    expect(badName.status).toBe(400)
    expect(badName.body.code).toBe('INVALID_VALUE')
    expect(badName.body.error).toContain('not a name')

    const entry = await createEntry(alice, { categoryId: aws.id, name: 'keep', value: '{"AWS_ACCESS_KEY_ID":"kept"}' })
    const update = await alice.put(`/api/entries/${entry.id}`, { value: '{"OTHER":"x"}', name: 'renamed' })
    expect(update.status).toBe(400)
    expect(update.body.code).toBe('INVALID_VALUE')
    expect((await alice.get(`/api/entries/${entry.id}`)).body.name).toBe('keep')
    expect((await alice.post(`/api/entries/${entry.id}/reveal`)).body.value).toEqual({ AWS_ACCESS_KEY_ID: 'kept' })
    expect((await alice.get('/api/entries')).body.length).toBe(before + 1)
  })

  test('a missing or foreign category is 404 CATEGORY_NOT_FOUND on create and update', async () => {
    const bobs = (await bob.post('/api/categories', { name: 'Bob', keyType: 'simple', envVarName: 'BOB_KEY' })).body
    for (const categoryId of [bobs.id, crypto.randomUUID(), 'not-a-uuid']) {
      const answer = await alice.post('/api/entries', { categoryId, name: 'x', value: 'v' })
      expect(answer.status).toBe(404)
      expect(answer.body).toEqual(CATEGORY_NOT_FOUND)
    }
    const entry = await createEntry(alice, { categoryId: openai.id, name: 'movable', value: 'v1' })
    for (const categoryId of [bobs.id, crypto.randomUUID()]) {
      const answer = await alice.put(`/api/entries/${entry.id}`, { categoryId, name: 'changed' })
      expect(answer.status).toBe(404)
      expect(answer.body).toEqual(CATEGORY_NOT_FOUND)
    }
    expect((await alice.get(`/api/entries/${entry.id}`)).body).toEqual(entry)
  })

  test('categoryId moves an entry to another category of the same keyType', async () => {
    const entry = await createEntry(alice, { categoryId: openai.id, name: 'moving', value: 'still-the-same' })
    const moved = await alice.put(`/api/entries/${entry.id}`, { categoryId: anthropic.id })
    expect(moved.status).toBe(200)
    expect(moved.body.categoryId).toBe(anthropic.id)
    expect((await alice.post(`/api/entries/${entry.id}/reveal`)).body.value).toBe('still-the-same')
    const listed = (await alice.get('/api/entries')).body.find((e: any) => e.id === entry.id)
    expect(listed.category.envVarName).toBe('ANTHROPIC_API_KEY')

    const toGroup = await alice.put(`/api/entries/${entry.id}`, { categoryId: aws.id })
    expect(toGroup.status).toBe(400)
    expect(toGroup.body.code).toBe('VALIDATION_ERROR')
    expect(toGroup.body.error).toContain('categoryId')

    // A group value that does not fit the target's declared fields cannot move there.
    const group = await createEntry(alice, { categoryId: smtp.id, name: 'grp', value: '{"SMTP_HOST":"h"}' })
    const misfit = await alice.put(`/api/entries/${group.id}`, { categoryId: aws.id })
    expect(misfit.status).toBe(400)
    expect(misfit.body.code).toBe('INVALID_VALUE')
    expect(misfit.body.error).toContain('SMTP_HOST')
    const fits = await alice.put(`/api/entries/${group.id}`, { categoryId: aws.id, value: '{"AWS_ACCESS_KEY_ID":"k"}' })
    expect(fits.status).toBe(200)
    expect((await alice.post(`/api/entries/${group.id}/reveal`)).body.value).toEqual({ AWS_ACCESS_KEY_ID: 'k' })
  })

  test('bad input is 400 naming the field, and changes nothing', async () => {
    const entry = await createEntry(alice, { categoryId: openai.id, name: 'stable', value: 'stable-value', notes: 'n' })
    const before = (await alice.get('/api/entries')).body
    const valid = { categoryId: openai.id, name: 'x', value: 'v' }
    for (const [body, field] of [
      [{ ...valid, extra: 1 }, 'extra'],
      [{ ...valid, name: '' }, 'name'],
      [{ ...valid, name: 'x'.repeat(201) }, 'name'],
      [{ ...valid, name: 5 }, 'name'],
      [{ ...valid, value: 5 }, 'value'],
      [{ ...valid, value: 'x'.repeat(64 * 1024 + 1) }, 'value'],
      [{ ...valid, value: 'é'.repeat(32 * 1024 + 1) }, 'value'], // 64 KiB + 2 bytes of UTF-8
      [{ ...valid, notes: 'x'.repeat(2001) }, 'notes'],
      [{ ...valid, environment: 'prod' }, 'environment'],
      [{ ...valid, categoryId: 7 }, 'categoryId'],
      [{ name: 'x', value: 'v' }, 'categoryId'],
      [{ categoryId: openai.id, name: 'x' }, 'value'],
    ] as const) {
      const answer = await alice.post('/api/entries', body)
      expect(answer.status).toBe(400)
      expect(answer.body.code).toBe('VALIDATION_ERROR')
      expect(answer.body.error).toContain(field)
    }
    for (const [body, field] of [
      [{ extra: true }, 'extra'],
      [{ name: '' }, 'name'],
      [{ name: 'x'.repeat(201) }, 'name'],
      [{ value: 'x'.repeat(64 * 1024 + 1), name: 'changed' }, 'value'],
      [{ value: ['a'] }, 'value'],
      [{ notes: 'x'.repeat(2001) }, 'notes'],
      [{ environment: 'qa' }, 'environment'],
    ] as const) {
      const answer = await alice.put(`/api/entries/${entry.id}`, body)
      expect(answer.status).toBe(400)
      expect(answer.body.code).toBe('VALIDATION_ERROR')
      expect(answer.body.error).toContain(field)
    }
    const malformed = await alice.post('/api/entries', '{"name":')
    expect(malformed.status).toBe(400)
    expect(malformed.body.code).toBe('INVALID_JSON')

    expect((await alice.get('/api/entries')).body).toEqual(before)
    expect((await alice.post(`/api/entries/${entry.id}/reveal`)).body.value).toBe('stable-value')
  })

  test('a value of exactly 64 KiB is accepted', async () => {
    const value = 'v'.repeat(64 * 1024)
    const entry = await createEntry(alice, { categoryId: openai.id, name: 'big', value })
    expect((await alice.post(`/api/entries/${entry.id}/reveal`)).body.value).toBe(value)
  })

  test("another user's entry answers exactly as a missing one, on every endpoint", async () => {
    const entry = await createEntry(alice, { categoryId: openai.id, name: 'private', value: 'alice-only' })
    for (const id of [entry.id, crypto.randomUUID(), 'not-a-uuid']) {
      for (const answer of [
        await bob.get(`/api/entries/${id}`),
        await bob.put(`/api/entries/${id}`, { name: 'stolen' }),
        await bob.delete(`/api/entries/${id}`),
        await bob.post(`/api/entries/${id}/reveal`),
      ]) {
        expect(answer.status).toBe(404)
        expect(answer.body).toEqual(ENTRY_NOT_FOUND)
      }
    }
    expect((await bob.get('/api/entries')).body).toEqual([])
    expect((await alice.get(`/api/entries/${entry.id}`)).body).toEqual(entry)
    expect((await alice.post(`/api/entries/${entry.id}/reveal`)).body.value).toBe('alice-only')
  })

  test('scopes: entries:read, entries:write, entries:reveal', async () => {
    const entry = await createEntry(alice, { categoryId: openai.id, name: 'scoped', value: 'scoped-value' })
    const body = { categoryId: openai.id, name: 'by key', value: 'v' }
    const calls: [string, (c: Client) => Promise<{ status: number; body: any }>][] = [
      ['entries:read', (c) => c.get('/api/entries')],
      ['entries:read', (c) => c.get(`/api/entries/${entry.id}`)],
      ['entries:write', (c) => c.post('/api/entries', body)],
      ['entries:write', (c) => c.put(`/api/entries/${entry.id}`, { notes: 'by key' })],
      ['entries:reveal', (c) => c.post(`/api/entries/${entry.id}/reveal`)],
    ]
    const keys = {
      'entries:read': await alice.keyClient(['entries:read']),
      'entries:write': await alice.keyClient(['entries:write']),
      'entries:reveal': await alice.keyClient(['entries:reveal']),
    } as Record<string, Client>
    for (const [scope, call] of calls) {
      for (const [held, key] of Object.entries(keys)) {
        const answer = await call(key)
        if (held === scope) {
          expect(answer.status).toBeLessThan(300)
        } else {
          expect(answer.status).toBe(403)
          expect(answer.body.code).toBe('AUTH_SCOPE_REQUIRED')
          expect(answer.body.error).toContain(scope)
        }
      }
    }
    expect((await keys['entries:reveal'].post(`/api/entries/${entry.id}/reveal`)).body.value).toBe('scoped-value')
    const other = await createEntry(alice, { categoryId: openai.id, name: 'doomed', value: 'v' })
    expect((await keys['entries:read'].delete(`/api/entries/${other.id}`)).status).toBe(403)
    expect((await keys['entries:write'].delete(`/api/entries/${other.id}`)).status).toBe(204)

    const anonymous = alice.anonymous()
    for (const answer of [
      await anonymous.get('/api/entries'),
      await anonymous.get(`/api/entries/${entry.id}`),
      await anonymous.post('/api/entries', body),
      await anonymous.put(`/api/entries/${entry.id}`, { name: 'x' }),
      await anonymous.delete(`/api/entries/${entry.id}`),
      await anonymous.post(`/api/entries/${entry.id}/reveal`),
    ]) {
      expect(answer.status).toBe(401)
      expect(answer.body.code).toBe('AUTH_REQUIRED')
    }
  })

  test('the list follows every change: entries created, updated, moved and deleted, categories renamed and deleted', async () => {
    const listed = async (client: Client) => {
      const answer = await client.get('/api/entries')
      expect(answer.status).toBe(200)
      return answer.body as any[]
    }
    const client = await signUp(server.url)
    const first = (await client.post('/api/categories', { name: 'First', keyType: 'simple', envVarName: 'FIRST_KEY' })).body
    const second = (await client.post('/api/categories', { name: 'Second', keyType: 'simple', envVarName: 'SECOND_KEY' })).body
    expect(second.id).toBeString()
    expect(await listed(client)).toEqual([])

    const a = await createEntry(client, { categoryId: first.id, name: 'a', value: 'v1' })
    const b = await createEntry(client, { categoryId: first.id, name: 'b', value: 'v2' })
    expect((await listed(client)).map((e) => e.name)).toEqual(['a', 'b'])
    expect(await listed(client)).toEqual(await listed(client))

    await client.put(`/api/entries/${a.id}`, { name: 'a2', notes: 'n' })
    expect((await listed(client)).find((e) => e.id === a.id)).toMatchObject({ name: 'a2', notes: 'n', category: { name: 'First' } })

    await client.put(`/api/categories/${first.id}`, { name: 'First renamed', icon: 'openai' })
    expect((await listed(client)).map((e) => e.category)).toEqual([
      { name: 'First renamed', keyType: 'simple', envVarName: 'FIRST_KEY', icon: 'openai' },
      { name: 'First renamed', keyType: 'simple', envVarName: 'FIRST_KEY', icon: 'openai' },
    ])

    await client.put(`/api/entries/${b.id}`, { categoryId: second.id })
    expect((await listed(client)).find((e) => e.id === b.id)).toMatchObject({ categoryId: second.id, category: { name: 'Second' } })

    expect((await client.delete(`/api/entries/${a.id}`)).status).toBe(204)
    expect((await listed(client)).map((e) => e.id)).toEqual([b.id])

    // Another user's list is their own, before and after this one changes.
    expect((await listed(bob)).some((e) => e.id === b.id)).toBe(false)
    expect((await client.delete(`/api/categories/${second.id}`)).status).toBe(204)
    expect(await listed(client)).toEqual([])
  })

  test('deleting a category deletes its entries', async () => {
    const category = (await alice.post('/api/categories', { name: 'Temp', keyType: 'simple', envVarName: 'TEMP_KEY' })).body
    const first = await createEntry(alice, { categoryId: category.id, name: 'one', value: '1' })
    const second = await createEntry(alice, { categoryId: category.id, name: 'two', value: '2' })
    const survivor = await createEntry(alice, { categoryId: openai.id, name: 'survivor', value: '3' })
    expect((await alice.delete(`/api/categories/${category.id}`)).status).toBe(204)
    for (const id of [first.id, second.id]) {
      expect((await alice.get(`/api/entries/${id}`)).body).toEqual(ENTRY_NOT_FOUND)
      expect((await alice.post(`/api/entries/${id}/reveal`)).status).toBe(404)
    }
    const ids = (await alice.get('/api/entries')).body.map((e: any) => e.id)
    expect(ids).not.toContain(first.id)
    expect(ids).toContain(survivor.id)
  })

  test('a ciphertext that does not decrypt reveals as 404', async () => {
    const entry = await createEntry(alice, { categoryId: openai.id, name: 'tampered', value: 'will-break' })
    const other = await createEntry(alice, { categoryId: openai.id, name: 'donor', value: 'donor-value' })
    const { data, doc } = await server.deps.vaults.open(alice.user.id)
    const original = data.entries.find((e) => e.id === entry.id)!.encryptedValue
    // A flipped character, then a ciphertext sealed for another entry (the AAD binds the id).
    const flipped = original.slice(0, -3) + (original.at(-3) === 'A' ? 'B' : 'A') + original.slice(-2)
    for (const sealed of [flipped, data.entries.find((e) => e.id === other.id)!.encryptedValue, 'garbage']) {
      doc.stage((current, write) => setStoredFields(write.entries, current.entries, entry.id, { encryptedValue: sealed }))
      const answer = await alice.post(`/api/entries/${entry.id}/reveal`)
      expect(answer.status).toBe(404)
      expect(answer.body).toEqual(ENTRY_NOT_FOUND)
    }
    doc.stage((current, write) => setStoredFields(write.entries, current.entries, entry.id, { encryptedValue: original }))
    expect((await alice.post(`/api/entries/${entry.id}/reveal`)).body.value).toBe('will-break')
  })

  test('values never appear outside reveal: not in answers, logs or files', async () => {
    const answers: string[] = []
    const created = await alice.post('/api/entries', { categoryId: openai.id, name: 'canary', value: `${CANARY}-simple`, notes: 'canary notes' })
    answers.push(created.text)
    const group = await alice.post('/api/entries', {
      categoryId: aws.id,
      name: 'canary-group',
      value: JSON.stringify({ AWS_SECRET_ACCESS_KEY: `${CANARY}-group` }),
    })
    answers.push(group.text)
    answers.push((await alice.put(`/api/entries/${created.body.id}`, { value: `${CANARY}-updated` })).text)
    answers.push((await alice.put(`/api/entries/${group.body.id}`, { name: 'canary-group-2' })).text)
    answers.push((await alice.get('/api/entries')).text)
    answers.push((await alice.get(`/api/entries/${created.body.id}`)).text)
    answers.push((await alice.get(`/api/entries/${group.body.id}`)).text)
    answers.push((await alice.post('/api/entries', { categoryId: aws.id, name: 'bad', value: `{"NOPE":"${CANARY}-rejected"}` })).text)
    answers.push((await alice.post('/api/entries', { categoryId: crypto.randomUUID(), name: 'bad', value: `${CANARY}-rejected` })).text)
    for (const text of answers) expect(text).not.toContain(CANARY)
    expect((await alice.post(`/api/entries/${created.body.id}/reveal`)).body.value).toBe(`${CANARY}-updated`)

    // What the store holds: the data folder's files, or the database's rows.
    const stored = await storedTexts(server)
    expect(stored.length).toBeGreaterThan(0)
    for (const { where, text } of stored) expect({ where, leaks: text.includes(CANARY) }).toEqual({ where, leaks: false })
    expect(server.logs.join('\n')).not.toContain(CANARY)
  })
})
