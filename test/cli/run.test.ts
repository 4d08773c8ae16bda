// `svc run` and the read commands, with the built executable against a real server: the child's
// environment, exit codes, standard streams, signals, --mount, --watch, CI mode with SVC_TOKEN,
// and every failure as one line with a non-zero exit.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { signUp, type Client } from '../support/client'
import { startTestServer, tempDir, type TestServer } from '../support/server'
import { buildCli, startSvc, SVC, svc, svcHome } from './support'

let server: TestServer
let owner: Client
let env: Record<string, string>
let openaiEntry: string

// A child that says which signal reached it and exits 40.
const SIGNAL_CHILD = `for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT']) process.on(s, () => { console.log('got ' + s); process.exit(40) }); console.log('ready'); setInterval(() => {}, 1000)`

beforeAll(async () => {
  await buildCli()
  server = await startTestServer()
  owner = await signUp(server.url)
  const simple = await owner.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' })
  const group = await owner.post('/api/categories', { name: 'Postgres', keyType: 'group', fieldDefinitions: ['PGHOST', 'PGPASSWORD'] })
  openaiEntry = (await owner.post('/api/entries', { categoryId: simple.body.id, name: 'blog', value: 'sk-one two $HOME', environment: 'production' })).body.id
  await owner.post('/api/entries', { categoryId: simple.body.id, name: 'shop', value: 'sk-dev', environment: 'development' })
  await owner.post('/api/entries', {
    categoryId: group.body.id,
    name: 'blog',
    value: JSON.stringify({ PGHOST: 'db.local', PGPASSWORD: 'p\'w"d\nx' }),
    environment: 'production',
  })
  const key = await owner.keyClient(['export:read', 'entries:read', 'categories:read', 'envs:read', 'envs:reveal', '2fa:read', '2fa:reveal'])
  // CI mode: SVC_URL and SVC_TOKEN, no stored config at all.
  env = svcHome({ SVC_URL: server.url, SVC_TOKEN: key.credentials.key! }).env
}, 60_000)

afterAll(async () => {
  await server?.stop()
})

