// Security headers on every answer (success, every kind of error, unknown routes, HTML), and a
// strict Content-Security-Policy on every HTML answer.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { signUp, type Client } from '../support/client'
import { startTestServer, type TestServer } from '../support/server'
import { apiPaths } from './support'

let server: TestServer
let alice: Client
beforeAll(async () => {
  server = await startTestServer()
  alice = await signUp(server.url)
})
afterAll(() => server.stop())

function expectSecurityHeaders(what: string, headers: Headers) {
  const got = {
    what,
    nosniff: headers.get('x-content-type-options'),
    referrer: headers.get('referrer-policy'),
    frame: headers.get('x-frame-options'),
  }
  expect(got).toEqual({ what, nosniff: 'nosniff', referrer: 'no-referrer', frame: 'DENY' })
}

function directives(csp: string): Map<string, string[]> {
  const map = new Map<string, string[]>()
  for (const part of csp.split(';')) {
    const [name, ...values] = part.trim().split(/\s+/)
    if (name) map.set(name.toLowerCase(), values)
  }
  return map
}

/** Strict: nothing loads unless listed, no eval, no wildcard or data: scripts, no framing; inline
 * script only inside a sandbox without same-origin (the API reference page). */
function expectStrictCsp(what: string, csp: string | null) {
  expect({ what, csp: csp !== null }).toEqual({ what, csp: true })
  const d = directives(csp!)
  const fallback = d.get('default-src') ?? []
  expect({ what, defaultSrc: fallback.every((v) => v === "'none'" || v === "'self'") && fallback.length > 0 }).toEqual({ what, defaultSrc: true })
  const scripts = d.get('script-src') ?? fallback
  expect({ what, scripts: scripts.filter((v) => v === '*' || v === "'unsafe-eval'" || v === 'data:' || v === 'http:' || v === 'https:') }).toEqual({
    what,
    scripts: [],
  })
  const sandbox = d.get('sandbox')
  if (scripts.includes("'unsafe-inline'")) {
    expect({ what, sandboxed: sandbox !== undefined && !sandbox.includes('allow-same-origin') }).toEqual({ what, sandboxed: true })
  }
  if (!sandbox) {
    expect({ what, frameAncestors: d.get('frame-ancestors') }).toEqual({ what, frameAncestors: ["'none'"] })
    expect({ what, objectSrc: d.get('object-src') ?? fallback }).toEqual({ what, objectSrc: ["'none'"] })
  }
}

test('every kind of answer carries the security headers', async () => {
  const key = await alice.keyClient(['stats:read'])
  const category = await alice.post('/api/categories', { name: 'H', keyType: 'group' })
  const answers: [string, { status: number; headers: Headers }][] = [
    ['200 openapi', await alice.anonymous().get('/api/openapi')],
    ['200 list', await alice.get('/api/categories')],
    ['201 create', category],
    ['204 delete', await alice.delete(`/api/categories/${category.body.id}`)],
    ['400 validation', await alice.post('/api/categories', { name: '' })],
    ['400 invalid json', await alice.post('/api/categories', '{"name":')],
    ['401 no credentials', await alice.anonymous().get('/api/categories')],
    ['401 bad key', await alice.withKey('svc_nope').get('/api/categories')],
    ['403 scope', await key.get('/api/categories')],
    ['403 csrf', await alice.post('/api/categories', { name: 'x', keyType: 'group' }, { origin: 'https://evil.example' })],
    ['404 resource', await alice.get(`/api/categories/${crypto.randomUUID()}`)],
    ['404 api route', await alice.get('/api/no-such-thing')],
    ['404 method', await alice.request('PATCH', '/api/categories')],
    ['413 too large', await alice.post('/api/categories', 'x'.repeat(2 * 1024 * 1024 + 10))],
  ]
  for (const [what, answer] of answers) expectSecurityHeaders(`${what} (${answer.status})`, answer.headers)
  expect(answers.map(([what, a]) => `${what}:${a.status}`)).toEqual(answers.map(([what]) => `${what}:${what.slice(0, 3)}`))

  // Every operation of the API, unauthenticated and with a bad body: 4xx with the headers, never 5xx.
  const doc = await (await fetch(`${server.url}/api/openapi`)).json()
  for (const path of await apiPaths(server.url)) {
    for (const method of Object.keys(doc.paths[path])) {
      const concrete = path.replace(/\{[^}]+\}/g, crypto.randomUUID())
      // Not alice's own logout: the rest of the loop needs her session.
      for (const client of path === '/api/auth/logout' ? [alice.anonymous()] : [alice.anonymous(), alice]) {
        const answer = await client.request(method.toUpperCase(), concrete, method === 'get' ? undefined : '[1,')
        expect({ path, method, status: answer.status < 500 }).toEqual({ path, method, status: true })
        expectSecurityHeaders(`${method} ${path} (${answer.status})`, answer.headers)
      }
    }
  }
})

test('HTML answers carry a strict Content-Security-Policy', async () => {
  const pages = ['/', '/api/docs', '/some/client/route']
  for (const page of pages) {
    const answer = await fetch(server.url + page)
    const type = answer.headers.get('content-type') ?? ''
    await answer.text()
    expectSecurityHeaders(`${page} (${answer.status})`, answer.headers)
    expect({ page, status: answer.status < 500 }).toEqual({ page, status: true })
    if (type.includes('html')) expectStrictCsp(page, answer.headers.get('content-security-policy'))
  }
  // The API reference must be HTML, and so must the web interface once it is there.
  const docs = await fetch(`${server.url}/api/docs`)
  expect(docs.headers.get('content-type')).toContain('text/html')
})
