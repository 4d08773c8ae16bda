// Running the vault as a service: /healthz, /readyz, /metrics, request ids, the JSON log format,
// SVC_MASTER_KEY_FILE and --version.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { VERSION } from '../../src/version'
import { Client, PASSWORD, signUp, uniqueEmail } from '../support/client'
import { ON_POSTGRES } from '../support/postgres'
import { removeDir, ROOT, runServerToExit, spawnServer, startTestServer, tempDir, TEST_MASTER_KEY, type TestServer } from '../support/server'

const METRICS_TOKEN = 'metrics-token-0123456789abcdef'
let server: TestServer
let clock = Date.parse('2026-05-01T12:00:00Z')

beforeAll(async () => {
  server = await startTestServer({ env: { SVC_METRICS_TOKEN: METRICS_TOKEN, SVC_SIGNUP: 'open' }, now: () => clock })
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

const metricsText = async () => {
  const response = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toContain('text/plain; version=0.0.4')
  return response.text()
}
const sample = (text: string, series: string) => {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

describe('health', () => {
  test('GET /healthz answers 200 { status: "ok" } without credentials', async () => {
    const response = await fetch(`${server.url}/healthz`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ status: 'ok' })
    expect(response.headers.get('cache-control')).toBe('no-store')
  })

  test('GET /readyz answers 200 with the version and its checks, no user data', async () => {
    const response = await fetch(`${server.url}/readyz`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ status: 'ready', version: VERSION, checks: { store: 'ok', masterKey: 'ok', disk: 'ok' } })
  })

  test('GET /readyz answers 503 NOT_READY once the store no longer takes writes', async () => {
    const other = await startTestServer({ now: () => clock })
    try {
      expect((await fetch(`${other.url}/readyz`)).status).toBe(200)
      await other.deps.store.close()
      // The answer is kept for a second (the check writes to disk): the clock moves on.
      clock += 1500
      const response = await fetch(`${other.url}/readyz`)
      expect(response.status).toBe(503)
      expect(await response.json()).toEqual({
        error: ON_POSTGRES ? 'Not ready: the database takes no writes' : 'Not ready: the data folder takes no writes',
        code: 'NOT_READY',
        status: 'not-ready',
        version: VERSION,
        checks: { store: 'failed', masterKey: 'ok', disk: 'ok' },
      })
    } finally {
      await other.stop().catch(() => {})
      removeDir(other.dataDir)
    }
  })
})

describe('metrics', () => {
  test('404 NOT_FOUND, as an unknown route, when SVC_METRICS_TOKEN is not set', async () => {
    const plain = await startTestServer()
    try {
      const response = await fetch(`${plain.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
      expect(response.status).toBe(404)
      expect(await response.json()).toEqual({ error: 'No such endpoint', code: 'NOT_FOUND' })
    } finally {
      await plain.stop()
      removeDir(plain.dataDir)
    }
  })

  test('401 without the token, with another token, or with an access key', async () => {
    const user = await signUp(server.url)
    const key = await user.keyClient(['stats:read'])
    for (const authorization of [undefined, 'Bearer wrong-token-0123456789', `Bearer ${key.credentials.key}`, METRICS_TOKEN]) {
      const response = await fetch(`${server.url}/metrics`, { headers: authorization ? { authorization } : {} })
      expect(response.status).toBe(401)
      expect((await response.json()).code).toBe('AUTH_REQUIRED')
    }
    // A session is no metrics token either.
    expect((await user.get('/metrics')).status).toBe(401)
  })

  test('counts requests by route template and status, latency, open vaults, fsyncs and login failures; no user in a label', async () => {
    const email = uniqueEmail('metrics')
    const user = await signUp(server.url, email)
    const category = await user.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })
    const entry = await user.post('/api/entries', { categoryId: category.body.id, name: 'shop', value: 'sk_metrics_secret' })
    const before = await metricsText()
    const reveals = `svc_vault_http_requests_total{method="POST",route="/api/entries/:id/reveal",status="200"}`
    const missing = `svc_vault_http_requests_total{method="POST",route="/api/entries/:id/reveal",status="404"}`
    const failures = `svc_vault_login_failures_total{reason="invalid_credentials"}`
    // A durable write is a file sync on the file store, a query (the commit) on PostgreSQL.
    const fsyncs = ON_POSTGRES ? 'svc_vault_db_query_duration_seconds_count' : 'svc_vault_fsync_duration_seconds_count'

    await user.post(`/api/entries/${entry.body.id}/reveal`)
    await user.post(`/api/entries/${entry.body.id}/reveal`)
    await user.post(`/api/entries/${crypto.randomUUID()}/reveal`)
    await new Client(server.url).post('/api/auth/login', { email, password: 'wrong password here' })
    await user.post('/api/entries', { categoryId: category.body.id, name: 'blog', value: 'sk_metrics_second' })
    await fetch(`${server.url}/no/such/route`, { method: 'POST' })
    // Counters are updated once each answer has gone out: wait until the last one is counted.
    let after = await metricsText()
    for (let i = 0; i < 100 && !after.includes('route="unmatched"'); i++) after = await metricsText()

    expect(sample(after, reveals)! - (sample(before, reveals) ?? 0)).toBe(2)
    expect(sample(after, missing)! - (sample(before, missing) ?? 0)).toBe(1)
    expect(sample(after, failures)! - sample(before, failures)!).toBe(1)
    expect(sample(after, fsyncs)!).toBeGreaterThan(sample(before, fsyncs)!)
    expect(sample(after, 'svc_vault_open_vaults')!).toBeGreaterThanOrEqual(1)
    expect(sample(after, 'svc_vault_write_failures_total')).toBe(0)
    expect(sample(after, 'svc_vault_audit_failures_total')).toBe(0)
    expect(after).toContain('svc_vault_http_requests_total{method="POST",route="unmatched",status="404"}')
    expect(after).toContain(`svc_vault_build_info{version="${VERSION}"} 1`)
    expect(after).toMatch(/svc_vault_http_request_duration_seconds_bucket\{method="POST",route="\/api\/entries\/:id\/reveal",le="0\.005"\} \d+/)
    expect(after).toMatch(/svc_vault_http_request_duration_seconds_bucket\{method="POST",route="\/api\/entries\/:id\/reveal",le="\+Inf"\} \d+/)
    // Nothing about a user: no id, no e-mail, no value, no path that was asked for.
    for (const leak of [user.user.id, email, entry.body.id, category.body.id, 'sk_metrics_secret', '/no/such/route']) expect(after).not.toContain(leak)
    // Every line is a comment or a sample.
    for (const line of after.trim().split('\n')) expect(line).toMatch(/^(# (HELP|TYPE) \w+ .+|\w+(\{[^}]*\})? [-+0-9.eInf]+)$/)
  })
})

test('with metrics or JSON logs on, every answer carries a request id; a plain one sent by a proxy is kept, anything else replaced', async () => {
  const own = await fetch(`${server.url}/healthz`)
  expect(own.headers.get('x-request-id')).toMatch(/^[0-9a-f]{8}-[0-9a-z]+$/)
  const kept = await fetch(`${server.url}/api/entries`, { headers: { 'x-request-id': 'caddy-4f2a.91' } })
  expect(kept.status).toBe(401)
  expect(kept.headers.get('x-request-id')).toBe('caddy-4f2a.91')
  const replaced = await fetch(`${server.url}/healthz`, { headers: { 'x-request-id': 'bad id\twith "quotes"' } })
  expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f]{8}-[0-9a-z]+$/)
})

test('the OpenAPI document lists the operations routes, public ones with security: []', async () => {
  const doc = await (await fetch(`${server.url}/api/openapi`)).json()
  expect(doc.paths['/healthz'].get).toMatchObject({ operationId: 'getHealth', security: [] })
  expect(doc.paths['/readyz'].get).toMatchObject({ operationId: 'getReadiness', security: [] })
  expect(Object.keys(doc.paths['/readyz'].get.responses).sort()).toEqual(['200', '421', '500', '503'])
  expect(doc.paths['/metrics'].get).toMatchObject({ operationId: 'getMetrics', security: [{ metricsToken: [] }] })
  expect(doc.components.securitySchemes.metricsToken).toMatchObject({ type: 'http', scheme: 'bearer' })
})

describe('SVC_LOG_FORMAT=json', () => {
  test('every line is one JSON object; requests carry method, route template, status, duration and request id; no secret, token or body', async () => {
    const spawned = await spawnServer({ env: { SVC_LOG_FORMAT: 'json', SVC_SIGNUP: 'open' } })
    try {
      const email = uniqueEmail('jsonlog')
      const user = await signUp(spawned.url, email)
      const category = await user.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })
      const entry = await user.post('/api/entries', { categoryId: category.body.id, name: 'shop', value: 'sk_jsonlog_secret' })
      await user.post(`/api/entries/${entry.body.id}/reveal?x=query_text_marker`)
      await new Client(spawned.url).post('/api/auth/login', { email, password: 'wrong_password_marker' })
      // Request lines go out once the answer has: wait for the last one.
      for (let i = 0; i < 200 && !spawned.output().includes('"route":"/api/auth/login"'); i++) await (await fetch(`${spawned.url}/healthz`)).text()
      expect(await spawned.stop()).toBe(0)
      const lines = spawned.output().trim().split('\n')
      const records = lines.map((line) => JSON.parse(line))
      for (const record of records) {
        expect(record.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
        expect(['info', 'warn', 'error']).toContain(record.level)
        expect(typeof record.message).toBe('string')
      }
      const reveal = records.find((record) => record.route === '/api/entries/:id/reveal')
      expect(reveal).toEqual({
        time: expect.any(String),
        level: 'info',
        message: 'request',
        method: 'POST',
        route: '/api/entries/:id/reveal',
        status: 200,
        duration: expect.any(Number),
        requestId: expect.any(String),
      })
      expect(records.find((record) => record.route === '/api/auth/login')?.status).toBe(401)
      expect(records.some((record) => /listening on http/.test(record.message))).toBe(true)
      expect(records.at(-1).message).toBe('svc-vault stopped (SIGTERM)')
      const output = spawned.output()
      for (const leak of ['sk_jsonlog_secret', 'query_text_marker', 'wrong_password_marker', PASSWORD, email, user.credentials.cookie!, entry.body.id]) {
        expect(output).not.toContain(leak)
      }
    } finally {
      await spawned.stop()
      removeDir(spawned.dataDir)
    }
  })

  test('a start-up failure is one JSON line too; the default stays text', async () => {
    const json = await runServerToExit({ SVC_LOG_FORMAT: 'json', SVC_MASTER_KEY: 'short', SVC_DATA_DIR: tempDir() })
    expect(json.code).toBe(1)
    const lines = json.output.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(JSON.parse(lines[0])).toMatchObject({ level: 'error', message: expect.stringContaining('SVC_MASTER_KEY') })
    const text = await runServerToExit({ SVC_MASTER_KEY: 'short', SVC_DATA_DIR: tempDir() })
    expect(text.output.trim()).toStartWith('svc-vault: SVC_MASTER_KEY must be')
    expect(() => loadConfig({ SVC_LOG_FORMAT: 'xml' })).toThrow('SVC_LOG_FORMAT must be "text" or "json"')
  })
})

describe('SVC_MASTER_KEY_FILE', () => {
  test('reads the master key from a file: a server on it opens data sealed with the same key', async () => {
    const dir = tempDir()
    const keyFile = join(dir, 'master-key')
    writeFileSync(keyFile, `${TEST_MASTER_KEY}\n`, { mode: 0o600 })
    const dataDir = join(dir, 'data')
    const first = await spawnServer({ dataDir, env: { SVC_SIGNUP: 'open' } }) // SVC_MASTER_KEY
    const user = await signUp(first.url)
    const category = await user.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })
    const entry = await user.post('/api/entries', { categoryId: category.body.id, name: 'shop', value: 'sk_key_file' })
    expect(await first.stop()).toBe(0)
    const second = await spawnServer({ dataDir, env: { SVC_MASTER_KEY: undefined, SVC_MASTER_KEY_FILE: keyFile } })
    try {
      const again = new Client(second.url, { cookie: user.credentials.cookie })
      expect((await again.post(`/api/entries/${entry.body.id}/reveal`)).body.value).toBe('sk_key_file')
      expect(second.output()).not.toContain(TEST_MASTER_KEY)
    } finally {
      await second.stop()
      removeDir(dir)
    }
  })

  test('a missing or bad file, or both variables set, stops the start with one line that never shows the file', async () => {
    const dir = tempDir()
    const bad = join(dir, 'bad-key')
    writeFileSync(bad, 'not-a-key-but-secret-looking-text\n')
    const missing = await runServerToExit({ SVC_MASTER_KEY_FILE: join(dir, 'nope'), SVC_DATA_DIR: dir })
    expect(missing.code).toBe(1)
    expect(missing.output.trim()).toBe(`svc-vault: SVC_MASTER_KEY_FILE: cannot read ${join(dir, 'nope')} (ENOENT)`)
    const wrong = await runServerToExit({ SVC_MASTER_KEY_FILE: bad, SVC_DATA_DIR: dir })
    expect(wrong.code).toBe(1)
    expect(wrong.output.trim().split('\n')).toHaveLength(1)
    expect(wrong.output).toContain('SVC_MASTER_KEY_FILE')
    expect(wrong.output).not.toContain('secret-looking')
    expect(() => loadConfig({ SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_MASTER_KEY_FILE: bad })).toThrow('both set')
    removeDir(dir)
  })
})

test('svc-vault --version prints the release and exits; unknown arguments exit 2', () => {
  const version = Bun.spawnSync(['bun', 'src/index.ts', '--version'], { cwd: ROOT })
  expect(version.exitCode).toBe(0)
  expect(version.stdout.toString()).toBe(`svc-vault ${VERSION}\n`)
  expect(VERSION).toBe(require(join(ROOT, 'package.json')).version)
  const unknown = Bun.spawnSync(['bun', 'src/index.ts', '--bogus'], { cwd: ROOT })
  expect(unknown.exitCode).toBe(2)
  expect(unknown.stderr.toString()).toContain('usage: svc-vault')
})
