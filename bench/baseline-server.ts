// The baseline: a bare Bun.serve doing the least each benchmarked answer needs, so the service
// can be measured against what this machine can do. Bearer lookup in a Map, JSON.stringify of the
// same records, one AES-256-GCM decryption per reveal (one per entry for the export), one
// encryption and one durable file write (temp + fsync + rename + fsync dir) per created entry.
// No framework, no validation library, no schema.
//   BENCH_FIXTURE=<fixture.json> BENCH_DATA_DIR=<dir> PORT=<port> bun bench/baseline-server.ts
// The same durable write as the vault's (temporary file, fsync, rename, fsync of the folder).
import { writeFileAtomic } from '../src/store/atomic-file'
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { BaselineFixture } from './fixture'

const fixture = JSON.parse(readFileSync(process.env.BENCH_FIXTURE!, 'utf8')) as BaselineFixture
const dataDir = process.env.BENCH_DATA_DIR!
mkdirSync(dataDir, { recursive: true })

const users = new Map<string, { id: string }>([[fixture.token, { id: 'bench-user' }]])
const key = randomBytes(32)

interface Sealed {
  iv: Buffer
  body: Buffer
  tag: Buffer
}

function seal(plaintext: string): Sealed {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
  return { iv, body, tag: cipher.getAuthTag() }
}

function unseal(sealed: Sealed): string {
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.iv)
  decipher.setAuthTag(sealed.tag)
  return Buffer.concat([decipher.update(sealed.body), decipher.final()]).toString('utf8')
}

const categories = new Map(fixture.categories.map((c) => [c.id, c]))
type ListItem = { id: string; categoryId: string; name: string; environment: string | null }
const entries = fixture.entries as ListItem[]
const entryById = new Map(entries.map((e) => [e.id, e]))
const sealedValues = new Map(Object.entries(fixture.secrets).map(([id, value]) => [id, seal(value)]))
const twoFactor = new Map(fixture.twoFactor.map((token) => [token.id, { ...token, sealed: seal(token.secret) }]))

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })
const notFound = () => json({ error: 'not found', code: 'NOT_FOUND' }, 404)

function totp(secret: string, now: number): { code: string; remainingSeconds: number } {
  let bits = ''
  for (const char of secret.replace(/=+$/, '')) bits += (BASE32.indexOf(char) >>> 0).toString(2).padStart(5, '0')
  const secretBytes = Buffer.alloc(Math.floor(bits.length / 8))
  for (let i = 0; i < secretBytes.length; i++) secretBytes[i] = parseInt(bits.slice(i * 8, i * 8 + 8), 2)
  const counter = Buffer.alloc(8)
  counter.writeBigUInt64BE(BigInt(Math.floor(now / 30_000)))
  const mac = createHmac('sha1', secretBytes).update(counter).digest()
  const offset = mac[mac.length - 1] & 0xf
  const code = (mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000
  return { code: String(code).padStart(6, '0'), remainingSeconds: 30 - (Math.floor(now / 1000) % 30) }
}
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'

function quote(value: string): string {
  if (/^[A-Za-z0-9_./:@+,-]*$/.test(value)) return value
  if (!value.includes("'")) return `'${value}'`
  if (!value.includes('`')) return `\`${value}\``
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`
}

function exportText(): string {
  const sorted = [...entries].sort((a, b) => {
    const ca = categories.get(a.categoryId)!.name
    const cb = categories.get(b.categoryId)!.name
    return ca.localeCompare(cb) || a.name.localeCompare(b.name) || (a.environment ?? '').localeCompare(b.environment ?? '')
  })
  const lines: string[] = []
  for (const entry of sorted) {
    const category = categories.get(entry.categoryId)!
    if (category.keyType !== 'simple' && category.keyType !== 'group') continue
    const value = unseal(sealedValues.get(entry.id)!)
    lines.push(`# ${category.name} — ${entry.name}${entry.environment ? ` (${entry.environment})` : ''}`)
    if (category.keyType === 'simple') {
      lines.push(`${category.envVarName}=${quote(value)}`)
    } else {
      const fields = JSON.parse(value) as Record<string, string>
      for (const name of category.fieldDefinitions ?? Object.keys(fields)) {
        if (name in fields) lines.push(`${name}=${quote(fields[name])}`)
      }
    }
  }
  return lines.join('\n') + '\n'
}

