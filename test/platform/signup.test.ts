// Sign-up policy (issue 14): SVC_SIGNUP=first is the default. Only the first account may
// register; then sign-up is closed. `open` and `closed` keep their meaning.
import { describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'
import { PASSWORD, uniqueEmail } from '../support/client'
import { removeDir, spawnServer, startTestServer } from '../support/server'

const register = (base: string, email = uniqueEmail('signup')) =>
  fetch(`${base}/api/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: PASSWORD }),
  })

const providers = async (base: string) => ((await (await fetch(`${base}/api/auth/providers`)).json()) as { signup: string }).signup

describe('SVC_SIGNUP', () => {
  test('the default is first; first, open and closed are accepted', () => {
    expect(loadConfig({}).signup).toBe('first')
    expect(loadConfig({ SVC_SIGNUP: 'FIRST' }).signup).toBe('first')
    expect(loadConfig({ SVC_SIGNUP: 'open' }).signup).toBe('open')
    expect(loadConfig({ SVC_SIGNUP: 'closed' }).signup).toBe('closed')
    expect(() => loadConfig({ SVC_SIGNUP: 'maybe' })).toThrow(/SVC_SIGNUP must be "first", "open" or "closed"/)
  })

  test('a server started without SVC_SIGNUP lets the first account register, then answers 403 SIGNUP_DISABLED', async () => {
    const server = await spawnServer({ env: { SVC_SIGNUP: undefined, SVC_REGISTER_LIMIT: undefined } })
    try {
      expect(await providers(server.url)).toBe('open')
      const email = uniqueEmail('first')
      expect((await register(server.url, email)).status).toBe(201)
      expect(await providers(server.url)).toBe('closed')
      const second = await register(server.url)
      expect(second.status).toBe(403)
      expect(await second.json()).toEqual({ error: expect.any(String), code: 'SIGNUP_DISABLED' })
      expect(second.headers.getSetCookie()).toEqual([])
      // The first account signs in as usual.
      const login = await fetch(`${server.url}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: PASSWORD }),
      })
      expect(login.status).toBe(200)
      // Still closed after a restart.
      expect(await server.stop()).toBe(0)
      const again = await spawnServer({ dataDir: server.dataDir, env: { SVC_SIGNUP: undefined } })
      try {
        expect((await register(again.url)).status).toBe(403)
      } finally {
        await again.stop()
      }
    } finally {
      await server.stop()
      removeDir(server.dataDir)
    }
  }, 30_000)

  test('first: of parallel first registrations exactly one succeeds', async () => {
    const server = await startTestServer({ env: { SVC_SIGNUP: 'first' }, realPasswordCost: true })
    try {
      const answers = await Promise.all(Array.from({ length: 8 }, () => register(server.url)))
      const statuses = answers.map((response) => response.status).sort()
      expect(statuses).toEqual([201, 403, 403, 403, 403, 403, 403, 403])
      expect(server.deps.accounts.users()).toHaveLength(1)
    } finally {
      await server.stop()
      removeDir(server.dataDir)
    }
  })

  test('open keeps registering; closed refuses even the first account', async () => {
    const open = await startTestServer({ env: { SVC_SIGNUP: 'open' } })
    const closed = await startTestServer({ env: { SVC_SIGNUP: 'closed' } })
    try {
      for (let i = 0; i < 3; i++) expect((await register(open.url)).status).toBe(201)
      expect(await providers(open.url)).toBe('open')
      expect((await register(closed.url)).status).toBe(403)
      expect(await providers(closed.url)).toBe('closed')
    } finally {
      await open.stop()
      await closed.stop()
      removeDir(open.dataDir)
      removeDir(closed.dataDir)
    }
  })
})
