// The audit log writer (src/store/audit-log.ts): concurrent appends share writes and syncs, keep
// their order and the hash chain; when writes fail in the middle of a stream of appends, exactly
// the events whose promise resolved are in the file, and the chain goes on from them.
import { afterAll, expect, test } from 'bun:test'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { sealLine, verifyChain } from '../../src/modules/audit/chain'
import { AuditLogFile, readAuditLines } from '../../src/store/audit-log'
import { removeDir, tempDir } from '../support/server'

const dir = tempDir('svc-vault-audit-writer-')
afterAll(() => {
  spawnSync('chattr', ['-i', join(dir, 'b.log')])
  removeDir(dir)
})
const START = 'a'.repeat(64)

test('concurrent appends: every one durable once resolved, in order, one intact chain', async () => {
  const path = join(dir, 'a.log')
  const log = AuditLogFile.open<{ n: number }>(path, START, sealLine)
  await Promise.all(Array.from({ length: 500 }, (_, n) => log.append({ n })))
  const { lines } = readAuditLines(path)
  expect(lines.map((line) => JSON.parse(line).n)).toEqual(Array.from({ length: 500 }, (_, n) => n))
  expect(verifyChain(lines, { start: START, checkpoint: null })).toMatchObject({ ok: true, lines: 500 })
  await log.close()
  // Reopened from its last line, it goes on with the chain.
  const again = AuditLogFile.open<{ n: number }>(path, JSON.parse(lines.at(-1)!).hash, sealLine)
  await again.append({ n: 500 })
  await again.close()
  expect(verifyChain(readAuditLines(path).lines, { start: START, checkpoint: null })).toMatchObject({ ok: true, lines: 501 })
})

test.skipIf(process.getuid?.() !== 0)('a write failure mid-stream: resolved events are in the file, rejected ones are not, the chain holds', async () => {
  const path = join(dir, 'b.log')
  const log = AuditLogFile.open<{ n: number }>(path, START, sealLine)
  await log.append({ n: -1 })
  const outcomes: Promise<boolean>[] = []
  let n = 0
  for (let round = 0; round < 30; round++) {
    for (let i = 0; i < 20; i++) outcomes.push(log.append({ n: n++ }).then(() => true, () => false))
    // The file refuses writes for a while, in the middle of the stream.
    if (round === 10) spawnSync('chattr', ['+i', path])
    if (round === 20) spawnSync('chattr', ['-i', path])
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
  const results = await Promise.all(outcomes)
  await log.close()
  expect(results.filter((ok) => !ok).length).toBeGreaterThan(0)
  expect(results.filter((ok) => ok).length).toBeGreaterThan(0)
  const { lines } = readAuditLines(path)
  const written = lines.map((line) => JSON.parse(line).n)
  expect(written).toEqual([-1, ...results.flatMap((ok, index) => (ok ? [index] : []))])
  expect(verifyChain(lines, { start: START, checkpoint: null })).toMatchObject({ ok: true })
})
