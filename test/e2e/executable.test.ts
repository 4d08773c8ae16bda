// The one-file deployment: `bun run build:server` makes dist/svc-vault, copied into an empty
// folder (no node_modules, no web/, no sources) and started from there. It serves the API, the
// web interface and the brand icons from inside itself.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { copyFileSync, cpSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { hasChromium, openBrowser } from '../support/browser'
import { storedAuditLines, writeDatabaseAuditLines } from '../support/audit-file'
import { signUp } from '../support/client'
import { databaseFor, ON_POSTGRES } from '../support/postgres'
import { checkCompressedAssets } from '../support/compressed-assets'
import { removeDir, ROOT, spawnServer, tempDir, TEST_MASTER_KEY, type SpawnedServer } from '../support/server'

let folder: string
let executable: string
let server: SpawnedServer

beforeAll(async () => {
  const build = Bun.spawnSync(['bun', 'run', 'build:server'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  if (build.exitCode !== 0) throw new Error(`bun run build:server failed: ${build.stderr.toString()}`)
  folder = tempDir('svc-vault-exe-')
  executable = join(folder, 'svc-vault')
  copyFileSync(join(ROOT, 'dist', 'svc-vault'), executable)
  Bun.spawnSync(['chmod', '755', executable])
  // The master key from a file, as systemd credentials and Docker secrets give it.
  writeFileSync(join(folder, 'master-key'), TEST_MASTER_KEY + '\n', { mode: 0o600 })
  server = await spawnServer({
    command: [executable],
    cwd: folder,
    dataDir: join(folder, 'data'),
    env: { SVC_MASTER_KEY: undefined, SVC_MASTER_KEY_FILE: join(folder, 'master-key'), SVC_SIGNUP: 'open', PATH: '/usr/bin:/bin' },
  })
}, 60_000)

afterAll(async () => {
  await server?.stop()
  if (folder) removeDir(folder)
})

describe('the executable (bun run build:server)', () => {
  test('runs from a folder holding nothing but itself and its data', () => {
    expect(readdirSync(folder).sort()).toEqual(['data', 'master-key', 'svc-vault'])
  })

  test('--version prints the release', () => {
    const run = Bun.spawnSync([executable, '--version'], { cwd: folder })
    expect(run.exitCode).toBe(0)
    const { version } = require(join(ROOT, 'package.json'))
    expect(run.stdout.toString().trim()).toBe(`svc-vault ${version}`)
  })

  test('smoke walk: register, create, reveal, export', async () => {
    const alice = await signUp(server.url)
    const category = await alice.post('/api/categories', { name: 'GitHub', keyType: 'simple', envVarName: 'GITHUB_TOKEN', icon: 'github' })
    expect(category.status).toBe(201)
    const entry = await alice.post('/api/entries', { categoryId: category.body.id, name: 'ci', value: 'ghp_from_the_executable', environment: 'production' })
    expect(entry.status).toBe(201)
    expect((await alice.post(`/api/entries/${entry.body.id}/reveal`)).body.value).toBe('ghp_from_the_executable')
    const exported = await alice.get('/api/export')
    expect(exported.status).toBe(200)
    expect(exported.text).toContain('GITHUB_TOKEN=ghp_from_the_executable')
    // The parts loaded on first use are inside too: TOTP, the import parser, the OpenAPI document.
    const token = await alice.post('/api/2fa', { service: 'GitHub', accountName: 'alice', secret: 'JBSWY3DPEHPK3PXP' })
    expect((await alice.post(`/api/2fa/${token.body.id}/reveal`)).body.code).toMatch(/^\d{6}$/)
    expect((await alice.post('/api/ai/import', { text: 'OPENAI_API_KEY=sk-x\n' })).status).toBe(200)
    expect((await (await fetch(server.url + '/api/openapi')).json()).openapi).toBe('3.1.0')
  })

  test('serves brand icons and their list from inside itself', async () => {
    const icon = await fetch(server.url + '/icons/github.svg')
    expect(icon.status).toBe(200)
    expect(await icon.text()).toMatch(/^<svg fill="#[0-9A-F]{6}" /i)
    const slugs = (await (await fetch(server.url + '/icons/slugs.json')).json()) as string[]
    expect(slugs.length).toBeGreaterThan(3000)
    expect(slugs).toContain('stripe')
    expect((await fetch(server.url + '/icons/no-such-brand-x.svg')).status).toBe(404)
  })

  test('serves the web assets precompressed (br, gzip) from inside itself, by Accept-Encoding, with Vary', async () => {
    const sizes = await checkCompressedAssets(server.url)
    expect(sizes.br).toBeLessThan(sizes.gzip)
  })

  test('serves the API reference and its pinned script from inside itself', async () => {
    expect((await fetch(server.url + '/api/docs')).status).toBe(200)
    const script = await fetch(server.url + '/api/docs/scalar.js')
    expect(script.status).toBe(200)
    expect(script.headers.get('content-type')).toContain('javascript')
    // Sent gzipped; fetch inflates it: the whole standalone build, not an error page.
    expect((await script.text()).length).toBeGreaterThan(1_000_000)
  })

  test('carries the operator commands: a backup taken beside the running server restores into a folder another server starts on', async () => {
    const backup = join(folder, 'backup.json')
    const env = { SVC_DATA_DIR: join(folder, 'data'), PATH: '/usr/bin:/bin' }
    const taken = Bun.spawnSync([executable, 'backup', backup], { cwd: folder, env, stdout: 'pipe', stderr: 'pipe' })
    expect({ code: taken.exitCode, err: taken.stderr.toString() }).toEqual({ code: 0, err: '' })
    const restoredDir = join(folder, 'restored')
    const restored = Bun.spawnSync([executable, 'restore', backup, '--data-dir', restoredDir], { cwd: folder, env, stdout: 'pipe', stderr: 'pipe' })
    expect({ code: restored.exitCode, err: restored.stderr.toString() }).toEqual({ code: 0, err: '' })
    const second = await spawnServer({
      command: [executable],
      cwd: folder,
      dataDir: restoredDir,
      env: { SVC_MASTER_KEY: undefined, SVC_MASTER_KEY_FILE: join(folder, 'master-key') },
    })
    try {
      expect(await (await fetch(`${second.url}/readyz`)).json()).toMatchObject({ status: 'ready' })
    } finally {
      await second.stop()
      removeDir(restoredDir)
      removeDir(backup)
    }
  })

  test("carries audit-verify: the data folder's logs checked beside the running server, with the key from its file, and a cut log failed", async () => {
    const bob = await signUp(server.url)
    expect((await bob.post('/api/categories', { name: 'audit', keyType: 'group' })).status).toBe(201)
    const { head } = (await bob.get('/api/audit?limit=1')).body
    // On the database store (the suite's second pass) audit-verify reads the server's database.
    const database = ON_POSTGRES ? await databaseFor(join(folder, 'data')) : undefined
    const env = { PATH: '/usr/bin:/bin', SVC_MASTER_KEY_FILE: join(folder, 'master-key'), ...(database ? { SVC_DATABASE_URL: database } : {}) }
    const ok = Bun.spawnSync([executable, 'audit-verify', '--data-dir', join(folder, 'data'), '--expect-last', head], {
      cwd: folder,
      env,
      stdout: 'pipe',
      stderr: 'pipe',
    })
    expect(ok.stdout.toString()).toContain(`ok   vaults/${bob.user.id}.audit.log: 2 event(s), chain intact (keyed)`)
    expect(ok.exitCode).toBe(0)
    // A cut log: a copy of the folder cut, or on the database the rows cut and put back after.
    const stored = { dataDir: join(folder, 'data') }
    const lines = await storedAuditLines(stored, bob.user.id)
    const copy = tempDir('svc-vault-exe-audit-')
    try {
      if (database) await writeDatabaseAuditLines(database, bob.user.id, [])
      else {
        cpSync(join(folder, 'data'), copy, { recursive: true })
        writeFileSync(join(copy, 'vaults', `${bob.user.id}.audit.log`), '')
      }
      const cut = Bun.spawnSync([executable, 'audit-verify', '--data-dir', copy, '--expect-last', head], { cwd: folder, env, stdout: 'pipe', stderr: 'pipe' })
      expect(cut.exitCode).toBe(1)
      expect(cut.stdout.toString()).toMatch(/FAIL --expect-last .*no log holds this line any more/)
    } finally {
      if (database) await writeDatabaseAuditLines(database, bob.user.id, lines)
      removeDir(copy)
    }
  })

  test('carries migrate and rotate-master-key --rekey (their usage; a running server makes the re-key refuse)', () => {
    const help = Bun.spawnSync([executable, 'migrate', '--help'], { cwd: folder })
    expect(help.exitCode).toBe(0)
    expect(help.stdout.toString()).toContain('svc-vault migrate --to postgres://')
    const noDatabase = Bun.spawnSync([executable, 'migrate', '--to-dir', join(folder, 'nowhere')], {
      cwd: folder,
      env: { SVC_MASTER_KEY_FILE: join(folder, 'master-key') },
    })
    expect(noDatabase.exitCode).toBe(1)
    expect(noDatabase.stderr.toString()).toContain('--to-dir copies the database SVC_DATABASE_URL')
    const rekey = Bun.spawnSync([executable, 'rotate-master-key', '--rekey'], {
      cwd: folder,
      env: { SVC_DATA_DIR: join(folder, 'data'), SVC_MASTER_KEY_FILE: join(folder, 'master-key') },
    })
    expect(rekey.exitCode).toBe(1)
    // The file store: the folder's lock held by the server (on the database pass the folder holds no data).
    expect(rekey.stderr.toString()).toMatch(/is using|no svc-vault data/)
  })

  test('healthcheck answers 0 while the server is ready', () => {
    const port = new URL(server.url).port
    const run = Bun.spawnSync([executable, 'healthcheck'], { cwd: folder, env: { PORT: port } })
    expect(run.exitCode).toBe(0)
  })

  test('the bundle `bun run start` runs (dist/ without the executable) needs no node_modules either', async () => {
    const dir = tempDir('svc-vault-bundle-')
    const bundle = join(dir, 'dist')
    try {
      const build = Bun.spawnSync(['bun', 'scripts/build.ts', `--outdir=${bundle}`], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
      expect(build.exitCode).toBe(0)
      const started = await spawnServer({ command: ['bun', join(bundle, 'index.js')], cwd: dir, dataDir: join(dir, 'data'), env: { SVC_SIGNUP: 'open' } })
      try {
        const user = await signUp(started.url)
        expect((await user.get('/api/stats')).status).toBe(200)
        const page = await (await fetch(started.url + '/')).text()
        const script = /src="(\/assets\/app\.[0-9a-f]+\.js)"/.exec(page)![1]
        expect((await fetch(started.url + script)).status).toBe(200)
        expect(await (await fetch(started.url + '/icons/github.svg')).text()).toStartWith('<svg')
      } finally {
        await started.stop()
      }
    } finally {
      removeDir(dir)
    }
  })

  const browserMissing = !hasChromium()
  test.skipIf(browserMissing && process.env.CI !== 'true')(
    'the page loads in Chromium with no console error',
    async () => {
      if (browserMissing) throw new Error('Chromium is missing (CI=true: nothing skips)')
      const user = await signUp(server.url)
      const browser = await openBrowser(server.url)
      try {
        const response = await browser.page.goto(server.url + '/')
        expect(response!.status()).toBe(200)
        await browser.page.waitForURL(/\/login$/)
        await browser.page.getByLabel('E-mail').waitFor()
        await browser.context.addCookies([{ name: 'svc_session', value: user.credentials.cookie!, url: server.url }])
        await browser.page.goto(server.url + '/')
        await browser.page.getByRole('heading', { level: 1 }).first().waitFor()
        await browser.page.waitForLoadState('networkidle')
        expect(browser.errors).toEqual([])
        expect(browser.cspViolations).toEqual([])
        expect(browser.requests.every((url) => url.startsWith(server.url))).toBe(true)
      } finally {
        await browser.close()
      }
    },
    30_000,
  )
})
