// svc and shared vaults (issue 33): --vault NAME on run and export, a key bound to a vault used
// without --vault, an unknown name, and `svc login --vault` approved in Chromium (the page names
// the vault; the key it pays out is bound to it).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { hasChromium, openBrowser } from '../support/browser'
import { Client, signUp } from '../support/client'
import { startTestServer, type TestServer } from '../support/server'
import { addMember, createVault, type Member } from '../vaults/support'
import { buildCli, startSvc, svc, svcHome } from './support'

const READ = ['export:read', 'entries:read', 'categories:read', 'envs:read', 'envs:reveal']
const PRINT_ENV = ['bun', '-e', 'console.log(JSON.stringify({ a: process.env.API_KEY ?? null }))']

let server: TestServer
let admin: Member
let viewer: Member
let vaultId: string

beforeAll(async () => {
  await buildCli()
  server = await startTestServer({ baseHost: '127.0.0.1' })
  admin = (await signUp(server.url)) as Member
  viewer = (await signUp(server.url)) as Member
  vaultId = await createVault(admin, 'team')
  await addMember(server, vaultId, viewer, 'viewer', admin)
  // The same variable in the viewer's personal vault and in the shared one, with other values.
  const shared = await admin.post(`/api/vaults/${vaultId}/categories`, { name: 'Api', keyType: 'simple', envVarName: 'API_KEY' })
  expect((await admin.post(`/api/vaults/${vaultId}/entries`, { categoryId: shared.body.id, name: 'app', value: 'shared-value' })).status).toBe(201)
  const own = await viewer.post('/api/categories', { name: 'Api', keyType: 'simple', envVarName: 'API_KEY' })
  expect((await viewer.post('/api/entries', { categoryId: own.body.id, name: 'app', value: 'personal-value' })).status).toBe(201)
}, 60_000)

afterAll(async () => {
  await server?.stop()
})

const envWith = async (extra: Record<string, unknown> = {}) => {
  const key = await viewer.keyClient(READ, extra)
  return svcHome({ SVC_URL: server.url, SVC_TOKEN: key.credentials.key! }).env
}

describe('svc --vault', () => {
  test('run and export with --vault NAME read the shared vault; a key bound to it goes there without --vault', async () => {
    const bound = await envWith({ vaultId })
    const run = await svc(['run', '--vault', 'team', '--', ...PRINT_ENV], { env: bound })
    expect(run).toMatchObject({ code: 0 })
    expect(JSON.parse(run.stdout)).toEqual({ a: 'shared-value' })
    const exported = await svc(['export', '--vault', 'team'], { env: bound })
    expect(exported).toMatchObject({ code: 0, stdout: '# Api — app\nAPI_KEY=shared-value\n' })
    // The vault's id names it too.
    expect((await svc(['get', 'API_KEY', '--vault', vaultId], { env: bound })).stdout).toBe('shared-value')
    // No --vault: the bound key's vault, not the personal one (which the key cannot reach).
    const plain = await svc(['run', '--', ...PRINT_ENV], { env: bound })
    expect(JSON.parse(plain.stdout)).toEqual({ a: 'shared-value' })
    expect((await svc(['export'], { env: bound })).stdout).toBe('# Api — app\nAPI_KEY=shared-value\n')
    // A personal key still reads the personal vault.
    const personal = await envWith()
    expect((await svc(['export'], { env: personal })).stdout).toBe('# Api — app\nAPI_KEY=personal-value\n')
  }, 30_000)

  test('an unknown vault name, or one the key is not bound to: one clear line, exit 1, nothing run', async () => {
    const bound = await envWith({ vaultId })
    const unknown = await svc(['run', '--vault', 'nope', '--', 'echo', 'ran'], { env: bound })
    expect(unknown.code).toBe(1)
    expect(unknown.stdout).toBe('')
    expect(unknown.stderr).toBe(
      'svc: no shared vault named "nope" for this key (it sees "team"; a key reaches one vault): sign in for that vault with svc login --vault "nope"\n',
    )
    // A personal key sees no shared vault: the name is unknown to it.
    const personal = await envWith()
    const refused = await svc(['export', '--vault', 'team'], { env: personal })
    expect(refused.code).toBe(1)
    expect(refused.stdout).toBe('')
    expect(refused.stderr).toContain('no shared vault named "team" for this key (it sees none')
    expect((await svc(['export', '--vault'], { env: personal })).code).toBe(2)
  }, 30_000)

  test('device sign-in for a vault the approver is not in: the request shows no id, approving is 404', async () => {
    const anonymous = new Client(server.url)
    const started = await anonymous.post('/api/auth/device', { deviceName: 'box', vault: 'not-theirs' })
    expect(started.status).toBe(200)
    const shown = await viewer.get(`/api/auth/device/${started.body.userCode}`)
    expect(shown.body.vault).toEqual({ name: 'not-theirs', id: null, role: null })
    const approved = await viewer.post(`/api/auth/device/${started.body.userCode}/approve`, null)
    expect(approved.status).toBe(404)
    expect(approved.body.code).toBe('NOT_FOUND')
    expect((await anonymous.post('/api/auth/device', { vault: ' ' })).status).toBe(400)
  })

  test('approved for a vault, then removed from it before the CLI collects: no key is made', async () => {
    const leaver = (await signUp(server.url)) as Member
    await addMember(server, vaultId, leaver, 'viewer', admin)
    const anonymous = new Client(server.url)
    const started = await anonymous.post('/api/auth/device', { deviceName: 'box', vault: 'team' })
    const shown = await leaver.get(`/api/auth/device/${started.body.userCode}`)
    expect(shown.body.vault).toEqual({ name: 'team', id: vaultId, role: 'viewer' })
    expect((await leaver.post(`/api/auth/device/${started.body.userCode}/approve`, null)).status).toBe(200)
    expect((await admin.delete(`/api/vaults/${vaultId}/members/${leaver.user.id}`)).status).toBe(204)
    const polled = await anonymous.post('/api/auth/device/token', { deviceCode: started.body.deviceCode })
    expect(polled.status).toBe(404)
    expect(polled.body.code).toBe('NOT_FOUND')
    expect(polled.text).not.toContain('svc_')
    expect(((await leaver.get('/api/access-keys')).body as unknown[]).length).toBe(0)
  })
})