describe('svc run', () => {
  test('the child gets the selection in its environment, without a shell, and its exit code passes through', async () => {
    const result = await svc(['run', '-e', 'production', '--', 'bun', '-e', 'console.log(JSON.stringify(process.env)); process.exit(7)'], { env })
    expect(result.code).toBe(7)
    const childEnv = JSON.parse(result.stdout)
    // No shell: "$HOME" in a value stays as it is.
    expect(childEnv.OPENAI_API_KEY).toBe('sk-one two $HOME')
    expect(childEnv.PGHOST).toBe('db.local')
    expect(childEnv.PGPASSWORD).toBe('p\'w"d\nx')
    // The svc credentials are the caller's own environment, passed on like any other variable.
    expect(childEnv.PATH).toBe(process.env.PATH)
    // Arguments reach the command as they are: no word splitting or expansion.
    const literal = await svc(['run', '-n', 'blog', '--', 'echo', '$HOME', 'a  b', '*'], { env })
    expect(literal.stdout).toBe('$HOME a  b *\n')
    expect(literal.code).toBe(0)
  })

  test('CI mode (SVC_URL and SVC_TOKEN): no stored sign-in is needed; nothing is written but the encrypted offline copy (none with --fallback-max-age 0)', async () => {
    const home = svcHome({ SVC_URL: env.SVC_URL, SVC_TOKEN: env.SVC_TOKEN })
    const cwd = tempDir()
    const off = Bun.spawn([SVC, 'run', '-e', 'production', '--fallback-max-age', '0', '--', 'printenv', 'PGHOST'], {
      env: home.env,
      cwd,
      stdout: 'pipe',
      stderr: 'pipe',
    })
    expect(await new Response(off.stdout).text()).toBe('db.local\n')
    expect(await off.exited).toBe(0)
    expect(readdirSync(home.home)).toEqual([])
    expect(readdirSync(cwd)).toEqual([])
    const proc = Bun.spawn([SVC, 'run', '-e', 'production', '--', 'printenv', 'PGHOST'], { env: home.env, cwd, stdout: 'pipe', stderr: 'pipe' })
    expect(await new Response(proc.stdout).text()).toBe('db.local\n')
    expect(await proc.exited).toBe(0)
    expect(readdirSync(home.home)).toEqual(['.cache'])
    expect(readdirSync(join(home.home, '.cache'))).toEqual(['svc-vault'])
    expect(readdirSync(cwd)).toEqual([])
  })

  test('variables already set win, unless --override', async () => {
    const mine = { ...env, OPENAI_API_KEY: 'from-the-shell' }
    expect((await svc(['run', '-e', 'production', '--', 'printenv', 'OPENAI_API_KEY'], { env: mine })).stdout).toBe('from-the-shell\n')
    expect((await svc(['run', '-e', 'production', '--override', '--', 'printenv', 'OPENAI_API_KEY'], { env: mine })).stdout).toBe('sk-one two $HOME\n')
  })

  test('an env project file adds its variables, which win on conflict', async () => {
    const project = await owner.post('/api/envs', { name: 'blog-app' })
    await owner.post(`/api/envs/${project.body.data.id}/files`, { fileType: 'env.production', content: 'OPENAI_API_KEY=from-project\nPORT=8080\n' })
    const result = await svc(
      [
        'run',
        '-e',
        'production',
        '--project',
        'blog-app',
        '--file',
        'env.production',
        '--',
        'bun',
        '-e',
        'console.log(process.env.OPENAI_API_KEY, process.env.PORT, process.env.PGHOST)',
      ],
      { env },
    )
    expect(result.stdout).toBe('from-project 8080 db.local\n')
    const missing = await svc(['run', '-e', 'production', '--project', 'nope', '--', 'true'], { env })
    expect(missing.code).toBe(1)
    expect(missing.stderr).toBe('svc: no env project named nope\n')
  })

  test("systemd's LoadCredential: the key in $CREDENTIALS_DIRECTORY/svc-token serves as SVC_TOKEN", async () => {
    const credentials = tempDir()
    writeFileSync(join(credentials, 'svc-token'), env.SVC_TOKEN + '\n')
    const { SVC_TOKEN: _, ...withoutToken } = env
    const result = await svc(['run', '-n', 'shop', '--', 'printenv', 'OPENAI_API_KEY'], { env: { ...withoutToken, CREDENTIALS_DIRECTORY: credentials } })
    expect(result).toMatchObject({ code: 0, stdout: 'sk-dev\n' })
  })

  test('standard input, output and error pass through', async () => {
    const result = await svc(
      ['run', '-e', 'production', '--', 'bun', '-e', 'const text = await Bun.stdin.text(); console.log(text.toUpperCase()); console.error("to stderr")'],
      { env, stdin: 'piped in' },
    )
    expect(result.stdout).toBe('PIPED IN\n')
    expect(result.stderr).toBe('to stderr\n')
  })

  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const) {
    test(`${signal} to svc reaches the command, and svc exits as the command did`, async () => {
      const running = startSvc(['run', '-e', 'production', '--', 'bun', '-e', SIGNAL_CHILD], { env })
      await running.waitFor((out) => out.stdout.includes('ready'))
      running.proc.kill(signal)
      const result = await running.end()
      expect(result.stdout).toContain(`got ${signal}`)
      expect(result.code).toBe(40)
    })
  }

  test('Ctrl-C at a terminal reaches the command once, not twice', async () => {
    // `script` gives svc a terminal; ^C written to it makes the terminal signal the foreground
    // process group. perl counts every SIGINT delivered (Bun's own handler would merge two).
    const tools = ['script', 'perl'].filter((tool) => Bun.spawnSync(['which', tool]).exitCode !== 0)
    if (tools.length) {
      if (process.env.CI === 'true') throw new Error(`CI=true: this test needs ${tools.join(' and ')}`)
      return
    }
    const perl = `$|=1; $n=0; $SIG{INT}=sub{$n++}; print "ready\\n"; select(undef,undef,undef,0.1) for 1..10; print "SIGINTs: $n\\n"; exit 5`
    const proc = Bun.spawn(['script', '-qefc', `exec ${SVC} run -e production -- perl -e '${perl}'`, '/dev/null'], { env, stdin: 'pipe', stdout: 'pipe' })
    let out = ''
    const reading = (async () => {
      for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) out += new TextDecoder().decode(chunk)
    })()
    for (let i = 0; !out.includes('ready') && i < 500; i++) await Bun.sleep(20)
    proc.stdin.write('\x03')
    proc.stdin.flush()
    expect(await proc.exited).toBe(5)
    await reading
    expect(out).toContain('SIGINTs: 1\r\n')
  })

  test('SIGUSR1 and SIGUSR2 are passed on without ending anything', async () => {
    const child = `for (const s of ['SIGUSR1', 'SIGUSR2']) process.on(s, () => console.log('got ' + s)); process.on('SIGTERM', () => process.exit(0)); console.log('ready'); setInterval(() => {}, 1000)`
    const running = startSvc(['run', '-e', 'production', '--', 'bun', '-e', child], { env })
    await running.waitFor((out) => out.stdout.includes('ready'))
    running.proc.kill('SIGUSR1')
    await running.waitFor((out) => out.stdout.includes('got SIGUSR1'))
    running.proc.kill('SIGUSR2')
    await running.waitFor((out) => out.stdout.includes('got SIGUSR2'))
    running.proc.kill('SIGTERM')
    expect((await running.end()).code).toBe(0)
  })

  test('a command killed by a signal makes svc end by the same signal', async () => {
    const result = await svc(['run', '-e', 'production', '--', 'sh', '-c', 'kill -TERM $$'], { env })
    expect(result.signal).toBe('SIGTERM')
  })

  test('a missing command: exit 127 and one line', async () => {
    const result = await svc(['run', '-e', 'production', '--', 'no-such-command-here'], { env })
    expect(result.code).toBe(127)
    expect(result.stderr).toBe('svc: command not found: no-such-command-here\n')
  })
})

