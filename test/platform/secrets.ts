// Seeds one user's secrets of every kind through the API and reads them back through reveal.
import { expect } from 'bun:test'
import * as OTPAuth from 'otpauth'
import type { Client } from '../support/client'

export interface SeededSecrets {
  simple: { id: string; value: string }
  group: { id: string; value: Record<string, string> }
  totp: { id: string; secret: string }
  envFile: { projectId: string; id: string; content: string }
}

const randomBase32 = () => new OTPAuth.Secret({ size: 20 }).base32

export async function created(answer: Promise<{ status: number; body: any; text: string }>, status = 201): Promise<any> {
  const result = await answer
  if (result.status !== status) throw new Error(`expected ${status}, got ${result.status}: ${result.text}`)
  return result.body
}

/** Values may be chosen by the caller (canaries); otherwise random. */
export async function seedSecrets(
  client: Client,
  values: Partial<{ simple: string; group: Record<string, string>; totpSecret: string; envContent: string }> = {},
): Promise<SeededSecrets> {
  const tag = crypto.randomUUID().slice(0, 8)
  const simpleValue = values.simple ?? `sk-${crypto.randomUUID()}`
  const groupValue = values.group ?? { AWS_ACCESS_KEY_ID: `AKIA${tag}`, AWS_SECRET_ACCESS_KEY: crypto.randomUUID() }
  const secret = values.totpSecret ?? randomBase32()
  const content = values.envContent ?? `DATABASE_URL=postgres://u:${crypto.randomUUID()}@db/app\n`

  const simpleCategory = await created(
    client.post('/api/categories', { name: `Simple ${tag}`, keyType: 'simple', envVarName: `KEY_${tag.toUpperCase().replace(/-/g, '_')}` }),
  )
  const groupCategory = await created(client.post('/api/categories', { name: `Group ${tag}`, keyType: 'group', fieldDefinitions: Object.keys(groupValue) }))
  const simple = await created(
    client.post('/api/entries', { categoryId: simpleCategory.id, name: `app-${tag}`, value: simpleValue, environment: 'production' }),
  )
  const group = await created(client.post('/api/entries', { categoryId: groupCategory.id, name: `aws-${tag}`, value: JSON.stringify(groupValue) }))
  const totp = await created(client.post('/api/2fa', { service: `Service ${tag}`, accountName: `me-${tag}`, secret }))
  const project = (await created(client.post('/api/envs', { name: `project-${tag}` }))).data
  const file = (await created(client.post(`/api/envs/${project.id}/files`, { fileType: 'env', content }))).data
  return {
    simple: { id: simple.id, value: simpleValue },
    group: { id: group.id, value: groupValue },
    totp: { id: totp.id, secret },
    envFile: { projectId: project.id, id: file.id, content },
  }
}

/** The codes an authenticator would show around now for this secret. */
export function totpCodesNow(secret: string): string[] {
  const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret.replace(/\s|=/g, '').toUpperCase()), digits: 6, period: 30, algorithm: 'SHA1' })
  const now = Date.now()
  return [-30_000, 0, 30_000].map((offset) => totp.generate({ timestamp: now + offset }))
}

/** Reveals every seeded secret and checks each against what was stored. */
export async function expectSecretsReadable(client: Client, seeded: SeededSecrets): Promise<void> {
  const simple = await client.post(`/api/entries/${seeded.simple.id}/reveal`)
  expect(simple.status).toBe(200)
  expect(simple.body.value).toBe(seeded.simple.value)
  const group = await client.post(`/api/entries/${seeded.group.id}/reveal`)
  expect(group.status).toBe(200)
  expect(group.body.value).toEqual(seeded.group.value)
  const totp = await client.post(`/api/2fa/${seeded.totp.id}/reveal`)
  expect(totp.status).toBe(200)
  expect(totpCodesNow(seeded.totp.secret)).toContain(totp.body.code)
  const file = await client.post(`/api/envs/${seeded.envFile.projectId}/files/${seeded.envFile.id}/reveal`)
  expect(file.status).toBe(200)
  expect(file.body.data.content).toBe(seeded.envFile.content)
}
