// Issue 32: a vault opened by a LAN address or a name it was not told answers a browser with a
// short HTML page naming SVC_BASE_URL and the address used (not the JSON error as the whole
// page); API clients keep the JSON; the server log names the refused host once.
import { afterAll, expect, test } from 'bun:test'
import { spawnServer, type SpawnedServer } from '../support/server'

let server: SpawnedServer | undefined
afterAll(async () => void (await server?.stop()))

test('421: HTML for a browser naming SVC_BASE_URL and the address used, JSON for the API, one log line per host', async () => {
  server = await spawnServer({ env: { SVC_BASE_URL: 'https://vault.example.com' } })
  const port = new URL(server.url).port
  const lan = `192.168.1.20:${port}`
  const asBrowser = { host: lan, accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }
  for (let i = 0; i < 3; i++) {
    const page = await fetch(`${server.url}/`, { headers: asBrowser })
    expect(page.status).toBe(421)
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const html = await page.text()
    expect(html).toStartWith('<!doctype html>')
    expect(html).toContain('SVC_BASE_URL')
    expect(html).toContain('https://vault.example.com')
    expect(html).toContain(lan)
    expect(html.length).toBeLessThan(2000)
  }
  // A host that carries markup is shown as text, never as markup.
  const hostile = await (await fetch(`${server.url}/`, { headers: { ...asBrowser, host: `a"b<i>.example:${port}` } })).text()
  expect(hostile).not.toContain('<i>')

  const api = await fetch(`${server.url}/api/auth/me`, { headers: { host: lan } })
  expect(api.status).toBe(421)
  expect(await api.json()).toEqual({ error: expect.any(String), code: 'MISDIRECTED_REQUEST' })

  // Allowed hosts still get the page itself.
  expect((await fetch(`${server.url}/healthz`, { headers: { host: 'vault.example.com' } })).status).toBe(200)

  const lines = () =>
    server!
      .output()
      .split('\n')
      .filter((line) => line.includes('refused a request for host'))
  for (let i = 0; i < 50 && lines().length < 2; i++) await Bun.sleep(20)
  expect(lines().filter((line) => line.includes(`"${lan}"`))).toHaveLength(1)
}, 30_000)
