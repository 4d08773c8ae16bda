// Issue 36, item 10: what a vault variable or name can do to the machine `svc` runs on. Loader and
// interpreter hooks (NODE_OPTIONS, LD_PRELOAD, …) are refused unless --allow-env names them,
// checked against real programs (node, bash, python3, perl); svc's own key stays out of the
// command's environment unless --pass-token; names with terminal escapes are shown escaped.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { signUp, type Client } from '../support/client'
import { startTestServer, tempDir, type TestServer } from '../support/server'
import { buildCli, startSvc, SVC, svc, svcHome } from './support'

let server: TestServer
let owner: Client
let category: string

beforeAll(async () => {
  await buildCli()
  server = await startTestServer()
  owner = await signUp(server.url)
  category = (
    await owner.post('/api/categories', {
      name: 'Hooks',
      keyType: 'group',
      fieldDefinitions: ['NODE_OPTIONS', 'LD_PRELOAD', 'BASH_ENV', 'PYTHONSTARTUP', 'PERL5OPT', 'DYLD_INSERT_LIBRARIES', 'APP_PORT'],
    })
  ).body.id
}, 60_000)

afterAll(async () => {
  await server?.stop()
})

/** A key for a fresh entry `name` holding these fields, and the environment to run svc with. */
async function vaultWith(name: string, fields: Record<string, string>) {
  expect((await owner.post('/api/entries', { categoryId: category, name, value: JSON.stringify(fields) })).status).toBe(201)
  const key = await owner.keyClient(['export:read'])
  return svcHome({ SVC_URL: server.url, SVC_TOKEN: key.credentials.key! }).env
}

