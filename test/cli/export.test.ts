// `svc export --format …` (issue 30): every format, a refusal or an ambiguity writes nothing (not
// to stdout, not to -o, not over an existing file), and the file is the reader's exact bytes.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { signUp, type Client } from '../support/client'
import { READERS } from '../support/env-readers'
import { startTestServer, tempDir, type TestServer } from '../support/server'
import { buildCli, svc, svcHome } from './support'

let server: TestServer
let owner: Client
let env: Record<string, string>
const KEY = '-----BEGIN KEY-----\nabc\n-----END KEY-----'
const PASSWORD = 'pa$$w0rd "quoted" $HOME'

beforeAll(async () => {
  await buildCli()
  server = await startTestServer()
  owner = await signUp(server.url)
  const app = await owner.post('/api/categories', { name: 'App', keyType: 'group', fieldDefinitions: ['PORT', 'DB_PASSWORD', 'TLS_KEY'] })
  await owner.post('/api/entries', { categoryId: app.body.id, name: 'api', value: JSON.stringify({ PORT: '3000' }), environment: 'development' })
  await owner.post('/api/entries', {
    categoryId: app.body.id,
    name: 'api',
    value: JSON.stringify({ PORT: '8080', DB_PASSWORD: PASSWORD, TLS_KEY: KEY }),
    environment: 'production',
  })
  const key = await owner.keyClient(['export:read'])
  env = svcHome({ SVC_URL: server.url, SVC_TOKEN: key.credentials.key! }).env
}, 60_000)

afterAll(async () => {
  await server?.stop()
})

describe('svc export --format', () => {
  test('every format; bun is read back by Bun exactly', async () => {
    for (const format of ['dotenv', 'bun', 'node', 'python', 'systemd', 'shell', 'json', 'yaml']) {
      const result = await svc(['export', '-e', 'production', '--format', format], { env })
      expect({ format, code: result.code, stderr: result.stderr }).toEqual({ format, code: 0, stderr: '' })
      expect(result.stdout).toContain('PORT')
    }
    const path = join(tempDir(), 'app.env')
    expect(await svc(['export', '-e', 'production', '--format', 'bun', '-o', path], { env })).toMatchObject({ code: 0, stdout: '' })
    expect(await READERS['bun --env-file'](readFileSync(path, 'utf8'), ['PORT', 'DB_PASSWORD', 'TLS_KEY'])).toEqual({
      PORT: '8080',
      DB_PASSWORD: PASSWORD,
      TLS_KEY: KEY,
    })
    const bad = await svc(['export', '--format', 'toml'], { env })
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('dotenv, bun, node, python, docker, systemd, shell, json, yaml')
  })

  test('a value the format cannot carry: exit 1, the variable named, nothing printed or written', async () => {
    const dir = tempDir()
    const fresh = join(dir, 'fresh.env')
    const existing = join(dir, 'existing.env')
    writeFileSync(existing, 'OLD=1\n')
    for (const output of [[], ['-o', fresh], ['-o', existing]]) {
      const result = await svc(['export', '-e', 'production', '--format', 'docker', ...output], { env })
      expect(result.code).toBe(1)
      expect(result.stdout).toBe('')
      expect(result.stderr).toContain('TLS_KEY')
      expect(result.stderr).toContain('line break')
      expect(result.stderr).toContain('(EXPORT_FORMAT_REFUSED)')
      expect(result.stderr).not.toContain('BEGIN')
      expect(result.stderr.split('\n').length).toBe(2)
    }
    expect(existsSync(fresh)).toBe(false)
    expect(readFileSync(existing, 'utf8')).toBe('OLD=1\n')
  })

  test('without -e a variable of two environments is AMBIGUOUS_EXPORT in every format; svc get still finds the others', async () => {
    const path = join(tempDir(), 'all.env')
    for (const format of ['dotenv', 'shell', 'json', 'bun']) {
      const result = await svc(['export', '--format', format, '-o', path], { env })
      expect(result.code).toBe(1)
      expect(result.stderr).toStartWith('svc: PORT is written by 2 entries')
      expect(result.stderr).toEndWith('(AMBIGUOUS_EXPORT)\n')
    }
    expect(existsSync(path)).toBe(false)
    const several = await svc(['get', 'PORT'], { env })
    expect(several.code).toBe(1)
    expect(several.stderr).toContain('several values')
    expect(await svc(['get', 'DB_PASSWORD'], { env })).toMatchObject({ code: 0, stdout: PASSWORD })
    expect(await svc(['get', 'PORT', '-e', 'development'], { env })).toMatchObject({ code: 0, stdout: '3000' })
  })
})
