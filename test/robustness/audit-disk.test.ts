// No secret leaves unrecorded (issue 17): on a disk that refuses the audit event, a reveal, an
// export or an extract answers 500 INTERNAL_ERROR without the secret; every one that did answer
// 200 has its event in the log. Set-ups as in failing-disk.test.ts:
//  - read-only: `chattr +i` on the data folder, vaults/ and every file in them (root), so even the
//    audit log's open file refuses writes (EPERM);
//  - full: a 1 MiB tmpfs as the data folder, filled up: the audit log's last page may still take
//    a few lines (those answers are 200 and recorded), then ENOSPC.
import { expect, test } from 'bun:test'
import { readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { signUp } from '../support/client'
import { removeDir, ROOT, startTestServer, tempDir, type TestServer } from '../support/server'
import { cleanupAfterAll, fullDisk, isRoot, run, type Disk } from './disks'
import { DATA_FOLDER_DISK, describeOnFileStore } from '../support/requirements'

// Every test here checks the audit logs through their files (audit-verify): on the file store
// only until the audit logs move into the database (the reason is printed with each skip).
const describe = describeOnFileStore(DATA_FOLDER_DISK)

const afterAllTests = cleanupAfterAll()

interface AuditDisk extends Disk {
  /** Every request after break() must fail (no page left to take a line). */
  strict: boolean
}

function readOnlyDisk(): AuditDisk | string {
  if (!isRoot) return 'chattr needs root'
  const dataDir = tempDir('svc-vault-audit-ro-')
  const paths = () => [
    dataDir,
    join(dataDir, 'vaults'),
    ...readdirSync(join(dataDir, 'vaults')).map((name) => join(dataDir, 'vaults', name)),
    ...readdirSync(dataDir)
      .filter((n) => n !== 'vaults')
      .map((n) => join(dataDir, n)),
  ]
  const set = (on: boolean) => {
    for (const path of paths()) run('chattr', [on ? '+i' : '-i', path])
  }
  afterAllTests(
    () => removeDir(dataDir),
    () => set(false),
  )
  const probe = join(dataDir, 'probe')
  writeFileSync(probe, 'x')
  run('chattr', ['+i', probe])
  let works = false
  try {
    writeFileSync(probe, 'y')
  } catch {
    works = true
  }
  run('chattr', ['-i', probe])
  unlinkSync(probe)
  if (!works) return `chattr +i does not make files read-only in ${dataDir}`
  return { dataDir, strict: true, break: () => set(true), fix: () => set(false) }
}

function auditFullDisk(): AuditDisk | string {
  const disk = fullDisk('svc-vault-audit-full-', afterAllTests)
  return typeof disk === 'string' ? disk : { ...disk, strict: false }
}

const INTERNAL = { error: 'Internal server error', code: 'INTERNAL_ERROR' }
const SECRET = 'sk_live_audit_disk_canary_4d1e'
const ENV_SECRET = 'ENV_CANARY=env_audit_disk_canary_93bc'

async function exercise(disk: AuditDisk) {
  // A data folder's disk refusing the audit log's writes: the file store in both passes of the suite
  // (the database going away is the PostgreSQL store's own test).
  let server: TestServer | null = await startTestServer({ dataDir: disk.dataDir, store: 'file' })
  afterAllTests(() => void server?.stop().catch(() => {}))
  const alice = await signUp(server.url)
  const category = (await alice.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })).body
  const entry = (await alice.post('/api/entries', { categoryId: category.id, name: 'shop', value: SECRET })).body
  const token = (await alice.post('/api/2fa', { service: 'Git', accountName: 'a', secret: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP' })).body
  const project = (await alice.post('/api/envs', { name: 'p' })).body.data
  const file = (await alice.post(`/api/envs/${project.id}/files`, { fileType: 'env', content: ENV_SECRET })).body.data
  const key = await alice.keyClient(['entries:reveal', '2fa:reveal', 'envs:reveal', 'export:read', 'ai:extract'])
  const reads: [string, () => Promise<{ status: number; body: unknown; text: string }>][] = [
    ['entry.reveal', () => key.post(`/api/entries/${entry.id}/reveal`)],
    ['twofa.reveal', () => key.post(`/api/2fa/${token.id}/reveal`)],
    ['envfile.read', () => key.post(`/api/envs/${project.id}/files/${file.id}/reveal`)],
    ['export.read', () => key.get('/api/export')],
    ['ai.extract', () => key.post('/api/ai/extract', { prompt: 'stripe shop' })],
  ]
  // Each works (and is recorded) while the disk does.
  for (const [, read] of reads) expect((await read()).status).toBe(200)
  const logPath = join(disk.dataDir, 'vaults', `${alice.user.id}.audit.log`)
  const countOf = (action: string) =>
    // Complete lines only: a torn last line was never acknowledged.
    readFileSync(logPath, 'utf8')
      .replace(/[^\n]*$/, '')
      .trim()
      .split('\n')
      .filter((line) => JSON.parse(line).action === action).length
  const before = Object.fromEntries(reads.map(([action]) => [action, countOf(action)]))

  disk.break()
  const answered: Record<string, number> = {}
  let failures = 0
  for (const [action, read] of reads) {
    answered[action] = 0
    // On the full disk the log's last page may take a few more lines: read until it refuses.
    for (let attempt = 0; attempt < 400; attempt++) {
      const answer = await read()
      if (answer.status === 200) {
        expect(disk.strict).toBe(false)
        answered[action]++
        continue
      }
      expect(answer.status).toBe(500)
      expect(answer.body).toEqual(INTERNAL)
      expect(answer.text).not.toContain(SECRET)
      expect(answer.text).not.toContain('env_audit_disk_canary')
      failures++
      break
    }
  }
  // Every kind of read was refused in the end.
  expect(failures).toBe(reads.length)
  expect(server.deps.audit.failures).toBeGreaterThanOrEqual(reads.length)
  expect(server.logs.some((line) => line.includes('could not write the audit event'))).toBe(true)
  expect(server.logs.join('\n')).not.toContain(SECRET)

  disk.fix()
  // Every secret that left has its event; the failed appends left nothing behind.
  for (const [action] of reads) expect({ action, events: countOf(action) }).toEqual({ action, events: before[action] + answered[action] })
  // Reads work (and are recorded) again, and the chain is intact.
  expect((await reads[0][1]()).status).toBe(200)
  expect(countOf('entry.reveal')).toBe(before['entry.reveal'] + answered['entry.reveal'] + 1)
  const stopping = server
  server = null
  await stopping.stop()
  const verify = Bun.spawnSync(['bun', 'src/cli/audit-verify.ts', '--data-dir', disk.dataDir], { cwd: ROOT, stdout: 'pipe' })
  expect(verify.stdout.toString()).toContain('audit log(s) verified')
  expect(verify.exitCode).toBe(0)
}

describe('the audit log on a failing disk', () => {
  const readOnly = readOnlyDisk()
  test.skipIf(typeof readOnly === 'string')(
    `read-only: no secret leaves unrecorded${typeof readOnly === 'string' ? ` (skipped: ${readOnly})` : ''}`,
    async () => {
      await exercise(readOnly as AuditDisk)
    },
    30_000,
  )

  const full = auditFullDisk()
  test.skipIf(typeof full === 'string')(
    `full: no secret leaves unrecorded${typeof full === 'string' ? ` (skipped: ${full})` : ''}`,
    async () => {
      await exercise(full as AuditDisk)
    },
    30_000,
  )
})
