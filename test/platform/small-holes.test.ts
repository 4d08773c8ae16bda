// Issue 14, smaller holes: a private data folder, private backup folders, and DNS rebinding
// (421 MISDIRECTED_REQUEST for a Host that is neither SVC_BASE_URL's nor a loopback name).
import { describe, expect, test } from 'bun:test'
import { chmodSync, mkdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { createBackup, writeBackup } from '../../src/store/backup'
import { signUp } from '../support/client'
import { removeDir, startTestServer, tempDir } from '../support/server'

const mode = (path: string) => statSync(path).mode & 0o777

describe('private folders', () => {
  test('an existing data folder that others can read is made 0700 at start', async () => {
    const parent = tempDir()
    const dataDir = join(parent, 'data')
    mkdirSync(dataDir)
    chmodSync(dataDir, 0o755)
    const server = await startTestServer({ dataDir })
    try {
      expect(mode(dataDir)).toBe(0o700)
    } finally {
      await server.stop()
      removeDir(parent)
    }
  })

  test('a backup creates the folders it needs with mode 0700, the file 0600', async () => {
    const server = await startTestServer()
    const out = tempDir()
    try {
      await signUp(server.url)
      const target = join(out, 'backups', 'nightly', 'vault.json')
      await writeBackup(target, createBackup(server.dataDir))
      expect(mode(join(out, 'backups'))).toBe(0o700)
      expect(mode(join(out, 'backups', 'nightly'))).toBe(0o700)
      expect(mode(target)).toBe(0o600)
    } finally {
      await server.stop()
      removeDir(server.dataDir)
      removeDir(out)
    }
  })
})

describe('DNS rebinding: the Host header', () => {
  const get = (url: string, path: string, host: string, init: RequestInit = {}) =>
    fetch(url + path, { ...init, headers: { ...(init.headers as Record<string, string>), host }, redirect: 'manual' })

  async function expectMisdirected(response: Response) {
    expect(response.status).toBe(421)
    expect(await response.json()).toEqual({ error: expect.any(String), code: 'MISDIRECTED_REQUEST' })
  }

  test('listening on loopback: a foreign Host is refused with 421 on every path; loopback names pass', async () => {
    const server = await startTestServer()
    try {
      const port = new URL(server.url).port
      for (const path of ['/api/auth/me', '/api/auth/providers', '/api/no-such-route', '/', '/api/openapi']) {
        await expectMisdirected(await get(server.url, path, `evil.example:${port}`))
      }
      await expectMisdirected(
        await get(server.url, '/api/auth/register', `rebind.evil.example:${port}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: 'x@example.test', password: 'correct horse battery' }),
        }),
      )
      expect(server.deps.accounts.userByEmail('x@example.test')).toBeUndefined()
      for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'localhost', `LOCALHOST:${port}`]) {
        expect((await get(server.url, '/api/auth/providers', host)).status).toBe(200)
      }
    } finally {
      await server.stop()
      removeDir(server.dataDir)
    }
  })

  test('with SVC_BASE_URL its host passes and others are refused, whatever the listen address', async () => {
    const server = await startTestServer({ env: { SVC_BASE_URL: 'https://vault.example.com', HOST: '0.0.0.0' } })
    try {
      expect((await get(server.url, '/api/auth/providers', 'vault.example.com')).status).toBe(200)
      expect((await get(server.url, '/api/auth/providers', `127.0.0.1:${new URL(server.url).port}`)).status).toBe(200)
      await expectMisdirected(await get(server.url, '/api/auth/providers', 'vault.example.com.evil.example'))
      await expectMisdirected(await get(server.url, '/api/auth/providers', 'vault.example.com:8443'))
    } finally {
      await server.stop()
      removeDir(server.dataDir)
    }
  })

  test('listening on all interfaces without SVC_BASE_URL: any Host is answered (nothing to compare with)', async () => {
    const server = await startTestServer({ env: { HOST: '0.0.0.0' } })
    try {
      expect((await get(server.url, '/api/auth/providers', 'vault.lan:3000')).status).toBe(200)
    } finally {
      await server.stop()
      removeDir(server.dataDir)
    }
  })
})