function stats() {
  const byKeyType: Record<string, number> = { simple: 0, group: 0, ssh: 0, json: 0 }
  const byEnvironment: Record<string, number> = { development: 0, staging: 0, production: 0 }
  for (const entry of entries) {
    byKeyType[categories.get(entry.categoryId)!.keyType]++
    if (entry.environment) byEnvironment[entry.environment]++
  }
  return { totalCategories: categories.size, totalEntries: entries.length, total2fa: twoFactor.size, byKeyType, byEnvironment }
}

async function createEntry(request: Request): Promise<Response> {
  const input = (await request.json()) as { categoryId: string; name: string; value: string; environment?: string; notes?: string }
  const category = categories.get(input.categoryId)
  if (!category || typeof input.name !== 'string' || typeof input.value !== 'string') return json({ error: 'bad', code: 'VALIDATION_ERROR' }, 400)
  const at = new Date().toISOString()
  const id = crypto.randomUUID()
  const sealed = seal(input.value)
  const record = {
    id,
    categoryId: category.id,
    name: input.name,
    environment: input.environment ?? null,
    notes: input.notes ?? null,
    createdAt: at,
    updatedAt: at,
  }
  await writeFileAtomic(
    join(dataDir, `${id}.json`),
    JSON.stringify({ ...record, encryptedValue: `${sealed.iv.toString('base64url')}.${sealed.body.toString('base64url')}` }),
  )
  sealedValues.set(id, sealed)
  const item = { ...record, category: { name: category.name, keyType: category.keyType, envVarName: category.envVarName, icon: null } }
  entries.push(item)
  entryById.set(id, item)
  return json(record, 201)
}

const REVEAL_ENTRY = /^\/api\/entries\/([^/]+)\/reveal$/
const REVEAL_2FA = /^\/api\/2fa\/([^/]+)\/reveal$/

const server = Bun.serve({
  port: Number(process.env.PORT ?? 0),
  hostname: '127.0.0.1',
  async fetch(request) {
    const bearer = request.headers.get('authorization')?.slice('Bearer '.length)
    if (!bearer || !users.has(bearer)) return json({ error: 'auth', code: 'AUTH_REQUIRED' }, 401)
    const path = request.url.slice(request.url.indexOf('/', 8))
    if (request.method === 'GET') {
      if (path === '/api/entries') return json(entries)
      if (path === '/api/stats') return json(stats())
      if (path.split('?')[0] === '/api/export') return new Response(exportText(), { headers: { 'content-type': 'text/plain; charset=utf-8' } })
      return notFound()
    }
    if (request.method === 'POST') {
      if (path === '/api/entries') return createEntry(request)
      let match = REVEAL_ENTRY.exec(path)
      if (match) {
        const entry = entryById.get(match[1])
        const sealed = sealedValues.get(match[1])
        if (!entry || !sealed) return notFound()
        const plaintext = unseal(sealed)
        const value = categories.get(entry.categoryId)!.keyType === 'group' ? JSON.parse(plaintext) : plaintext
        return json({ id: entry.id, name: entry.name, value, environment: entry.environment })
      }
      match = REVEAL_2FA.exec(path)
      if (match) {
        const token = twoFactor.get(match[1])
        if (!token) return notFound()
        return json({ id: token.id, service: token.service, accountName: token.accountName, ...totp(unseal(token.sealed), Date.now()) })
      }
    }
    return notFound()
  },
})

console.log(`baseline listening on http://127.0.0.1:${server.port}`)
process.on('SIGTERM', () => {
  server.stop(true)
  process.exit(0)
})