describe('svc run: loader and interpreter hooks from the vault', () => {
  test('NODE_OPTIONS=--import=data:… does not run code in a Node child; --allow-env NODE_OPTIONS lets it through', async () => {
    const marker = join(tempDir(), 'pwned')
    // NODE_OPTIONS splits on spaces and takes double quotes as its own: single quotes only.
    const payload = `--import=data:text/javascript,import('node:fs').then(f=>f.writeFileSync('${marker}','x'))`
    const env = await vaultWith('node-hook', { NODE_OPTIONS: payload, APP_PORT: '8080' })
    const refused = await svc(['run', '-n', 'node-hook', '--', 'node', '-e', 'console.log(process.env.APP_PORT)'], { env })
    expect(refused.code).toBe(1)
    expect(refused.stdout).toBe('')
    expect(refused.stderr).toBe(
      'svc: the vault sets NODE_OPTIONS, which makes programs load or run other code: refused (if you trust it, add --allow-env NODE_OPTIONS)\n',
    )
    expect(existsSync(marker)).toBe(false)
    // The same value, allowed by name: it really runs code (so the refusal above is what stopped it).
    const allowed = await svc(
      ['run', '-n', 'node-hook', '--allow-env', 'NODE_OPTIONS', '--', 'node', '-e', 'setTimeout(() => console.log(process.env.APP_PORT), 200)'],
      { env },
    )
    expect(allowed).toMatchObject({ code: 0, stdout: '8080\n' })
    expect(existsSync(marker)).toBe(true)
  })

  test('LD_PRELOAD, BASH_ENV, PYTHONSTARTUP, PERL5OPT and DYLD_*: all named, nothing runs; each --allow-env lets one through', async () => {
    const dir = tempDir()
    const marker = (tool: string) => join(dir, tool)
    const bashEnv = join(dir, 'bash-env.sh')
    writeFileSync(bashEnv, `touch ${marker('bash')}\n`)
    const startup = join(dir, 'startup.py')
    writeFileSync(startup, `open(${JSON.stringify(marker('python'))}, 'w').close()\n`)
    const env = await vaultWith('many-hooks', {
      LD_PRELOAD: '/nonexistent/evil.so',
      BASH_ENV: bashEnv,
      PYTHONSTARTUP: startup,
      PERL5OPT: '-Mstrict',
      DYLD_INSERT_LIBRARIES: '/nonexistent/evil.dylib',
      APP_PORT: '1',
    })
    const refused = await svc(['run', '-n', 'many-hooks', '--', 'bash', '-c', `touch ${marker('ran')}`], { env })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain(
      'the vault sets BASH_ENV, DYLD_INSERT_LIBRARIES, LD_PRELOAD, PERL5OPT, PYTHONSTARTUP, which make programs load or run other code',
    )
    expect(refused.stderr).toContain('--allow-env BASH_ENV --allow-env DYLD_INSERT_LIBRARIES')
    expect(existsSync(marker('ran'))).toBe(false)
    // One still refused is enough to refuse.
    const most = ['--allow-env', 'BASH_ENV', '--allow-env', 'LD_PRELOAD', '--allow-env', 'PERL5OPT', '--allow-env', 'DYLD_INSERT_LIBRARIES']
    const one = await svc(['run', '-n', 'many-hooks', ...most, '--', 'bash', '-c', `touch ${marker('ran')}`], { env })
    expect(one.code).toBe(1)
    expect(one.stderr).toContain('the vault sets PYTHONSTARTUP, which makes')
    expect(existsSync(marker('ran'))).toBe(false)
    // All allowed: the real programs obey them (the hooks are real ones).
    const all = [...most, '--allow-env', 'PYTHONSTARTUP']
    const bash = await svc(['run', '-n', 'many-hooks', ...all, '--', 'bash', '-c', 'true'], { env })
    expect(bash.code).toBe(0)
    expect(existsSync(marker('bash'))).toBe(true)
    expect((await svc(['run', '-n', 'many-hooks', ...all, '--', 'python3', '-i'], { env })).code).toBe(0)
    expect(existsSync(marker('python'))).toBe(true)
  })

  test('a hook that appears in the vault under --watch is refused: the command keeps its values and is not restarted', async () => {
    const env = await vaultWith('watched', { APP_PORT: '1' })
    const entry = ((await owner.get('/api/entries')).body as { id: string; name: string }[]).find((e) => e.name === 'watched')!
    const running = startSvc(
      [
        'run',
        '-n',
        'watched',
        '--watch',
        '--interval',
        '200ms',
        '--',
        'bun',
        '-e',
        'console.log("started " + process.env.APP_PORT + " " + process.env.NODE_OPTIONS); setInterval(() => {}, 1000); process.on("SIGTERM", () => process.exit(0))',
      ],
      { env },
    )
    await running.waitFor((out) => out.stdout.includes('started 1 undefined'))
    expect((await owner.put(`/api/entries/${entry.id}`, { value: JSON.stringify({ APP_PORT: '2', NODE_OPTIONS: '--require=/tmp/x.js' }) })).status).toBe(200)
    await running.waitFor((out) => out.stderr.includes('svc: watch: the vault sets NODE_OPTIONS'))
    expect(running.output.stderr).toContain('; the command keeps its current values\n')
    expect(running.output.stdout).toBe('started 1 undefined\n')
    running.proc.kill('SIGTERM')
    await running.end()
    // Said once, not on every poll.
    expect(running.output.stderr.split('svc: watch:').length).toBe(2)
  }, 30_000)

  test('--allow-env is a usage error without a name', async () => {
    const env = await vaultWith('usage', { APP_PORT: '1' })
    expect((await svc(['run', '-n', 'usage', '--allow-env'], { env })).code).toBe(2)
  })
})

describe('svc run: SVC_TOKEN stays with svc', () => {
  test('the command does not get SVC_TOKEN unless --pass-token', async () => {
    const env = await vaultWith('token', { APP_PORT: '3000' })
    const without = await svc(
      ['run', '-n', 'token', '--', 'node', '-e', 'console.log(JSON.stringify([process.env.SVC_TOKEN ?? null, process.env.SVC_URL, process.env.APP_PORT]))'],
      { env },
    )
    expect(without.code).toBe(0)
    expect(JSON.parse(without.stdout)).toEqual([null, server.url, '3000'])
    const withToken = await svc(['run', '-n', 'token', '--pass-token', '--', 'printenv', 'SVC_TOKEN'], { env })
    expect(withToken).toMatchObject({ code: 0, stdout: `${env.SVC_TOKEN}\n` })
  })
})