describe('svc run --mount', () => {
  const READ_MOUNT = (path: string) =>
    `const fs = require('fs'); console.log((fs.statSync(${JSON.stringify(path)}).mode & 0o777).toString(8)); console.log(fs.readFileSync(${JSON.stringify(path)}, 'utf8'))`

  test('writes the variables as a dotenv file 0600 while the command runs, and removes it after', async () => {
    const dir = tempDir()
    const path = join(dir, 'secrets.env')
    const result = await svc(['run', '-e', 'production', '--mount', path, '--', 'bun', '-e', READ_MOUNT(path)], { env })
    expect(result.code).toBe(0)
    const [mode, ...content] = result.stdout.split('\n')
    expect(mode).toBe('600')
    const { parse } = await import('dotenv')
    expect(parse(content.join('\n'))).toEqual({ OPENAI_API_KEY: 'sk-one two $HOME', PGHOST: 'db.local', PGPASSWORD: 'p\'w"d\nx' })
    expect(existsSync(path)).toBe(false)
    // Nothing else was left behind (no temporary file).
    expect(readdirSync(dir)).toEqual([])
  })

  test('is removed when svc gets SIGTERM, and after a failing command', async () => {
    const dir = tempDir()
    const path = join(dir, 'secrets.env')
    const running = startSvc(['run', '-e', 'production', '--mount', path, '--', 'bun', '-e', SIGNAL_CHILD], { env })
    await running.waitFor((out) => out.stdout.includes('ready'))
    expect(statSync(path).mode & 0o777).toBe(0o600)
    running.proc.kill('SIGTERM')
    expect((await running.end()).code).toBe(40)
    expect(existsSync(path)).toBe(false)
    const failing = await svc(['run', '-e', 'production', '--mount', path, '--', 'sh', '-c', 'exit 3'], { env })
    expect(failing.code).toBe(3)
    expect(existsSync(path)).toBe(false)
  })

  test('refuses a path that already exists, and runs nothing', async () => {
    const path = join(tempDir(), 'taken.env')
    writeFileSync(path, 'MINE=1\n')
    const result = await svc(['run', '-e', 'production', '--mount', path, '--', 'sh', '-c', 'echo ran'], { env })
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toStartWith('svc: --mount: ')
    expect(Bun.file(path).size).toBe(7)
  })
})

