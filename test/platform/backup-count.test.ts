// Issue 32: backup and restore of the same file say the same thing, counting vaults (one per user)
// apart from audit logs. The backup once said "2 vault(s)" for one user (it counted the user's
// audit log as a vault) and the restore of that file said 1.
import { afterAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { signUp } from '../support/client'
import { storeEnv } from '../support/postgres'
import { ROOT, startTestServer, tempDir, type TestServer } from '../support/server'

const dirs: string[] = []
let server: TestServer | undefined
afterAll(async () => {
  await server?.stop()
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

async function cli(script: 'backup' | 'restore', args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn(['bun', `src/cli/${script}.ts`, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, output: out + err }
}

test('one user: backup and restore both say 1 vault, and name the audit logs apart', async () => {
  server = await startTestServer()
  dirs.push(server.dataDir)
  const alice = await signUp(server.url)
  // A change writes the user's audit log (vaults/<user>.audit.log) beside the vault.
  expect((await alice.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' })).status).toBe(201)
  const folder = tempDir('svc-vault-bundle-')
  dirs.push(folder)
  const file = join(folder, 'vault.json')
  // On the database store the backup reads the server's database (the same bundle either way).
  const backup = await cli('backup', [file, '--data-dir', server.dataDir], await storeEnv(server.dataDir))
  expect(backup.code).toBe(0)
  const said = /backup written to .*: accounts, (\d+) vaults? and (\d+) audit logs? from /.exec(backup.output)
  expect(said?.slice(1)).toEqual(['1', expect.any(String)])
  expect(Number(said![2])).toBeGreaterThanOrEqual(1)

  const restored = tempDir('svc-vault-restored-')
  dirs.push(restored)
  const restore = await cli('restore', [file, '--data-dir', restored])
  expect(restore.code).toBe(0)
  expect(restore.output).toContain(`restored accounts, 1 vault and ${said![2]} audit log`)
  expect(backup.output + restore.output).not.toContain('vault(s)')
}, 30_000)
