// Issue 20, expiry and rotation reminders: expiresAt, rotateEveryDays, rotatedAt and dueStatus on
// entries and 2FA tokens, and GET /api/entries?due=N, on the injectable clock.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { signUp, type Client } from '../support/client'
import { removeDir, startTestServer, type TestServer } from '../support/server'

const DAY = 86_400_000
let clock = Date.parse('2026-05-01T00:00:00.000Z')
let server: TestServer
let alice: Client & { user: any }
let key: Client
let category: any

beforeAll(async () => {
  server = await startTestServer({ now: () => clock })
  alice = await signUp(server.url)
  // Sessions expire with the clock; access keys do not.
  key = await alice.keyClient(['entries:read', 'entries:write', '2fa:read', '2fa:write'])
  category = (await alice.post('/api/categories', { name: 'C', keyType: 'simple', envVarName: 'C_KEY' })).body
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

const iso = (ms: number) => new Date(ms).toISOString()
const create = async (body: Record<string, unknown>) => {
  const answer = await key.post('/api/entries', { categoryId: category.id, name: `e-${crypto.randomUUID()}`, value: 'v', ...body })
  expect(answer.status).toBe(201)
  return answer.body
}
const status = async (id: string) => (await key.get(`/api/entries/${id}`)).body.dueStatus

test('dueStatus follows expiry and rotation; a new value resets rotation; ?due lists only what is due', async () => {
  const start = clock
  const plain = await create({})
  expect(plain).toMatchObject({ expiresAt: null, rotateEveryDays: null, rotatedAt: null, dueStatus: 'ok' })
  const farExpiry = await create({ expiresAt: iso(start + 40 * DAY) })
  const soonExpiry = await create({ expiresAt: iso(start + 10 * DAY) })
  const expired = await create({ expiresAt: iso(start - DAY) })
  const rotating = await create({ rotateEveryDays: 30 })
  expect([farExpiry.dueStatus, soonExpiry.dueStatus, expired.dueStatus, rotating.dueStatus]).toEqual(['ok', 'due_soon', 'expired', 'ok'])
  expect(rotating.rotateEveryDays).toBe(30)

  const listed = async (query = '') => new Map<string, string>((await key.get(`/api/entries${query}`)).body.map((e: any) => [e.id, e.dueStatus]))
  expect((await listed()).get(soonExpiry.id)).toBe('due_soon')
  const due30 = await listed('?due=30')
  expect([...due30.keys()].sort()).toEqual([soonExpiry.id, expired.id, rotating.id].sort())
  expect([...(await listed('?due=5')).keys()]).toEqual([expired.id])

  clock = start + 20 * DAY
  // The list answered before is not answered again once a status has changed.
  expect((await listed()).get(rotating.id)).toBe('due_soon')
  expect(await status(soonExpiry.id)).toBe('expired')
  clock = start + 31 * DAY
  expect(await status(rotating.id)).toBe('rotation_due')
  expect((await listed()).get(rotating.id)).toBe('rotation_due')

  const rotated = await key.put(`/api/entries/${rotating.id}`, { value: 'new value' })
  expect(rotated.body.rotatedAt).toBe(iso(clock))
  expect(rotated.body.dueStatus).toBe('ok')
  // Other changes leave rotatedAt alone.
  expect((await key.put(`/api/entries/${rotating.id}`, { notes: 'n' })).body.rotatedAt).toBe(iso(clock))

  const cleared = await key.put(`/api/entries/${expired.id}`, { expiresAt: null })
  expect(cleared.body).toMatchObject({ expiresAt: null, dueStatus: 'ok' })
  clock = start
})

test('bad expiry and rotation values are 400 and change nothing', async () => {
  for (const body of [{ rotateEveryDays: 0 }, { rotateEveryDays: 1.5 }, { rotateEveryDays: '7' }, { expiresAt: 'tomorrow' }]) {
    const answer = await key.post('/api/entries', { categoryId: category.id, name: 'bad', value: 'v', ...body })
    expect(answer.status).toBe(400)
    expect(answer.body.code).toBe('VALIDATION_ERROR')
  }
  expect((await key.get('/api/entries')).body.some((e: any) => e.name === 'bad')).toBe(false)
  expect((await key.get('/api/entries?due=-1')).status).toBe(400)
})

test('2FA tokens take expiresAt and carry dueStatus and rotatedAt', async () => {
  const token = (await key.post('/api/2fa', { service: 'S', accountName: 'a', secret: 'JBSWY3DPEHPK3PXP', expiresAt: iso(clock + 3 * DAY) })).body
  expect(token).toMatchObject({ expiresAt: iso(clock + 3 * DAY), rotatedAt: null, dueStatus: 'due_soon' })
  clock += 4 * DAY
  expect((await key.get('/api/2fa')).body.find((t: any) => t.id === token.id).dueStatus).toBe('expired')
  const changed = await key.put(`/api/2fa/${token.id}`, { secret: 'GEZDGNBVGY3TQOJQ', expiresAt: null })
  expect(changed.body).toMatchObject({ rotatedAt: iso(clock), expiresAt: null, dueStatus: 'ok' })
})
