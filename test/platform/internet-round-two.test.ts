// Issue 36 (safe on the internet, round two): one server per port (no reusePort), a malformed Host
// header answered cleanly, SVC_TRUST_PROXY's header choice and its refused all-address ranges, and
// passkeys bound to the origin the server listens on when SVC_BASE_URL is unset.
import { describe, expect, test } from 'bun:test'
import { removeDir, runServerToExit, spawnServer, tempDir, TEST_MASTER_KEY } from '../support/server'

describe('one server per port', () => {
  test('a second server on the same port exits non-zero with one line, and the first keeps serving', async () => {
    const first = await spawnServer()
    const otherData = tempDir()
    try {
      const port = new URL(first.url).port
      const second = await runServerToExit({ SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_DATA_DIR: otherData, PORT: port })
      expect(second.code).not.toBe(0)
      const lines = second.output.trim().split('\n')
      expect(lines).toHaveLength(1)
      expect(lines[0]).toContain(`port ${port}`)
      expect(lines[0]).toContain('in use')
      expect((await fetch(`${first.url}/healthz`)).status).toBe(200)
    } finally {
      await first.stop()
      removeDir(first.dataDir)
      removeDir(otherData)
    }
  })
})
