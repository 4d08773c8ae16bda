// Issue 35: a HOTP counter is advanced durably before its code is shown. kill -9 the real server
// while reveals run concurrently, restart it on the same data folder: the counter is past every
// code that was shown, so no code is ever shown twice, across several crashes. An import
// acknowledged before the crashes is there whole after each.
import { afterAll, expect } from 'bun:test'
import { signUp } from '../support/client'
import { removeDir, spawnServer, tempDir, type SpawnedServer } from '../support/server'
import { missingCommand, testNeeding } from '../support/requirements'

const dataDir = tempDir('svc-vault-hotp-crash-')
let server: SpawnedServer | undefined
afterAll(async () => {
  await server?.kill()
  removeDir(dataDir)
})

const SECRET = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ'

function oathtool(counter: number): string {
  const run = Bun.spawnSync(['oathtool', '--hotp', `--counter=${counter}`, '-b', SECRET])
  if (run.exitCode !== 0) throw new Error(`oathtool failed: ${run.stderr.toString()}`)
  return run.stdout.toString().trim()
}

testNeeding(missingCommand('oathtool'))(
  'HOTP counters survive kill -9 in the middle of concurrent reveals; no code is shown twice',
  async () => {
    server = await spawnServer({ dataDir })
    const alice = await signUp(server.url)
    const created = await alice.post('/api/2fa', { service: 'VPN', accountName: 'me', secret: `otpauth://hotp/VPN:me?secret=${SECRET}&counter=0` })
    expect(created.status).toBe(201)
    const shown = new Map<number, string>()
    // An applied import (issue 35) is acknowledged once all of its tokens are on disk.
    const links = Array.from({ length: 25 }, (_, i) => `otpauth://totp/Imported:user${i}?secret=${SECRET}&issuer=Imported`).join('\n')
    const imported = await alice.post('/api/2fa/import', { content: links, apply: true })
    expect(imported.body.created.length).toBe(25)

    for (const killAfter of [3, 40, 15 + Math.floor(Math.random() * 40)]) {
      ;(alice as { base: string }).base = server.url
      const before = shown.size
      let stop = false
      // Four clients revealing at once until the kill.
      const lanes = Array.from({ length: 4 }, async () => {
        while (!stop) {
          const answer = await alice.post(`/api/2fa/${created.body.id}/reveal`).catch(() => null)
          if (!answer) return
          expect(answer.status).toBe(200)
          // Never a counter (so a code) shown before, before or after a crash.
          expect(shown.has(answer.body.counter)).toBe(false)
          shown.set(answer.body.counter, answer.body.code)
        }
      })
      while (shown.size - before < killAfter) await Bun.sleep(1)
      await server.kill()
      stop = true
      await Promise.all(lanes)

      server = await spawnServer({ dataDir })
      ;(alice as { base: string }).base = server.url
      const stored = await alice.get(`/api/2fa/${created.body.id}`)
      expect(stored.body.counter).toBeGreaterThan(Math.max(...shown.keys()))
      expect((await alice.get('/api/2fa')).body.filter((t: { service: string }) => t.service === 'Imported').length).toBe(25)
    }
    // Every code shown was that counter's, as oathtool computes it.
    for (const [counter, code] of shown) expect(code).toBe(oathtool(counter))
    await server.stop()
  },
  60_000,
)
