// Recorded before the secret leaves (issue 17), seen from the system calls: under strace, the
// reveal's audit line is written and fdatasync'ed before the answer holding the value is sent.
// The file store's system calls: on the file store in both passes of the suite (on PostgreSQL the
// line is in the transaction that commits before the answer: test/audit/two-instances.test.ts).
import { expect, test } from 'bun:test'
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { signUp } from '../support/client'
import { removeDir, spawnServer, tempDir } from '../support/server'

const hasStrace = spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0

test.skipIf(!hasStrace)(
  'the audit line is on disk (write, then fdatasync) before the revealed value is sent',
  async () => {
    const server = await spawnServer({ store: 'file' })
    const traceDir = tempDir('svc-vault-strace-')
    try {
      const owner = await signUp(server.url)
      const category = (await owner.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })).body
      const secret = `sk_live_strace_${crypto.randomUUID().replace(/-/g, '')}`
      const entry = (await owner.post('/api/entries', { categoryId: category.id, name: 'shop', value: secret })).body

      const tracePath = join(traceDir, 'trace.txt')
      const strace = Bun.spawn(
        [
          'strace',
          '-f',
          '-qq',
          '-s',
          '65536',
          '-e',
          'trace=pwrite64,pwritev,pwritev2,write,writev,fdatasync,fsync,sendto,sendmsg',
          '-o',
          tracePath,
          '-p',
          String(server.proc.pid),
        ],
        { stdout: 'ignore', stderr: 'pipe' },
      )
      // Attached once the traced process's activity shows (a request it answers).
      for (let i = 0; i < 100; i++) {
        await owner.get('/api/auth/me')
        const soFar = existsSync(tracePath) ? readFileSync(tracePath, 'utf8') : ''
        if (soFar.includes('sendto') || soFar.includes('write')) break
        await Bun.sleep(50)
      }
      const revealed = await owner.post(`/api/entries/${entry.id}/reveal`)
      expect(revealed.status).toBe(200)
      expect(revealed.body.value).toBe(secret)
      await Bun.sleep(100)
      strace.kill('SIGINT')
      await strace.exited

      const lines = readFileSync(tracePath, 'utf8').split('\n')
      // The audit line: a write whose buffer holds the reveal's event.
      const written = lines.findIndex((line) => /pwrite|write/.test(line) && line.includes('\\"action\\":\\"entry.reveal\\"'))
      expect(written).toBeGreaterThanOrEqual(0)
      const fd = /^\d+\s+\w+\((\d+),/.exec(lines[written])![1]
      // Its sync: the first fdatasync of that descriptor after it, to its completion.
      const syncStart = lines.findIndex((line, index) => index > written && new RegExp(`fdatasync\\(${fd}[,)]`).test(line))
      expect(syncStart).toBeGreaterThan(written)
      const pid = lines[syncStart].split(/\s+/)[0]
      const syncDone = lines.findIndex((line, index) => index >= syncStart && line.startsWith(pid) && /fdatasync/.test(line) && /= 0$/.test(line.trim()))
      expect(syncDone).toBeGreaterThanOrEqual(syncStart)
      // The answer: the first system call whose buffer holds the value.
      const sent = lines.findIndex((line) => line.includes(secret))
      expect(sent).toBeGreaterThan(syncDone)
      // And the event never holds the value.
      expect(lines[written]).not.toContain(secret)
    } finally {
      await server.stop()
      removeDir(server.dataDir)
      removeDir(traceDir)
    }
  },
  30_000,
)