describe('svc run --watch', () => {
  test('restarts the command with the new values after a change made through the API, polling conditionally', async () => {
    // A recording proxy in front of the vault: what svc asks and what it hears.
    const seen: { path: string; ifNoneMatch: string | null; status: number }[] = []
    const proxy = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(request) {
        const url = new URL(request.url)
        const answer = await fetch(server.url + url.pathname + url.search, { method: request.method, headers: request.headers, body: request.body })
        seen.push({ path: url.pathname, ifNoneMatch: request.headers.get('if-none-match'), status: answer.status })
        return new Response(answer.body, { status: answer.status, headers: answer.headers })
      },
    })
    let running: ReturnType<typeof startSvc> | undefined
    try {
      const child = `console.log('value=' + process.env.OPENAI_API_KEY); process.on('SIGTERM', () => { console.log('stopping'); process.exit(0) }); setInterval(() => {}, 1000)`
      running = startSvc(['run', '-e', 'production', '--watch', '--interval', '0.2', '--', 'bun', '-e', child], {
        env: { ...env, SVC_URL: `http://127.0.0.1:${proxy.port}` },
      })
      await running.waitFor((out) => out.stdout.includes('value=sk-one two $HOME'))
      // Several polls with nothing changed: the command keeps running.
      const exports = () => seen.filter((r) => r.path === '/api/export').length
      for (let i = 0; exports() < 4 && i < 500; i++) await Bun.sleep(20)
      expect(running.output.stdout).not.toContain('stopping')
      const etag = (await owner.get('/api/export?format=json&environment=production')).headers.get('etag')
      expect(etag).toBeTruthy()
      const polls = seen.filter((r) => r.path === '/api/export').slice(1)
      expect(polls.length).toBeGreaterThan(1)
      for (const poll of polls) {
        expect(poll.ifNoneMatch).toBe(etag)
        expect(poll.status).toBe(304)
      }
      expect((await owner.put(`/api/entries/${openaiEntry}`, { value: 'sk-rotated' })).status).toBe(200)
      await running.waitFor((out) => out.stdout.includes('value=sk-rotated'))
      expect(running.output.stdout).toContain('stopping')
      expect(running.output.stderr).toContain('restarting')
      running.proc.kill('SIGTERM')
      const result = await running.end()
      expect(result.code).toBe(0)
      expect(result.stdout.match(/value=/g)!.length).toBe(2)
    } finally {
      // A failed expectation must not leave svc and its command running.
      if (running && running.proc.exitCode === null && running.proc.signalCode === null) running.proc.kill('SIGTERM')
      proxy.stop(true)
      await owner.put(`/api/entries/${openaiEntry}`, { value: 'sk-one two $HOME' })
    }
  })

  test('a command that ignores SIGTERM is killed after the grace period on a restart', async () => {
    const dir = tempDir()
    const path = join(dir, 'watch.env')
    const child = `process.on('SIGTERM', () => console.log('ignored')); console.log('pid=' + process.pid + ' value=' + process.env.OPENAI_API_KEY); setInterval(() => {}, 1000)`
    const running = startSvc(['run', '-e', 'production', '--watch', '--interval', '0.2', '--mount', path, '--', 'bun', '-e', child], { env })
    try {
      await running.waitFor((out) => out.stdout.includes('value=sk-one'))
      await owner.put(`/api/entries/${openaiEntry}`, { value: 'sk-second' })
      await running.waitFor((out) => out.stdout.includes('value=sk-second'), 20_000)
      expect(running.output.stdout).toContain('ignored')
      // The mounted file follows the new values.
      expect(await Bun.file(path).text()).toContain('OPENAI_API_KEY=sk-second')
      // Each start was a new process.
      expect(new Set(running.output.stdout.match(/pid=\d+/g)).size).toBe(2)
    } finally {
      // The command ignores SIGTERM: it is ended directly, and svc ends with it.
      for (const [, pid] of running.output.stdout.matchAll(/pid=(\d+)/g)) {
        try {
          process.kill(Number(pid), 'SIGKILL')
        } catch {}
      }
      await running.end()
      await owner.put(`/api/entries/${openaiEntry}`, { value: 'sk-one two $HOME' })
    }
  }, 30_000)
})

