// The server as its own process (`bun src/index.ts`): start-up checks, restarts, crashes, the lock.
import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { Client, signUp } from '../support/client'
import { removeDir, runServerToExit, spawnServer, tempDir, TEST_MASTER_KEY } from '../support/server'

const OTHER_KEY = Buffer.alloc(32, 9).toString('base64')

/** Seeds a user with a category and an access key; returns what to check after a restart. */
async function seed(url: string) {
  const alice = await signUp(url)
  const category = await alice.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })
  expect(category.status).toBe(201)
  const created = await alice.post('/api/access-keys', { name: 'ci', scopes: ['categories:read'] })
  expect(created.status).toBe(201)
  return { alice, category: category.body, key: created.body.key as string }
}

async function expectSeedIntact(url: string, seeded: Awaited<ReturnType<typeof seed>>) {
  const alice = new Client(url, seeded.alice.credentials)
  const me = await alice.get('/api/auth/me')
  expect(me.status).toBe(200)
  expect(me.body.user).toEqual({ ...seeded.alice.user, twoFactorEnabled: false })
  expect((await alice.get(`/api/categories/${seeded.category.id}`)).body).toEqual(seeded.category)
  const keyed = alice.withKey(seeded.key)
  expect((await keyed.get('/api/categories')).body.map((c: any) => c.id)).toEqual([seeded.category.id])
}

describe('restarts', () => {
  test('SIGTERM exits 0, releases the lock, and a restart keeps all data and sessions', async () => {
    const first = await spawnServer()
    try {
      const seeded = await seed(first.url)
      expect(await first.stop()).toBe(0)
      expect(first.output()).toContain('stopped')
      expect(existsSync(join(first.dataDir, 'svc-vault.lock'))).toBe(false)
      const second = await spawnServer({ dataDir: first.dataDir })
      try {
        await expectSeedIntact(second.url, seeded)
        // lastUsedAt reached disk on the clean stop.
        expect(await second.stop()).toBe(0)
        const accounts = JSON.parse(readFileSync(join(first.dataDir, 'accounts.json'), 'utf8'))
        expect(accounts.accessKeys[0].lastUsedAt).not.toBeNull()
      } finally {
        await second.kill()
      }
    } finally {
      await first.kill()
      removeDir(first.dataDir)
    }
  }, 20_000)

  test('kill -9 then start again: every acknowledged write is there and the stale lock is taken over', async () => {
    const first = await spawnServer()
    try {
      const seeded = await seed(first.url)
      await first.kill()
      expect(existsSync(join(first.dataDir, 'svc-vault.lock'))).toBe(true)
      const second = await spawnServer({ dataDir: first.dataDir })
      try {
        await expectSeedIntact(second.url, seeded)
      } finally {
        await second.stop()
      }
    } finally {
      await first.kill()
      removeDir(first.dataDir)
    }
  }, 20_000)

  test('a second instance on the same data folder refuses to start while the first keeps serving', async () => {
    const first = await spawnServer()
    try {
      const alice = await signUp(first.url)
      const second = await runServerToExit({ SVC_DATA_DIR: first.dataDir, SVC_MASTER_KEY: TEST_MASTER_KEY })
      expect(second.code).toBe(1)
      expect(second.output).not.toContain('listening')
      expect(second.output.trim().split('\n')).toHaveLength(1)
      expect(second.output).toMatch(/another svc-vault server .*is using/)
      expect((await alice.get('/api/auth/me')).status).toBe(200)
      expect(readFileSync(join(first.dataDir, 'svc-vault.lock'), 'utf8').trim()).toBe(String(first.proc.pid))
    } finally {
      await first.stop()
      removeDir(first.dataDir)
    }
  }, 20_000)
})

