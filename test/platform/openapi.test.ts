// GET /api/openapi: public, OpenAPI 3.1.0, valid against the 3.1 schema, both security schemes,
// every endpoint of the contract with its scope; /api/docs answers HTML.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Validator } from '@seriousme/openapi-schema-validator'
import { errorResponses } from '../../src/http/schemas'
import { EntryListItemSchema } from '../../src/modules/entries/model'
import { removeDir, startTestServer, type TestServer } from '../support/server'

let server: TestServer
let doc: any

beforeAll(async () => {
  server = await startTestServer()
  const response = await fetch(`${server.url}/api/openapi`)
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toContain('application/json')
  doc = await response.json()
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

// Every operation of CONTRACT.md and the interface document: method, path, and the scope a bearer
// key needs ('session' = session only, 'any' = any valid credentials, null = no authentication).
// A list: an access key needs every scope of it (AI extract answers values: export:read too).
const OPERATIONS: [string, string, string | string[] | null][] = [
  ['post', '/api/auth/register', null],
  ['post', '/api/auth/login', null],
  ['post', '/api/auth/logout', 'session'],
  ['get', '/api/auth/me', 'any'],
  ['get', '/api/auth/oidc', null],
  ['get', '/api/auth/oidc/callback', null],
  ['get', '/api/access-keys', 'session'],
  ['post', '/api/access-keys', 'session'],
  ['delete', '/api/access-keys/{id}', 'session'],
  ['get', '/api/envs', 'envs:read'],
  ['post', '/api/envs', 'envs:write'],
  ['get', '/api/envs/{id}', 'envs:read'],
  ['put', '/api/envs/{id}', 'envs:write'],
  ['delete', '/api/envs/{id}', 'envs:write'],
  ['post', '/api/envs/{id}/files', 'envs:write'],
  ['delete', '/api/envs/{id}/files/{fileId}', 'envs:write'],
  ['post', '/api/envs/{id}/files/{fileId}/reveal', 'envs:reveal'],
  ['get', '/api/categories', 'categories:read'],
  ['post', '/api/categories', 'categories:write'],
  ['get', '/api/categories/{id}', 'categories:read'],
  ['put', '/api/categories/{id}', 'categories:write'],
  ['delete', '/api/categories/{id}', 'categories:write'],
  ['get', '/api/entries', 'entries:read'],
  ['post', '/api/entries', 'entries:write'],
  ['get', '/api/entries/{id}', 'entries:read'],
  ['put', '/api/entries/{id}', 'entries:write'],
  ['delete', '/api/entries/{id}', 'entries:write'],
  ['post', '/api/entries/{id}/reveal', 'entries:reveal'],
  ['get', '/api/2fa', '2fa:read'],
  ['post', '/api/2fa', '2fa:write'],
  ['get', '/api/2fa/{id}', '2fa:read'],
  ['put', '/api/2fa/{id}', '2fa:write'],
  ['delete', '/api/2fa/{id}', '2fa:write'],
  ['post', '/api/2fa/{id}/reveal', '2fa:reveal'],
  ['get', '/api/stats', 'stats:read'],
  ['get', '/api/export', 'export:read'],
  ['post', '/api/ai/extract', ['ai:extract', 'export:read']],
  ['post', '/api/ai/import', 'ai:extract'],
  ['get', '/api/openapi', null],
]

describe('the OpenAPI document', () => {
  test('is served without authentication as "openapi": "3.1.0" and validates against the 3.1 schema', async () => {
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.info.title).toEqual(expect.any(String))
    const validator = new Validator()
    const result = await validator.validate(doc)
    if (!result.valid) console.error(JSON.stringify(result.errors, null, 2).slice(0, 4000))
    expect(result.valid).toBe(true)
    expect(validator.version).toBe('3.1')
  })

  test('declares both security schemes', () => {
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' })
    expect(doc.components.securitySchemes.sessionCookie).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'svc_session' })
  })

  test('lists every endpoint of the contract', () => {
    const missing = OPERATIONS.filter(([method, path]) => !doc.paths[path]?.[method]).map(([m, p]) => `${m.toUpperCase()} ${p}`)
    expect(missing).toEqual([])
  })

  test('each guarded operation states its scope and credentials', () => {
    for (const [method, path, need] of OPERATIONS) {
      const operation = doc.paths[path]?.[method]
      if (!operation || need === null) continue
      const label = `${method.toUpperCase()} ${path}`
      if (need === 'session') {
        expect({ label, security: operation.security }).toEqual({ label, security: [{ sessionCookie: [] }] })
      } else if (need === 'any') {
        expect({ label, security: operation.security }).toEqual({ label, security: [{ bearerAuth: [] }, { sessionCookie: [] }] })
      } else {
        const scopes = typeof need === 'string' ? [need] : need
        expect({ label, security: operation.security }).toEqual({ label, security: [{ bearerAuth: scopes }, { sessionCookie: [] }] })
        expect({ label, scope: operation['x-required-scope'] }).toEqual({ label, scope: need })
      }
      // Guarded operations document their error answers.
      expect({ label, has401: '401' in (operation.responses ?? {}) }).toEqual({ label, has401: true })
    }
  })

  test('AI import states that apply needs categories:write and entries:write', () => {
    const operation = doc.paths['/api/ai/import'].post
    expect(operation['x-apply-required-scope']).toEqual(['ai:extract', 'categories:write', 'entries:write'])
    expect(operation.description).toContain('categories:write')
    expect(operation.description).toContain('entries:write')
    expect(doc.paths['/api/ai/extract'].post.description).toContain('export:read')
  })

  test('operations with a body document its JSON schema; error answers use { error, code }', () => {
    const register = doc.paths['/api/auth/register'].post
    const schema = register.requestBody.content['application/json'].schema
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['email', 'password', 'name']))
    expect(schema.additionalProperties).toBe(false)
    const created = doc.paths['/api/access-keys'].post.responses['201'].content['application/json'].schema
    expect(JSON.stringify(created)).toContain('"key"')
    const error = doc.paths['/api/categories/{id}'].get.responses['404'].content['application/json'].schema
    expect(JSON.stringify(error)).toContain('"error"')
    expect(JSON.stringify(error)).toContain('"code"')
  })
})

test('/api/docs answers an HTML reference page without authentication', async () => {
  const response = await fetch(`${server.url}/api/docs`)
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toContain('text/html')
  const html = await response.text()
  expect(html.toLowerCase()).toContain('<html')
  expect(html).toContain('/api/openapi')
})

test('a production server (answers unchecked at run time) documents the same API, without internal flags', async () => {
  const production = await startTestServer({ env: { NODE_ENV: 'production' } })
  try {
    expect(production.deps.config.checkResponses).toBe(false)
    const text = await (await fetch(`${production.url}/api/openapi`)).text()
    expect(text).not.toContain('noValidate')
    expect(JSON.parse(text)).toEqual(doc)
  } finally {
    await production.stop()
    removeDir(production.dataDir)
  }
  // The schemas are shared by every app in the process (these tests' included): left as they were.
  expect((EntryListItemSchema as { noValidate?: boolean }).noValidate).toBeUndefined()
  expect((errorResponses()[401] as { noValidate?: boolean }).noValidate).toBeUndefined()
})
