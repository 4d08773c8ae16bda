// Issue 14: /api/docs loaded Scalar from a CDN at @latest. Now the vault serves the standalone
// script of the installed, exactly pinned @scalar/api-reference itself: the page names no other
// host, its CSP allows none, and in Chromium it renders the reference asking this vault alone.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { hasChromium, openBrowser } from '../support/browser'
import { ROOT, startTestServer, type TestServer } from '../support/server'

let server: TestServer

beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

const directives = (csp: string) =>
  new Map(
    csp
      .split(';')
      .map((part) => part.trim().split(/\s+/))
      .map(([name, ...values]) => [name, values]),
  )

test('the docs page and its CSP name no other host; the script is the pinned package file', async () => {
  const page = await fetch(`${server.url}/api/docs`)
  expect(page.status).toBe(200)
  const html = await page.text()
  // No URL with a host: every reference is a path on this server.
  expect(html).not.toMatch(/(?:https?:)?\/\/[a-z0-9.-]+/i)
  const references = [...html.matchAll(/\b(?:src|href|data-url)="([^"]*)"/g)].map((m) => m[1])
  expect(references.sort()).toEqual(['/api/docs/sandbox-shim.js', '/api/docs/scalar.js', '/api/openapi'])
  expect(html).not.toContain('@latest')
  const csp = directives(page.headers.get('content-security-policy')!)
  for (const [name, values] of csp) {
    if (name === 'sandbox') continue
    expect({ name, values: values.filter((v) => !["'self'", "'none'", "'unsafe-inline'", 'data:', 'blob:'].includes(v)) }).toEqual({ name, values: [] })
  }
  expect(csp.get('default-src')).toEqual(["'none'"])
  expect(csp.get('script-src')).toEqual(["'self'"])
  expect(csp.get('connect-src')).toEqual(["'self'"])
  expect(csp.get('sandbox')).not.toContain('allow-same-origin')

  // An exact version in package.json (no range), and the bytes served are that package's.
  const pinned = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).dependencies['@scalar/api-reference']
  expect(pinned).toMatch(/^\d+\.\d+\.\d+$/)
  const installed = join(ROOT, 'node_modules', '@scalar', 'api-reference')
  expect(JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')).version).toBe(pinned)
  const script = await fetch(`${server.url}/api/docs/scalar.js`)
  expect(script.status).toBe(200)
  expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
  const served = Buffer.from(await script.arrayBuffer())
  expect(served.equals(readFileSync(join(dirname(join(installed, 'dist', 'index.js')), 'browser', 'standalone.js')))).toBe(true)
})

test.skipIf(!hasChromium() && process.env.CI !== 'true')(
  'in Chromium the reference renders, and every request goes to the vault',
  async () => {
    const browser = await openBrowser(server.url)
    try {
      // A 4 MB script: a busy machine takes a while.
      await browser.page.goto(`${server.url}/api/docs`, { timeout: 30_000 })
      // Scalar renders the document: its operations, by their OpenAPI summaries.
      await browser.page.getByText('Sign in with e-mail and password').first().waitFor({ timeout: 20_000 })
      expect(browser.errors).toEqual([])
      const origin = new URL(server.url).origin
      const elsewhere = browser.requests.filter((url) => !url.startsWith(`${origin}/`) && !/^(data|blob|about):/.test(url))
      expect(elsewhere).toEqual([])
      expect(browser.requests).toContain(`${origin}/api/docs/scalar.js`)
      expect(browser.requests).toContain(`${origin}/api/openapi`)
      // Nor did it try another host and meet the CSP (Scalar probes eval once; that is refused, and not a request).
      expect(browser.cspViolations.filter((v) => /blocked (https?|wss?):/.test(v))).toEqual([])
    } finally {
      await browser.close()
    }
  },
  60_000,
)

// Issue 32: the hosted service's buttons are not on a self-hosted vault's page, and the API's
// version is the app's (package.json, as /readyz says), not a made-up v1.0.0.
test.skipIf(!hasChromium() && process.env.CI !== 'true')(
  'the reference shows no hosted-service buttons and the app version',
  async () => {
    const { VERSION } = await import('../../src/version')
    const doc = await (await fetch(`${server.url}/api/openapi`)).json()
    expect(doc.info.version).toBe(VERSION)
    const browser = await openBrowser(server.url)
    try {
      await browser.page.goto(`${server.url}/api/docs`, { timeout: 30_000 })
      await browser.page.getByText('Sign in with e-mail and password').first().waitFor({ timeout: 20_000 })
      const text = await browser.page.locator('body').innerText()
      for (const hosted of ['Ask AI', 'Generate MCP', 'Connect MCP', 'Deploy', 'Configure', 'Share']) {
        expect({ hosted, visible: await browser.page.getByRole('button', { name: hosted, exact: true }).filter({ visible: true }).count() }).toEqual({
          hosted,
          visible: 0,
        })
        // As a word: the API's own "Shared vaults" is not the hosted service's "Share".
        expect({ hosted, inText: new RegExp(`\\b${hosted}\\b`).test(text) }).toEqual({ hosted, inText: false })
      }
      expect(text).toContain(VERSION)
      expect(text).not.toContain('1.0.0')
    } finally {
      await browser.close()
    }
  },
  60_000,
)