describe('terminal escapes in names are shown escaped', () => {
  // OSC 52 writes the clipboard; CSI 2J clears the screen; U+202E reverses what follows.
  const OSC52 = '\x1b]52;c;ZWNobyBwd25lZA==\x07'
  const hostile = `Evil${OSC52}\x1b[2J\u202e`

  test('svc ls, svc totp, svc import and errors print \\x1b, never the escape itself', async () => {
    const user = await signUp(server.url)
    const c = await user.post('/api/categories', { name: hostile, keyType: 'simple', envVarName: 'STRIPE_SECRET_KEY' })
    expect(c.status).toBe(201)
    expect((await user.post('/api/entries', { categoryId: c.body.id, name: `shop${OSC52}`, value: 'v' })).status).toBe(201)
    expect((await user.post('/api/2fa', { service: hostile, accountName: `me${OSC52}`, secret: 'JBSWY3DPEHPK3PXPJBSWY3DP' })).status).toBe(201)
    const key = await user.keyClient(['categories:read', 'entries:read', '2fa:read', '2fa:reveal', 'ai:extract', 'export:read'])
    const env = svcHome({ SVC_URL: server.url, SVC_TOKEN: key.credentials.key! }).env
    const shownEscaped = 'Evil\\x1b]52;c;ZWNobyBwd25lZA==\\x07\\x1b[2J\\u202e'

    const ls = await svc(['ls'], { env })
    expect(ls.code).toBe(0)
    expect(ls.stdout).toContain(`${shownEscaped}  [simple STRIPE_SECRET_KEY]\n  shop\\x1b]52;c;ZWNobyBwd25lZA==\\x07\n`)
    const totp = await svc(['totp'], { env })
    expect(totp.code).toBe(0)
    expect(totp.stdout).toContain(`${shownEscaped} (me\\x1b]52;c;ZWNobyBwd25lZA==\\x07)\n`)
    const file = join(tempDir(), 'app.env')
    writeFileSync(file, 'STRIPE_SECRET_KEY=sk_live_x\n')
    const imported = await svc(['import', file], { env })
    expect(imported.code).toBe(0)
    for (const result of [ls, totp, imported]) {
      expect(result.stdout + result.stderr).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f\u202e]/)
    }
    // svc get: the exact value when piped, escaped on a terminal (`script` gives it one).
    const valueKey = await user.keyClient(['export:read'])
    const getEnv = { ...env, SVC_TOKEN: valueKey.credentials.key! }
    const piped = await svc(['get', 'STRIPE_SECRET_KEY'], { env: { ...getEnv } })
    expect(piped.stdout).toBe('v')
    const entryId = ((await user.get('/api/entries')).body as { id: string }[])[0].id
    expect((await user.put(`/api/entries/${entryId}`, { value: `v${OSC52}` })).status).toBe(200)
    expect(await svc(['get', 'STRIPE_SECRET_KEY'], { env: getEnv })).toMatchObject({ stdout: `v${OSC52}`, stderr: '' })
    if (Bun.spawnSync(['which', 'script']).exitCode === 0) {
      // Asynchronous: the vault answers from this process.
      const tty = Bun.spawn(['script', '-qefc', `${SVC} get STRIPE_SECRET_KEY`, '/dev/null'], { env: getEnv, stdin: 'pipe', stdout: 'pipe' })
      const shown = await new Response(tty.stdout).text()
      expect(await tty.exited).toBe(0)
      expect(shown).toBe('v\\x1b]52;c;ZWNobyBwd25lZA==\\x07\r\n')
    } else if (process.env.CI === 'true') throw new Error('CI=true: this test needs script')
    // An error that repeats a name from the command line or the vault.
    const failed = await svc(['run', '--project', `x${OSC52}`, '--', 'true'], {
      env: { ...env, SVC_TOKEN: (await user.keyClient(['export:read', 'envs:read', 'envs:reveal'])).credentials.key! },
    })
    expect(failed).toMatchObject({ code: 1, stderr: 'svc: no env project named x\\x1b]52;c;ZWNobyBwd25lZA==\\x07\n' })
  })
})
