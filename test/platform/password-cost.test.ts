// A server hashes passwords at PASSWORD_COST (argon2id, 64 MiB, 2 passes), whatever its environment;
// the test suite's in-process servers hash cheaply (test/support/server.ts, TEST_PASSWORD_COST) and
// nothing else can lower the cost: no variable reads it, and no source file but that one sets it.
import { afterAll, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Passwords, PASSWORD_COST } from '../../src/auth/passwords'
import { loadConfig } from '../../src/config'
import { MemoryState } from '../../src/store/shared-state'
import { PASSWORD, signUp } from '../support/client'
import { removeDir, ROOT, spawnServer, TEST_MASTER_KEY } from '../support/server'

const dirs: string[] = []
afterAll(() => dirs.forEach(removeDir))

const REAL = `$argon2id$v=19$m=${PASSWORD_COST.memoryCost},t=${PASSWORD_COST.timeCost},p=1$`

test('a server stores new passwords at the full cost: registration and a change of password', async () => {
  expect(PASSWORD_COST).toEqual({ memoryCost: 65_536, timeCost: 2 })
  const server = await spawnServer({ store: 'file', env: { NODE_ENV: 'test' } })
  dirs.push(server.dataDir)
  const hashes = () => {
    const text = readdirSync(server.dataDir, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => readFileSync(join(entry.parentPath, entry.name), 'latin1'))
      .join('\n')
    return [...new Set(text.match(/\$argon2id\$[^"\s]+/g) ?? [])]
  }
  const client = await signUp(server.url)
  const registered = hashes()
  expect(registered).toHaveLength(1)
  expect((await client.request('POST', '/api/account/password', { currentPassword: PASSWORD, newPassword: 'another password 5678' })).status).toBe(204)
  expect(await server.stop()).toBe(0)
  const changed = hashes().filter((hash) => !registered.includes(hash))
  expect(changed).toHaveLength(1)
  for (const hash of [...registered, ...changed]) expect(hash).toStartWith(REAL)
}, 30_000)

test('an unknown e-mail is checked against a hash of the same cost as a real one', async () => {
  const verify = Bun.password.verify
  const checked: string[] = []
  Bun.password.verify = ((password: string, hash: string) => {
    checked.push(hash)
    return verify(password, hash)
  }) as typeof Bun.password.verify
  try {
    const passwords = new Passwords(new MemoryState(Date.now), 0)
    await expect(passwords.signIn('nobody@example.com', 'a guess', '127.0.0.1', () => undefined)).rejects.toMatchObject({ code: 'INVALID_CREDENTIALS' })
  } finally {
    Bun.password.verify = verify
  }
  expect(checked).toHaveLength(1)
  expect(checked[0]).toStartWith(REAL)
}, 30_000)

test('no variable sets the cost, and only the test support lowers it', () => {
  const everything = Object.fromEntries(
    Object.keys(process.env)
      .filter((name) => name.startsWith('SVC_'))
      .map((name) => [name, process.env[name]]),
  )
  expect(loadConfig({ SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_DATA_DIR: '/tmp/unused', NODE_ENV: 'test', ...everything }).passwordCost).toBeUndefined()
  const setters = [...new Bun.Glob('{src,bench,scripts,test}/**/*.{ts,tsx}').scanSync({ cwd: ROOT })].filter((file) =>
    /passwordCost\s*:/.test(readFileSync(join(ROOT, file), 'utf8')),
  )
  expect(setters).toEqual(['test/support/server.ts'])
})
