// Issue 32: `bun run test` (scripts/test.sh) as root installs what the tests need without starting
// services (Debian would start Caddy and nginx on port 80), and stops any the install started.
// Run against stand-ins for apt-get, systemctl, id and bun, so nothing is installed here.
import { afterAll, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, tempDir } from '../support/server'

const dir = tempDir('svc-vault-test-sh-')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('installs with a policy-rc.d that refuses starts, stops what started anyway, removes the policy, then runs the tests', () => {
  const bin = join(dir, 'bin')
  const state = join(dir, 'state')
  const log = join(dir, 'log')
  const policy = join(dir, 'policy-rc.d')
  mkdirSync(bin)
  mkdirSync(state)
  for (const tool of ['dirname', 'chmod', 'rm', 'grep', 'cat', 'touch']) {
    const found = ['/usr/bin', '/bin'].map((d) => join(d, tool)).find(existsSync)
    if (found) symlinkSync(found, join(bin, tool))
  }
  const stub = (name: string, body: string) => {
    writeFileSync(join(bin, name), `#!/bin/bash\n${body}\n`)
    chmodSync(join(bin, name), 0o755)
  }
  stub('id', 'echo 0')
  stub('pgrep', 'exit 1')
  stub('bun', `echo "bun $*" >>${log}`)
  // A package's start script asks the policy first; nginx here starts even so (as a broken one might).
  stub(
    'apt-get',
    `[ "$1" = update ] && exit 0
"${policy}" caddy start; echo "policy answered $?" >>${log}
[ -x "${policy}" ] && "${policy}" caddy start || touch ${state}/caddy
touch ${state}/nginx
echo "apt-get $*" >>${log}`,
  )
  stub(
    'systemctl',
    `case "$1" in
  is-active) [ -e "${state}/$3" ] ;;
  stop) rm -f "${state}/$2"; echo "stopped $2" >>${log} ;;
  disable) echo "disabled $2" >>${log} ;;
esac`,
  )
  const run = Bun.spawnSync(['/bin/bash', join(ROOT, 'scripts', 'test.sh'), 'test/nothing.test.ts'], {
    env: { PATH: bin, SVC_POLICY_RC_D: policy, HOME: dir },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const logged = readFileSync(log, 'utf8')
  expect({ code: run.exitCode, stderr: run.stderr.toString().includes('could not install') }).toEqual({ code: 0, stderr: false })
  expect(logged).toContain('policy answered 101')
  expect(logged).toMatch(/apt-get install -y -qq --no-install-recommends .*chromium/)
  // Nothing left running that was not running before, and the policy is gone again.
  expect(existsSync(join(state, 'caddy'))).toBe(false)
  expect(existsSync(join(state, 'nginx'))).toBe(false)
  expect(logged).toContain('stopped nginx')
  expect(existsSync(policy)).toBe(false)
  expect(logged).toContain('bun test --timeout 60000 test/nothing.test.ts')
})