describe.skipIf(!hasChromium() && process.env.CI !== 'true')('svc login --vault in Chromium', () => {
  test('the page names the vault; the approved key is bound to it and svc uses it without --vault', async () => {
    const browser = await openBrowser(server.url)
    try {
      await browser.context.addCookies([{ name: 'svc_session', value: viewer.credentials.cookie!, url: server.url }])
      const home = svcHome()
      const running = startSvc(['login', server.url, '--vault', 'team'], { env: home.env })
      await running.waitFor((out) => /\/cli\?code=[A-Z]{4}-[A-Z]{4}/.test(out.stderr))
      const [, link, userCode] = /(http:\/\/\S+\/cli\?code=([A-Z]{4}-[A-Z]{4}))/.exec(running.output.stderr)!
      expect(running.output.stderr).toContain('The key will be bound to your shared vault "team".')
      const page = browser.page
      await page.goto(link)
      await page.getByLabel('Code').fill(userCode)
      await page.getByRole('button', { name: 'Continue' }).click()
      await page.locator('.cli-code').waitFor()
      expect(await page.locator('.cli-vault').textContent()).toBe('The key will work only in the shared vault team (your role there: viewer).')
      await page.getByRole('button', { name: 'Approve' }).click()
      await page.getByText('Approved.').waitFor()
      const result = await running.end()
      expect(result.code).toBe(0)
      expect(result.stderr).toContain(`Signed in to ${server.url} as ${viewer.email} for the shared vault "team": key`)
      const stored = JSON.parse(readFileSync(join(home.config, 'svc-vault', 'config.json'), 'utf8'))
      expect(stored).toMatchObject({ vaultId, vaultName: 'team' })
      // The key as the account lists it: bound to the vault.
      const keys = (await viewer.get('/api/access-keys')).body as { keyPrefix: string; vaultId?: string }[]
      expect(keys.find((k) => stored.key.startsWith(k.keyPrefix))?.vaultId).toBe(vaultId)
      expect((await svc(['export'], { env: home.env })).stdout).toBe('# Api — app\nAPI_KEY=shared-value\n')
      expect((await svc(['whoami'], { env: home.env })).stdout).toContain('Vault:   team\n')
    } finally {
      await browser.close()
    }
  }, 40_000)
})