describe('read commands', () => {
  test('svc get prints one value; a missing or repeated one is a clear failure', async () => {
    // Not a terminal: the value's exact bytes, no newline added.
    expect(await svc(['get', 'PGHOST'], { env })).toMatchObject({ code: 0, stdout: 'db.local' })
    expect(await svc(['get', 'OPENAI_API_KEY', '-e', 'development'], { env })).toMatchObject({ code: 0, stdout: 'sk-dev' })
    const missing = await svc(['get', 'NOPE'], { env })
    expect(missing).toMatchObject({ code: 1, stdout: '' })
    expect(missing.stderr).toBe('svc: nothing matched: NOPE is not in the whole vault\n')
    // OPENAI_API_KEY is in two entries (production and development).
    const several = await svc(['get', 'OPENAI_API_KEY'], { env })
    expect(several.code).toBe(1)
    expect(several.stderr).toContain('several values')
    expect(several.stderr.split('\n').length).toBe(2)
  })

  test('svc export prints or writes a 0600 file; json is name to value', async () => {
    const text = await svc(['export', '-e', 'production'], { env })
    expect(text.stdout).toContain('# OpenAI — blog (production)\nOPENAI_API_KEY=')
    const json = await svc(['export', '-n', 'shop', '--format', 'json'], { env })
    expect(JSON.parse(json.stdout)).toEqual({ OPENAI_API_KEY: 'sk-dev' })
    const path = join(tempDir(), 'out.env')
    const written = await svc(['export', '-e', 'production', '-o', path], { env })
    expect(written).toMatchObject({ code: 0, stdout: '' })
    expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(await Bun.file(path).text()).toBe(text.stdout)
    const shell = await svc(['export', '-e', 'production', '--format', 'shell'], { env })
    expect(shell.code).toBe(0)
    const sourced = Bun.spawnSync(['sh', '-c', `${shell.stdout}\nprintf %s "$PGPASSWORD"`], { env: { PATH: process.env.PATH! } })
    expect(sourced.stdout.toString()).toBe('p\'w"d\nx')
    const bad = await svc(['export', '--format', 'toml'], { env })
    expect(bad.code).toBe(2)
  })

  test('svc ls lists categories and entries, never values', async () => {
    const result = await svc(['ls'], { env })
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('OpenAI  [simple OPENAI_API_KEY]\n  blog (production)\n  shop (development)\n')
    expect(result.stdout).toContain('Postgres  [group]')
    expect(result.stdout).not.toContain('sk-')
    expect(result.stdout).not.toContain('db.local')
  })

  test('svc totp prints the current code and seconds left, matching service or account', async () => {
    await owner.post('/api/2fa', { service: 'GitHub', accountName: 'octo@example.test', secret: 'JBSWY3DPEHPK3PXPJBSWY3DP' })
    await owner.post('/api/2fa', { service: 'Fastmail', accountName: 'me@example.test', secret: 'JBSWY3DPEHPK3PXPJBSWY3DQ' })
    const result = await svc(['totp', 'octo'], { env })
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^\d{6} +\d{1,2}s left {2}GitHub \(octo@example\.test\)\n$/)
    const oath = Bun.spawnSync(['oathtool', '--totp', '-b', 'JBSWY3DPEHPK3PXPJBSWY3DP']).stdout.toString().trim()
    const code = result.stdout.slice(0, 6)
    // The code of this 30-second step (or the previous one, should the step have just changed).
    const previous = Bun.spawnSync(['oathtool', '--totp', '-b', '-N', new Date(Date.now() - 30_000).toISOString(), 'JBSWY3DPEHPK3PXPJBSWY3DP'])
      .stdout.toString()
      .trim()
    expect([oath, previous]).toContain(code)
    expect((await svc(['totp'], { env })).stdout.split('\n').length).toBe(3)
    const none = await svc(['totp', 'nothing-like-this'], { env })
    expect(none).toMatchObject({ code: 1, stderr: 'svc: nothing matched: no two-factor token for nothing-like-this\n' })
  })

  test('svc import shows the suggested categories (names only) and --apply stores them', async () => {
    const file = join(tempDir(), 'app.env')
    writeFileSync(file, 'STRIPE_SECRET_KEY=sk_live_x\nSTRIPE_PUBLISHABLE_KEY=pk_live_y\n')
    const noScope = await svc(['import', file], { env })
    expect(noScope.code).toBe(1)
    expect(noScope.stderr).toBe('svc: the access key lacks the scope ai:extract: sign in again with svc login --scopes, or use a key that has it\n')
    const importer = await owner.keyClient(['ai:extract', 'categories:write', 'entries:write', 'export:read'])
    const importEnv = { ...env, SVC_TOKEN: importer.credentials.key! }
    const shown = await svc(['import', file], { env: importEnv })
    expect(shown.code).toBe(0)
    expect(shown.stdout).toContain('STRIPE_SECRET_KEY')
    expect(shown.stdout).not.toContain('sk_live_x')
    expect(shown.stderr).toContain('Nothing stored')
    const applied = await svc(['import', file, '--apply', '--name', 'shop', '-e', 'production'], { env: importEnv })
    expect(applied.code).toBe(0)
    expect(applied.stderr).toContain('Stored:')
    expect((await svc(['get', 'STRIPE_SECRET_KEY', '-n', 'shop', '-e', 'production'], { env: importEnv })).stdout).toBe('sk_live_x')
  })
})