describe('start-up checks', () => {
  test('a master key that does not match the data stops the start: exit 1, one clear line, nothing served', async () => {
    const first = await spawnServer()
    await seed(first.url)
    expect(await first.stop()).toBe(0)
    try {
      const wrong = await runServerToExit({ SVC_DATA_DIR: first.dataDir, SVC_MASTER_KEY: OTHER_KEY })
      expect(wrong.code).toBe(1)
      expect(wrong.output).not.toContain('listening')
      expect(wrong.output.trim().split('\n')).toHaveLength(1)
      expect(wrong.output).toContain('master key does not match')
      expect(wrong.output).not.toContain(OTHER_KEY)
      // And the lock was released: the right key still starts.
      const again = await spawnServer({ dataDir: first.dataDir })
      expect(await again.stop()).toBe(0)
    } finally {
      removeDir(first.dataDir)
    }
  }, 20_000)

  test('invalid settings exit 1 with one line naming the variable', async () => {
    const dataDir = tempDir()
    try {
      const cases: [Record<string, string>, string][] = [
        [{ SVC_MASTER_KEY: 'too-short' }, 'SVC_MASTER_KEY'],
        [{ SVC_MASTER_KEY: Buffer.alloc(31, 1).toString('base64') }, 'SVC_MASTER_KEY'],
        [{ SVC_MASTER_KEY: Buffer.alloc(33, 1).toString('base64') }, 'SVC_MASTER_KEY'],
        [{ SVC_MASTER_KEY: TEST_MASTER_KEY, PORT: '99999' }, 'PORT'],
        [{ SVC_MASTER_KEY: TEST_MASTER_KEY, PORT: 'http' }, 'PORT'],
        [{ SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_SIGNUP: 'maybe' }, 'SVC_SIGNUP'],
        [{ SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_BASE_URL: 'vault.example.com' }, 'SVC_BASE_URL'],
        [{ SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_SESSION_TTL: 'forever' }, 'SVC_SESSION_TTL'],
        // Issue 32: a bare number once meant seconds (5 s sessions); the unit is required.
        [{ SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_SESSION_TTL: '5' }, 'SVC_SESSION_TTL'],
        [{ SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_TRUST_PROXY: 'everyone' }, 'SVC_TRUST_PROXY'],
        [{ SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_REGISTER_LIMIT: 'lots' }, 'SVC_REGISTER_LIMIT'],
      ]
      for (const [env, name] of cases) {
        const result = await runServerToExit({ PORT: '0', ...env, SVC_DATA_DIR: dataDir })
        expect(result.code).toBe(1)
        const lines = result.output.trim().split('\n')
        expect(lines).toHaveLength(1)
        expect(lines[0]).toContain(name)
        expect(result.output).not.toContain('listening')
      }
      // Nothing was created by a start that failed on configuration.
      expect(existsSync(join(dataDir, 'accounts.json'))).toBe(false)
    } finally {
      removeDir(dataDir)
    }
  }, 20_000)

  test('without SVC_MASTER_KEY a key is generated into master.key (0600) with a one-line warning, and reused', async () => {
    const first = await spawnServer({ env: { SVC_MASTER_KEY: undefined } })
    try {
      const path = join(first.dataDir, 'master.key')
      expect(statSync(path).mode & 0o777).toBe(0o600)
      expect(Buffer.from(readFileSync(path, 'utf8').trim(), 'base64')).toHaveLength(32)
      const warnings = first
        .output()
        .split('\n')
        .filter((line) => /warning/i.test(line))
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain('SVC_MASTER_KEY')
      expect(warnings[0]).toContain('master.key')
      const key = readFileSync(path, 'utf8')
      expect(first.output()).not.toContain(key.trim())
      const seeded = await seed(first.url)
      expect(await first.stop()).toBe(0)

      const second = await spawnServer({ dataDir: first.dataDir, env: { SVC_MASTER_KEY: undefined } })
      try {
        expect(second.output()).not.toMatch(/warning/i)
        expect(readFileSync(path, 'utf8')).toBe(key)
        await expectSeedIntact(second.url, seeded)
      } finally {
        await second.stop()
      }
    } finally {
      await first.kill()
      removeDir(first.dataDir)
    }
  }, 20_000)
})
