// GET /api/openapi: public, OpenAPI 3.1.0, valid against the 3.1 schema, both security schemes,
// every endpoint of the contract with its scope; /api/docs answers HTML.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Validator } from '@seriousme/openapi-schema-validator'
import { createApp } from '../../src/app'
import { SCOPES } from '../../src/auth/scopes'
import { errorResponses } from '../../src/http/schemas'
import { answerProblem, compileDocument } from '../support/answer-check'
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

// Every operation of the API (docs/api.md): method, path, and the scope a bearer
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

/** The schema a `$ref` names (one level). */
const resolve = (schema: any) => (schema?.$ref ? doc.components.schemas[schema.$ref.split('/').pop()] : schema)

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
    const schema = resolve(register.requestBody.content['application/json'].schema)
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['email', 'password', 'name']))
    expect(schema.additionalProperties).toBe(false)
    const created = resolve(doc.paths['/api/access-keys'].post.responses['201'].content['application/json'].schema)
    expect(JSON.stringify(created)).toContain('"key"')
    const errorRef = doc.paths['/api/categories/{id}'].get.responses['404'].content['application/json'].schema
    expect(errorRef).toEqual({ $ref: '#/components/schemas/Error' })
    const error = doc.components.schemas.Error
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

// Issue 25: a document that generated clients and linters can trust.
describe('the OpenAPI document for generated clients', () => {
  const operations = () =>
    Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, byMethod]) =>
      Object.entries(byMethod).map(([method, operation]) => ({ label: `${method.toUpperCase()} ${path}`, method, path, operation })),
    )

  /** Every schema object in the document (components, parameters, bodies, answers), with where it is. */
  function* schemas(): Generator<[string, any]> {
    function* walk(where: string, schema: any): Generator<[string, any]> {
      if (!schema || typeof schema !== 'object') return
      yield [where, schema]
      for (const [key, value] of Object.entries(schema)) {
        if (['properties', 'patternProperties', '$defs'].includes(key))
          for (const [name, child] of Object.entries(value as object)) yield* walk(`${where}/${key}/${name}`, child)
        else if (['anyOf', 'oneOf', 'allOf', 'prefixItems'].includes(key))
          for (const [i, child] of (value as any[]).entries()) yield* walk(`${where}/${key}/${i}`, child)
        else if (['items', 'additionalProperties', 'not', 'contains'].includes(key)) yield* walk(`${where}/${key}`, value)
      }
    }
    for (const [name, schema] of Object.entries(doc.components.schemas)) yield* walk(`#/components/schemas/${name}`, schema)
    for (const { label, operation } of operations()) {
      for (const parameter of operation.parameters ?? []) yield* walk(`${label} parameter ${parameter.name}`, parameter.schema)
      for (const [type, media] of Object.entries(operation.requestBody?.content ?? {})) yield* walk(`${label} body ${type}`, (media as any).schema)
      for (const [status, answer] of Object.entries(operation.responses ?? {})) {
        for (const [type, media] of Object.entries((answer as any).content ?? {})) yield* walk(`${label} ${status} ${type}`, (media as any).schema)
      }
    }
  }

  test('every operation has a unique, camelCase operationId, stated by its route', () => {
    const ids = operations().map(({ operation }) => operation.operationId)
    expect(ids.filter((id) => !/^[a-z][a-zA-Z0-9]*$/.test(id))).toEqual([])
    expect(new Set(ids).size).toBe(ids.length)
    const byLabel = Object.fromEntries(operations().map(({ label, operation }) => [label, operation.operationId]))
    expect(byLabel).toMatchObject({
      'GET /api/entries': 'listEntries',
      'POST /api/entries/{id}/reveal': 'revealEntry',
      'POST /api/access-keys': 'createAccessKey',
      'GET /api/stats': 'getStats',
      'POST /api/auth/register': 'register',
    })
    // Routes name their own (a derived name would change with the path).
    const app = createApp(server.deps)
    const unnamed = app.routes
      .filter((route: any) => route.path.startsWith('/api/') && !route.hooks?.detail?.hide)
      .filter((route: any) => !route.hooks?.detail?.operationId)
      .map((route: any) => `${route.method} ${route.path}`)
    expect(unnamed).toEqual([])
  })

  test('every resource and answer shape is a named component, referenced with $ref', () => {
    for (const name of [
      'Entry',
      'EntryListItem',
      'RevealedEntry',
      'Category',
      'TwoFactorToken',
      'TwoFactorCode',
      'AccessKey',
      'CreatedAccessKey',
      'EnvProject',
      'EnvProjectDetail',
      'EnvFile',
      'RevealedEnvFile',
      'Stats',
      'Error',
      'User',
      'Scope',
      'Environment',
    ]) {
      expect({ name, defined: name in doc.components.schemas }).toEqual({ name, defined: true })
    }
    const answer = (path: string, method: string, status: string) => doc.paths[path][method].responses[status].content['application/json'].schema
    expect(answer('/api/entries/{id}', 'get', '200')).toEqual({ $ref: '#/components/schemas/Entry' })
    expect(answer('/api/entries', 'get', '200')).toEqual({ type: 'array', items: { $ref: '#/components/schemas/EntryListItem' } })
    expect(answer('/api/stats', 'get', '200')).toEqual({ $ref: '#/components/schemas/Stats' })
    expect(answer('/api/2fa/{id}/reveal', 'post', '200')).toEqual({ $ref: '#/components/schemas/TwoFactorCode' })
    expect(answer('/api/envs/{id}', 'get', '200')).toEqual({ $ref: '#/components/schemas/EnvProjectDetailAnswer' })
    expect(doc.components.schemas.EnvProjectDetailAnswer.properties.data).toEqual({ $ref: '#/components/schemas/EnvProjectDetail' })
    // Every success answer with a JSON body names its shape (an array of one).
    const anonymous: string[] = []
    for (const { label, operation } of operations()) {
      for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
        const schema = response.content?.['application/json']?.schema
        if (!schema || !status.startsWith('2') || label === 'GET /api/openapi') continue
        if (!schema.$ref && !schema.items?.$ref) anonymous.push(`${label} ${status}`)
      }
    }
    expect(anonymous).toEqual([])
  })

  test('every error answer is the Error component; a body brings 400 and 413; a guarded operation 401 and 403', () => {
    for (const { label, method, operation } of operations()) {
      for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
        if (Number(status) < 400) continue
        // The Error component, or a named error shape that extends it (AMBIGUOUS_EXPORT lists the variable and projects).
        const schema = response.content?.['application/json']?.schema
        const ref = typeof schema?.$ref === 'string' ? schema.$ref.replace('#/components/schemas/', '') : undefined
        const extendsError =
          ref !== undefined && ref.endsWith('Error') && ['error', 'code'].every((name) => doc.components.schemas[ref]?.required?.includes(name))
        expect({ label, status, schema, extendsError }).toEqual({
          label,
          status,
          schema: { $ref: expect.stringMatching(/^#\/components\/schemas\/\w*Error$/) },
          extendsError: true,
        })
      }
      const statuses = Object.keys(operation.responses)
      if (operation.requestBody) expect({ label, statuses }).toEqual({ label, statuses: expect.arrayContaining(['400', '413']) })
      if (method !== 'get') expect({ label, statuses }).toEqual({ label, statuses: expect.arrayContaining(['413']) })
      // A user's credentials (an access key or a session) can lack a scope; the metrics token cannot.
      const userCredentials = operation.security.some((scheme: Record<string, unknown>) => 'bearerAuth' in scheme || 'sessionCookie' in scheme)
      if (operation.security.length > 0)
        expect({ label, statuses }).toEqual({ label, statuses: expect.arrayContaining(userCredentials ? ['401', '403'] : ['401']) })
    }
    // The duplicates to come (CATEGORY_EXISTS, ENTRY_EXISTS, ENV_PROJECT_EXISTS) have their 409 already.
    for (const [path, method] of [
      ['/api/categories', 'post'],
      ['/api/categories/{id}', 'put'],
      ['/api/entries', 'post'],
      ['/api/entries/{id}', 'put'],
      ['/api/envs', 'post'],
      ['/api/envs/{id}', 'put'],
    ]) {
      expect({ path, method, has409: '409' in doc.paths[path][method].responses }).toEqual({ path, method, has409: true })
    }
    expect(doc.paths['/api/auth/login'].post.responses['429'].headers['Retry-After']).toBeDefined()
  })

  test('public operations say security: [], and guarded ones a scheme', () => {
    const publicOnes = operations()
      .filter(({ operation }) => operation.security.length === 0)
      .map(({ label }) => label)
    expect(publicOnes.sort()).toEqual(
      [
        'POST /api/auth/register',
        'POST /api/auth/login',
        'GET /api/auth/providers',
        'GET /api/auth/oidc',
        'GET /api/auth/oidc/callback',
        'GET /api/openapi',
        'POST /api/auth/device',
        'POST /api/auth/device/token',
        'GET /healthz',
        'GET /readyz',
        'POST /api/auth/login/2fa',
        'POST /api/auth/passkey/login',
        'POST /api/auth/passkey/options',
      ].sort(),
    )
    for (const { operation } of operations()) expect(Array.isArray(operation.security)).toBe(true)
  })

  test('register and login document the session cookie they set', () => {
    for (const [path, status] of [
      ['/api/auth/register', '201'],
      ['/api/auth/login', '200'],
    ]) {
      const header = doc.paths[path].post.responses[status].headers?.['Set-Cookie']
      expect(header?.description).toContain('svc_session')
      expect(header?.schema).toEqual({ type: 'string' })
    }
  })

  test('scopes are an enum of every scope; integers are integers; nullable fields admit null', () => {
    expect(doc.components.schemas.Scope).toMatchObject({ type: 'string', enum: [...SCOPES] })
    expect(doc.components.schemas.AccessKey.properties.scopes.items).toEqual({ $ref: '#/components/schemas/Scope' })
    expect(resolve(doc.paths['/api/access-keys'].post.requestBody.content['application/json'].schema).properties.scopes.items).toEqual({
      $ref: '#/components/schemas/Scope',
    })
    const stats = doc.components.schemas.Stats
    const counts = [
      stats.properties.totalCategories,
      stats.properties.totalEntries,
      stats.properties.total2fa,
      ...Object.values(stats.properties.byKeyType.properties),
      ...Object.values(stats.properties.byEnvironment.properties),
    ]
    expect(counts).toHaveLength(10)
    for (const count of counts) expect(count).toEqual({ type: 'integer', minimum: 0 })
    expect(doc.components.schemas.TwoFactorCode.properties.remainingSeconds.type).toBe('integer')
    expect(doc.components.schemas.EnvProject.properties.fileCount.type).toBe('integer')
    expect(doc.components.schemas.Entry.properties.environment).toEqual({ anyOf: [{ $ref: '#/components/schemas/Environment' }, { type: 'null' }] })
    // Across the document: no number documented as a string, and no nullable type whose enum lacks null.
    const wrong: string[] = []
    for (const [where, schema] of schemas()) {
      if (schema.format === 'integer' || schema.format === 'numeric') wrong.push(`${where}: format ${schema.format}`)
      if (Array.isArray(schema.type) && schema.type.includes('null') && Array.isArray(schema.enum) && !schema.enum.includes(null))
        wrong.push(`${where}: enum without null`)
    }
    expect(wrong).toEqual([])
  })

  test('no framework-private keyword is left in a schema (ajv in strict mode compiles every one)', () => {
    const leftovers: string[] = []
    for (const [where, schema] of schemas()) for (const key of ['error', 'noValidate', '$id']) if (key in schema) leftovers.push(`${where}: ${key}`)
    expect(leftovers).toEqual([])
    const vault = compileDocument(doc)
    for (const { path, method, operation } of operations()) {
      for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
        for (const type of Object.keys(response.content ?? {})) {
          const pointer = ['paths', path, method, 'responses', status, 'content', type, 'schema']
            .map((part) => encodeURIComponent(part.replace(/~/g, '~0').replace(/\//g, '~1')))
            .join('/')
          expect(vault.ajv.getSchema(`https://svc-vault.test/openapi.json#/${pointer}`)).toBeFunction()
        }
      }
    }
  })

  test('servers: a relative "/" by default, SVC_BASE_URL when set', async () => {
    expect(doc.servers).toEqual([{ url: '/', description: expect.any(String) }])
    const behindProxy = await startTestServer({ env: { SVC_BASE_URL: 'https://vault.example.test' } })
    try {
      const document = await (await fetch(`${behindProxy.url}/api/openapi`)).json()
      expect(document.servers).toEqual([{ url: 'https://vault.example.test', description: expect.any(String) }])
    } finally {
      await behindProxy.stop()
      removeDir(behindProxy.dataDir)
    }
  })

  test("Redocly's recommended rules report no error", async () => {
    const { createConfig, lintFromString } = await import('@redocly/openapi-core')
    // Rules turned off, each with its reason, are listed in docs/api.md ("Generated clients").
    const config = await createConfig({ extends: ['recommended'] })
    const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: `${server.url}/api/openapi`, config })
    const describe = (problem: (typeof problems)[number]) => `${problem.severity} ${problem.ruleId}: ${problem.message} at ${problem.location[0]?.pointer}`
    const warnings = problems.filter((problem) => problem.severity === 'warn').map(describe)
    // Known warnings (docs/api.md): no license chosen; the OIDC redirects answer 302, not 2xx;
    // the providers and the document itself cannot fail with a 4xx.
    expect(warnings.every((warning) => /info-license|operation-2xx-response|operation-4xx-response/.test(warning))).toBe(true)
    expect(problems.filter((problem) => problem.severity === 'error').map(describe)).toEqual([])
  })

  test('the answer check rejects an undocumented status, a body against its schema, and a media type the document lacks', () => {
    const vault = compileDocument(doc)
    const entry = {
      id: 'e1',
      categoryId: 'c1',
      name: 'blog',
      environment: null,
      notes: null,
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
      expiresAt: null,
      rotateEveryDays: null,
      rotatedAt: null,
      dueStatus: 'ok',
    }
    expect(answerProblem(vault, 'GET', '/api/entries/e1', 200, 'application/json', JSON.stringify(entry))).toBeUndefined()
    expect(answerProblem(vault, 'GET', '/api/entries/e1', 200, 'application/json', JSON.stringify({ ...entry, environment: 'moon' }))).toContain('/environment')
    expect(answerProblem(vault, 'GET', '/api/entries/e1', 200, 'application/json', JSON.stringify({ ...entry, createdAt: 'yesterday' }))).toContain(
      '/createdAt',
    )
    expect(answerProblem(vault, 'GET', '/api/stats', 200, 'application/json', JSON.stringify({ totalEntries: '1' }))).toContain('rejects')
    expect(answerProblem(vault, 'GET', '/api/entries/e1', 418, 'application/json', JSON.stringify({ error: 'x', code: 'Y' }))).toContain('does not describe')
    expect(answerProblem(vault, 'GET', '/api/entries/e1', 404, 'application/json', JSON.stringify({ error: 'x' }))).toContain('code')
    expect(answerProblem(vault, 'GET', '/api/entries/e1', 200, 'text/html', '<p>')).toContain('text/html')
    // An endpoint the document does not have is not its to describe.
    expect(answerProblem(vault, 'GET', '/api/nothing-here', 404, 'application/json', JSON.stringify({ error: 'x', code: 'NOT_FOUND' }))).toBeUndefined()
  })
})
