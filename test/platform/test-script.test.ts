// Issue 32: `bun run test` (scripts/test.sh) as root installs what the tests need without starting
// services (Debian would start Caddy and nginx on port 80), and stops any the install started.
// Run against stand-ins for apt-get, systemctl, id and bun, so nothing is installed here.
// Issue 34: it runs the suites a second time on a throwaway PostgreSQL cluster it starts and
// removes (the real initdb and pg_ctl; bun a stand-in that looks at the cluster).
import { afterAll, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { missingRoot, testNeeding } from '../support/requirements'
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
  // No PostgreSQL here (SVC_POSTGRESQL_LIB: an empty folder): its package is installed too.
  const run = Bun.spawnSync(['/bin/bash', join(ROOT, 'scripts', 'test.sh'), 'test/nothing.test.ts'], {
    env: { PATH: bin, SVC_POLICY_RC_D: policy, HOME: dir, SVC_POSTGRESQL_LIB: join(dir, 'no-postgresql') },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const logged = readFileSync(log, 'utf8')
  expect({ code: run.exitCode, stderr: run.stderr.toString().includes('could not install') }).toEqual({ code: 0, stderr: false })
  expect(logged).toContain('policy answered 101')
  expect(logged).toMatch(/apt-get install -y -qq --no-install-recommends .*chromium/)
  expect(logged).toMatch(/apt-get install .* postgresql( |$)/m)
  // Nothing left running that was not running before, and the policy is gone again.
  expect(existsSync(join(state, 'caddy'))).toBe(false)
  expect(existsSync(join(state, 'nginx'))).toBe(false)
  expect(logged).toContain('stopped nginx')
  expect(existsSync(policy)).toBe(false)
  // Still none (the stand-in installed nothing): the file store's pass alone, saying so.
  expect(logged).toContain('bun test --timeout 60000 test/nothing.test.ts')
  expect(run.stderr.toString()).toContain('the PostgreSQL pass is skipped')
})

// PostgreSQL refuses to run as root; the script runs it as `postgres` then (runuser), which this
// test needs to be able to do too: root, and Debian's package (scripts/test.sh installs it).
const postgresql = ['/usr/lib/postgresql'].find((lib) => existsSync(lib) && readdirSync(lib).some((v) => existsSync(join(lib, v, 'bin', 'initdb'))))
const testWithPostgres = testNeeding(
  missingRoot('starting a PostgreSQL cluster as the postgres user') ?? (postgresql ? null : 'PostgreSQL (package postgresql) is not installed'),
)

/**
 * Runs scripts/test.sh with a stand-in `bun` that records each pass (its SVC_TEST_STORE, the
 * cluster's settings through psql) and exits with `exits[store]`, or sleeps when that is 'sleep'.
 */
async function runScript(
  name: string,
  exits: { file: number | 'sleep'; postgres: number | 'sleep' },
  args: string[] = [],
  extraEnv: Record<string, string> = {},
) {
  const home = join(dir, name)
  const bin = join(home, 'bin')
  mkdirSync(bin, { recursive: true })
  // The cluster's folder goes under TMPDIR: the postgres user must reach it.
  chmodSync(dir, 0o755)
  chmodSync(home, 0o755)
  const log = join(home, 'log')
  const stub = (tool: string, body: string) => {
    writeFileSync(join(bin, tool), `#!/bin/bash\n${body}\n`)
    chmodSync(join(bin, tool), 0o755)
  }
  stub(
    'bun',
    `store=\${SVC_TEST_STORE:-file}
echo "pass $store: $*" >>${log}
if [ "$store" = postgres ]; then
  psql "$SVC_TEST_POSTGRES" -Atc "SELECT 'settings ' || current_setting('fsync') || ' ' || current_setting('listen_addresses') || '|' || current_setting('max_connections')" >>${log} 2>&1
fi
echo "url $store \${SVC_TEST_POSTGRES:-none}\${SVC_TEST_POSTGRES_THROWAWAY:+ (throwaway)}" >>${log}
case $store in file) code=${exits.file} ;; *) code=${exits.postgres} ;; esac
if [ "$code" = sleep ]; then echo "sleeping $store $$" >>${log}; exec sleep 60; fi
# As bun test does: each file's name, an error and the failure as they happen (a failed hook is
# "(unnamed)"), an error between tests, and the failures again in the recap at the end.
if [ "$code" != 0 ]; then
  printf 'test/one.test.ts:\n(pass) another on %s\nerror: expect(received).toBe(expected)\n(fail) a test on %s [1.00ms]\n' $store $store >&2
  printf 'test/two.test.ts:\nerror: a hook failed\n(fail) (unnamed) [2.00ms]\n' >&2
  printf 'test/three.test.ts:\n# Unhandled error between tests\n----\nerror: a stray rejection\n----\n' >&2
  printf '2 tests failed:\n(fail) a test on %s [1.00ms]\n(fail) (unnamed) [2.00ms]\n' $store >&2
fi
exit $code`,
  )
  // Nothing is installed by this test.
  stub('apt-get', 'exit 0')
  const env: Record<string, string> = { PATH: `${bin}:${process.env.PATH}`, HOME: home, TMPDIR: home, ...extraEnv }
  const proc = Bun.spawn(['/bin/bash', join(ROOT, 'scripts', 'test.sh'), ...args], { env, stdout: 'pipe', stderr: 'pipe' })
  if (exits.file === 'sleep' || exits.postgres === 'sleep') {
    for (let i = 0; i < 600 && !(existsSync(log) && readFileSync(log, 'utf8').match(/sleeping/g)?.length === 2); i++) await Bun.sleep(50)
    proc.kill('SIGTERM')
  }
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  const logged = existsSync(log) ? readFileSync(log, 'utf8') : ''
  const url = /url postgres (\S+)/.exec(logged)?.[1] ?? ''
  const cluster = url ? (new URL(url.replace(/^postgres:/, 'http:')).searchParams.get('host') ?? '') : ''
  return { code, out: out + err, stdout: out, logged, cluster, left: readdirSync(home).filter((file) => file.startsWith('svc-vault-')) }
}

testWithPostgres(
  'the second pass runs on a throwaway cluster (socket only, fsync on), beside the file store; the cluster is removed after a pass, a failure, a TERM',
  async () => {
    const [passed, failed, stopped] = await Promise.all([
      runScript('passed', { file: 0, postgres: 0 }),
      runScript('failed', { file: 2, postgres: 3 }, ['--bail', 'test/one.test.ts']),
      runScript('stopped', { file: 'sleep', postgres: 'sleep' }),
    ])
    // Both passes, at once: the file store's over everything, PostgreSQL's over the suites of issue 34.
    expect(passed.code).toBe(0)
    expect(passed.logged).toContain('pass file: test --timeout 60000\n')
    // PostgreSQL's: the files of those suites that start a server (a parser's test does the same on both).
    const onPostgres = /pass postgres: test --timeout 60000 (.*)\n/.exec(passed.logged)![1].split(' ')
    expect(onPostgres).toContain('./test/modules/entries.test.ts')
    expect(onPostgres).toContain('./test/robustness/crash.test.ts')
    expect(onPostgres).toContain('./test/platform/auth.test.ts')
    expect(onPostgres).not.toContain('./test/modules/ai-parse-hostile.test.ts')
    expect(onPostgres.filter((file) => file.startsWith('./test/e2e/') || file.startsWith('./test/store/'))).toEqual([])
    // A cluster of its own on a Unix socket in a temporary folder, no TCP port, fsync on; both passes know its URL.
    expect(passed.logged).toContain('settings on |500')
    expect(passed.cluster).toStartWith(join(dir, 'passed', 'svc-vault-pg.'))
    expect(passed.logged).toContain(`url file ${/url postgres (\S+)/.exec(passed.logged)![1]} (throwaway)`)
    expect(passed.out).toContain('the same suites on PostgreSQL')
    // One pass failing fails the run. Arguments go to both passes instead of their lists.
    expect(failed.code).not.toBe(0)
    expect(failed.out).toMatch(/file store: exit 2 after \d+ s; PostgreSQL: exit 3/)
    // The last lines name the failing tests of both passes (a CI log is often read from its tail).
    // Each with its file and first error line (a failed hook is "(unnamed)"; an error between tests has no "(fail)").
    const named = (store: string) => [
      `failed on the ${store} store:`,
      `  test/one.test.ts: (fail) a test on ${store === 'file' ? 'file' : 'postgres'} [1.00ms]`,
      '    error: expect(received).toBe(expected)',
      '  test/two.test.ts: (fail) (unnamed) [2.00ms]',
      '    error: a hook failed',
      '  test/three.test.ts: an error between tests',
      '    error: a stray rejection',
    ]
    expect(failed.stdout.trimEnd().split('\n').slice(-15)).toEqual([...named('file'), ...named('PostgreSQL'), expect.stringMatching(/^file store: exit 2/)])
    expect(passed.out).not.toContain('failed on')
    expect(failed.logged).toContain('pass file: test --timeout 60000 --bail test/one.test.ts\n')
    expect(failed.logged).toContain('pass postgres: test --timeout 60000 --bail test/one.test.ts\n')
    // Stopped mid-run: its passes end with it.
    expect(stopped.code).toBe(143)
    expect(stopped.logged.match(/sleeping/g)).toHaveLength(2)
    // Each time the cluster is gone: its folder, and its server.
    for (const run of [passed, failed, stopped]) {
      expect(run.left).toEqual([])
      expect(existsSync(run.cluster)).toBe(false)
      expect(Bun.spawnSync(['pgrep', '-f', run.cluster]).exitCode).toBe(1)
    }
    for (const [, pid] of stopped.logged.matchAll(/sleeping \w+ (\d+)/g)) expect(() => process.kill(Number(pid), 0)).toThrow()
  },
  60_000,
)

test('SVC_TEST_STORE=file runs the file store alone, without a cluster', async () => {
  const run = await runScript('file-only', { file: 0, postgres: 0 }, ['test/one.test.ts'], { SVC_TEST_STORE: 'file' })
  expect(run.code).toBe(0)
  expect(run.logged).toBe('pass file: test --timeout 60000 test/one.test.ts\nurl file none\n')
})
