// Issue 23, "Start-up and restore": a restored folder without its key never gets a fresh key
// generated into it; HOST and blank settings fail in config validation, in one line, before
// anything is written.
import { describe, expect, test } from 'bun:test'
import { copyFileSync, existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, loadConfig } from '../../src/config'
import { Client, signUp } from '../support/client'
import { removeDir, ROOT, runServerToExit, spawnServer, tempDir } from '../support/server'

function configError(env: Record<string, string>): string {
  try {
    loadConfig(env)
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    return (error as Error).message
  }
  throw new Error(`no ConfigError for ${JSON.stringify(env)}`)
}

function runCli(args: string[]) {
  const run = Bun.spawnSync(['bun', ...args], { cwd: ROOT, env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp' } })
  return { code: run.exitCode, output: run.stdout.toString() + run.stderr.toString() }
}

describe('config validation', () => {
  test('HOST must be an IP address or localhost: a one-line error naming HOST', () => {
    for (const host of ['not.a.host', 'example.com', '127.0.0.256', 'http://127.0.0.1', '127.0.0.1:3000', '1.2.3', '[]']) {
      const message = configError({ HOST: host })
      expect(message).toContain('HOST')
      expect(message).toContain(host)
      expect(message.split('\n')).toHaveLength(1)
    }
    for (const [host, listen] of [
      ['127.0.0.1', '127.0.0.1'],
      ['0.0.0.0', '0.0.0.0'],
      ['::', '::'],
      ['::1', '::1'],
      ['[::1]', '::1'],
      ['localhost', 'localhost'],
      [' 0.0.0.0 ', '0.0.0.0'],
    ]) {
      expect(loadConfig({ HOST: host }).host).toBe(listen)
    }
    expect(loadConfig({}).host).toBe('127.0.0.1')
  })

  test('blank values of the number, duration, address and host settings are refused, naming the setting', () => {
    for (const name of ['PORT', 'HOST', 'SVC_BASE_URL', 'SVC_SESSION_TTL', 'SVC_AI_TIMEOUT']) {
      for (const blank of [' ', '', '\t\n']) {
        const message = configError({ [name]: blank })
        expect(message).toContain(name)
        expect(message).toContain('blank')
        expect(message.split('\n')).toHaveLength(1)
      }
    }
    // Unset still means the default.
    expect(loadConfig({}).port).toBe(3000)
  })

  test('HOST=not.a.host, PORT=" " and SVC_MASTER_KEY= stop the server in one line, before any key or file is made', async () => {
    for (const [env, name] of [
      [{ HOST: 'not.a.host' }, 'HOST'],
      [{ PORT: ' ' }, 'PORT'],
      [{ HOST: ' ' }, 'HOST'],
      // As a compose file writes `SVC_MASTER_KEY: ${SVC_MASTER_KEY}` with the variable unset.
      [{ SVC_MASTER_KEY: '' }, 'SVC_MASTER_KEY'],
    ] as [Record<string, string>, string][]) {
      const dataDir = tempDir()
      try {
        // No SVC_MASTER_KEY: a start that got past configuration would generate master.key.
        const result = await runServerToExit({ PORT: '0', ...env, SVC_DATA_DIR: dataDir })
        expect(result.code).toBe(1)
        const lines = result.output.trim().split('\n')
        expect(lines).toHaveLength(1)
        expect(lines[0]).toContain(name)
        expect(result.output).not.toContain('EINVAL')
        expect(readdirSync(dataDir)).toEqual([])
      } finally {
        removeDir(dataDir)
      }
    }
  }, 30_000)
})

describe('restore without the key', () => {
  test('a restored folder without its key: exit 1, one line naming the missing key and how to supply it, no key generated; with the key it starts', async () => {
    const work = tempDir()
    const original = join(work, 'data')
    const restored = join(work, 'restored')
    const backup = join(work, 'vault.backup')
    try {
      // A vault whose key was generated into the folder, as a first start does.
      const first = await spawnServer({ dataDir: original, env: { SVC_MASTER_KEY: undefined } })
      const alice = await signUp(first.url)
      const category = (await alice.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })).body
      const entry = (await alice.post('/api/entries', { categoryId: category.id, name: 'shop', value: 'sk_live_restore' })).body
      expect(await first.stop()).toBe(0)

      // The documented commands (docs/operations.md, "Restore"): a backup without the key, restored.
      expect(runCli(['run', 'backup', backup, '--data-dir', original]).code).toBe(0)
      const restoring = runCli(['run', 'restore', backup, '--data-dir', restored])
      expect(restoring.code).toBe(0)
      expect(existsSync(join(restored, 'master.key'))).toBe(false)

      const failed = await runServerToExit({ SVC_DATA_DIR: restored })
      expect(failed.code).toBe(1)
      const lines = failed.output.trim().split('\n')
      expect(lines).toHaveLength(1)
      expect(lines[0]).toContain('master key is missing')
      expect(lines[0]).toContain('SVC_MASTER_KEY')
      expect(lines[0]).toContain(join(restored, 'master.key'))
      expect(failed.output).not.toContain('does not match')
      // Nothing generated into the restored folder: supplying the right key still works.
      expect(existsSync(join(restored, 'master.key'))).toBe(false)

      copyFileSync(join(original, 'master.key'), join(restored, 'master.key'))
      const second = await spawnServer({ dataDir: restored, env: { SVC_MASTER_KEY: undefined } })
      try {
        const back = new Client(second.url, alice.credentials)
        expect((await back.post(`/api/entries/${entry.id}/reveal`)).body.value).toBe('sk_live_restore')
      } finally {
        expect(await second.stop()).toBe(0)
      }
      // The key in SVC_MASTER_KEY works the same way.
      removeDir(join(restored, 'master.key'))
      const { readFileSync } = await import('node:fs')
      const key = readFileSync(join(original, 'master.key'), 'utf8').trim()
      const third = await spawnServer({ dataDir: restored, env: { SVC_MASTER_KEY: key } })
      expect(await third.stop()).toBe(0)
    } finally {
      removeDir(work)
    }
  }, 60_000)

  test('an empty folder still gets a generated key on first start', async () => {
    const first = await spawnServer({ env: { SVC_MASTER_KEY: undefined } })
    try {
      expect(existsSync(join(first.dataDir, 'master.key'))).toBe(true)
    } finally {
      await first.stop()
      removeDir(first.dataDir)
    }
  }, 20_000)
})