describe('failures: one line on standard error, a non-zero exit', () => {
  test('an unreachable vault', async () => {
    const result = await svc(['run', '-e', 'production', '--', 'echo', 'ran'], { env: { ...env, SVC_URL: 'http://127.0.0.1:9' } })
    expect(result).toMatchObject({ code: 1, stdout: '', stderr: 'svc: cannot reach the vault at http://127.0.0.1:9: connection refused\n' })
  })

  test('401 suggests svc login; 403 names the missing scope', async () => {
    const revoked = await svc(['ls'], { env: { ...env, SVC_TOKEN: 'svc_not-a-real-key-000000000000000000000000' } })
    expect(revoked.code).toBe(1)
    expect(revoked.stderr).toBe('svc: the vault refused the key in SVC_TOKEN (AUTH_INVALID_KEY: unknown, revoked or expired): run svc login\n')
    const narrow = await owner.keyClient(['entries:read'])
    const forbidden = await svc(['run', '-e', 'production', '--', 'echo', 'ran'], { env: { ...env, SVC_TOKEN: narrow.credentials.key! } })
    expect(forbidden).toMatchObject({ code: 1, stdout: '' })
    expect(forbidden.stderr).toBe('svc: the access key lacks the scope export:read: sign in again with svc login --scopes, or use a key that has it\n')
  })

  test('a variable that two entries write: the command does not run, and the line says how to choose', async () => {
    const result = await svc(['run', '--', 'echo', 'ran'], { env })
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toStartWith('svc: OPENAI_API_KEY is written by 2 entries')
    expect(result.stderr).toEndWith('(AMBIGUOUS_EXPORT)\n')
    expect(result.stderr.split('\n').length).toBe(2)
  })

  test('nothing matched', async () => {
    const result = await svc(['run', '-n', 'no-such-entry', '--', 'echo', 'ran'], { env })
    expect(result).toMatchObject({ code: 1, stdout: '', stderr: 'svc: nothing matched: the export of entry no-such-entry holds no variable\n' })
  })

  test('not signed in, unknown commands and options', async () => {
    const bare = svcHome().env
    expect(await svc(['ls'], { env: bare })).toMatchObject({ code: 1, stderr: 'svc: not signed in: run svc login URL (or set SVC_URL and SVC_TOKEN)\n' })
    expect(await svc(['frobnicate'], { env: bare })).toMatchObject({ code: 2, stderr: 'svc: unknown command frobnicate (see svc help)\n' })
    expect(await svc(['run', '--bogus', '--', 'true'], { env })).toMatchObject({ code: 2, stderr: 'svc: unknown option --bogus (see svc help)\n' })
    expect(await svc(['run'], { env })).toMatchObject({ code: 2 })
  })
})
