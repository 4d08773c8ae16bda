// A backup takes an audit log together with the anchor of its chain: when the anchor changes
// between the reads (a compaction: a new checkpoint recorded, then the old lines dropped), the
// backup reads both again, so the bundle's log always verifies against the bundle's anchor. The
// compaction is made to happen at the worst moment: after the anchor was read, before the log is.
import { afterAll, expect, mock, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { verifyChain, type ChainAnchor } from '../../src/modules/audit/chain'
import * as auditLog from '../../src/store/audit-log'
import { signUp, uniqueEmail } from '../support/client'
import { removeDir, startTestServer } from '../support/server'

const realReadAuditBytes = auditLog.readAuditBytes
let beforeLogRead: ((path: string) => void) | null = null
mock.module('../../src/store/audit-log', () => ({
  ...auditLog,
  readAuditBytes: (path: string, limit?: number) => {
    beforeLogRead?.(path)
    return realReadAuditBytes(path, limit)
  },
}))
const { createBackup } = await import('../../src/store/backup')

const dirs: string[] = []
afterAll(() => dirs.forEach(removeDir))

test('an anchor that changes between the reads is read again with its log: the bundle verifies', async () => {
  const server = await startTestServer()
  dirs.push(server.dataDir)
  // Three failed sign-ins of unknown e-mails: three lines in the server's own log.
  await signUp(server.url)
  for (let i = 0; i < 3; i++)
    await fetch(`${server.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: uniqueEmail(), password: 'wrong password 1' }),
    })
  await server.stop()
  const logPath = join(server.dataDir, auditLog.SERVER_AUDIT_LOG)
  const anchorPath = join(server.dataDir, auditLog.SERVER_AUDIT_ANCHOR)
  const lines = auditLog.readAuditLines(logPath).lines
  expect(lines.length).toBe(3)

  let compactions = 0
  beforeLogRead = (path) => {
    if (path !== logPath || compactions > 0) return
    compactions++
    // What compaction does: the checkpoint first, then the file without the dropped line.
    const anchor = JSON.parse(readFileSync(anchorPath, 'utf8')) as ChainAnchor
    const kept = `${lines.slice(1).join('\n')}\n`
    writeFileSync(
      `${anchorPath}.tmp`,
      JSON.stringify({ ...anchor, checkpoint: JSON.parse(lines[0]).hash, lines: anchor.lines! - 1, bytes: Buffer.byteLength(kept) }),
    )
    Bun.spawnSync(['mv', `${anchorPath}.tmp`, anchorPath])
    writeFileSync(logPath, kept)
  }
  const bundle = createBackup(server.dataDir)
  beforeLogRead = null
  expect(compactions).toBe(1)

  const file = (path: string) => Buffer.from(bundle.files.find((f) => f.path === path)!.data, 'base64').toString('utf8')
  const bundledLines = file(auditLog.SERVER_AUDIT_LOG).trimEnd().split('\n')
  const bundledAnchor = JSON.parse(file(auditLog.SERVER_AUDIT_ANCHOR)) as ChainAnchor
  expect(bundledLines).toEqual(lines.slice(1))
  expect(bundledAnchor.checkpoint).toBe(JSON.parse(lines[0]).hash)
  expect(verifyChain(bundledLines, bundledAnchor)).toMatchObject({ ok: true, lines: 2 })
})
