// The bundle `bun run start` runs (dist/, made by `bun run build`): the same service as
// `bun src/index.ts`, including the parts loaded on first use (TOTP, the .env parser, the OpenAPI
// generator) and the files built into dist/ beside it (the web interface, the brand icons).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { signUp } from '../support/client'
import { removeDir, ROOT, spawnServer, type SpawnedServer } from '../support/server'

let server: SpawnedServer
let listeningAt = 0

function build() {
  const run = Bun.spawnSync(['bun', 'run', 'build'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  if (run.exitCode !== 0) throw new Error(`bun run build failed: ${run.stderr.toString()}`)
}

beforeAll(async () => {
  build()
  server = await spawnServer({ entry: 'dist/index.js' })
  listeningAt = Date.now()
  // A second `bun run start` rebuilds while this server runs: the chunks it has not loaded yet
  // (TOTP, the .env parser, the OpenAPI generator) must still be there for it.
  build()
})
afterAll(async () => {
  await server?.stop()
  if (server) removeDir(server.dataDir)
})

describe('the built server (bun run start)', () => {
  test('bun run build writes dist/index.js', () => {
    expect(existsSync(join(ROOT, 'dist', 'index.js'))).toBe(true)
  })

  test('serves the API end to end: entries, reveal, 2FA code, export, import, OpenAPI', async () => {
    const alice = await signUp(server.url)
    const category = await alice.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_SECRET_KEY' })
    expect(category.status).toBe(201)
    const entry = await alice.post('/api/entries', { categoryId: category.body.id, name: 'shop', value: 'sk_live_built', environment: 'production' })
    expect(entry.status).toBe(201)
    expect((await alice.post(`/api/entries/${entry.body.id}/reveal`)).body.value).toBe('sk_live_built')
    expect((await alice.get('/api/stats')).body.totalEntries).toBe(1)
    expect((await alice.get('/api/export')).text).toContain('STRIPE_SECRET_KEY=sk_live_built')

    const token = await alice.post('/api/2fa', { service: 'GitHub', accountName: 'alice', secret: 'JBSWY3DPEHPK3PXP' })
    expect(token.status).toBe(201)
    expect((await alice.post(`/api/2fa/${token.body.id}/reveal`)).body.code).toMatch(/^\d{6}$/)

    const imported = await alice.post('/api/ai/import', { text: 'OPENAI_API_KEY=sk-proj-x\n' })
    expect(imported.status).toBe(200)

    const openapi = await fetch(server.url + '/api/openapi')
    expect(openapi.status).toBe(200)
    expect((await openapi.json()).openapi).toBe('3.1.0')
  })

  test('keeps answering once start-up code is dropped (a second after listening)', async () => {
    await Bun.sleep(Math.max(0, listeningAt + 1500 - Date.now()))
    const bob = await signUp(server.url)
    const category = await bob.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' })
    const entry = await bob.post('/api/entries', { categoryId: category.body.id, name: 'blog', value: 'sk-after-settle' })
    expect(entry.status).toBe(201)
    expect((await bob.get('/api/entries')).body.map((item: { name: string }) => item.name)).toEqual(['blog'])
    expect((await bob.post(`/api/entries/${entry.body.id}/reveal`)).body.value).toBe('sk-after-settle')
  })

  test('serves the web interface and its brand icons', async () => {
    const page = await fetch(server.url + '/')
    expect(page.status).toBe(200)
    const script = /src="(\/assets\/app\.[0-9a-f]+\.js)"/.exec(await page.text())![1]
    expect((await fetch(server.url + script)).status).toBe(200)
    const icon = await fetch(server.url + '/icons/github.svg')
    expect(icon.status).toBe(200)
    expect(await icon.text()).toContain('<svg')
  })

  test('serves the svc command it embeds, for Node', async () => {
    const cli = await fetch(server.url + '/cli/svc')
    expect(cli.status).toBe(200)
    const text = await cli.text()
    expect(text.startsWith('#!/usr/bin/env node\n')).toBe(true)
    expect(text).toContain('svc-vault command line')
  })
})
