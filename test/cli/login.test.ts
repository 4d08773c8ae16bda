// Signing the CLI in: the device approval end to end (the built svc, the real server, Chromium
// approving on /cli), its expiry on the server's clock, slow_down and single use at the API,
// `svc login --key`, `svc logout`, and the config file's modes.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { hasChromium, openBrowser, type BrowserSession } from '../support/browser'
import { Client, PASSWORD, signUp } from '../support/client'
import { startTestServer, type TestServer } from '../support/server'
import { buildCli, startSvc, svc, svcHome } from './support'
import { SCOPES } from '../../src/auth/scopes'

const DEFAULT_SCOPES = ['entries:read', 'entries:reveal', 'export:read', 'envs:read', 'envs:reveal', '2fa:read', '2fa:reveal', 'categories:read']
const DAY = 86_400_000
const ALL_SCOPES = [...SCOPES]

let server: TestServer
let owner: Client & { email: string }
// The server's clock: real time plus what a test adds.
let offset = 0
const now = () => Date.now() + offset

beforeAll(async () => {
  await buildCli()
  server = await startTestServer({ baseHost: '127.0.0.1', now })
  owner = await signUp(server.url)
}, 60_000)

afterAll(async () => {
  await server?.stop()
})

/** Starts `svc login` and waits for the link it prints. */
async function startLogin(env: Record<string, string>, extra: string[] = []) {
  const running = startSvc(['login', server.url, ...extra], { env })
  await running.waitFor((out) => /\/cli\?code=[A-Z]{4}-[A-Z]{4}/.test(out.stderr))
  const link = /(http:\/\/\S+\/cli\?code=([A-Z]{4}-[A-Z]{4}))/.exec(running.output.stderr)!
  return { running, link: link[1], userCode: link[2] }
}

/** On /cli: types the code as a person reads it off the terminal, and waits for the request. */
async function typeCode(page: BrowserSession['page'], userCode: string) {
  const field = page.getByLabel('Code')
  await field.waitFor()
  // The link never fills the code in.
  expect(await field.inputValue()).toBe('')
  await field.fill(userCode)
  await page.getByRole('button', { name: 'Continue' }).click()
  await page.locator('.cli-code').waitFor()
}

const requireChromium = !hasChromium() && process.env.CI === 'true'
if (requireChromium) throw new Error('CI=true: Chromium (/usr/bin/chromium) is required for the device approval test')

describe.skipIf(!hasChromium())('svc login: device approval in Chromium', () => {
  let browser: BrowserSession

  beforeAll(async () => {
    browser = await openBrowser(server.url)
    await browser.context.addCookies([{ name: 'svc_session', value: owner.credentials.cookie!, url: server.url }])
  }, 20_000)

  afterAll(async () => {
    await browser?.close()
  })

  test('the page shows the device and scopes; approving gives svc a 90-day key it stores 0600; logout revokes it', async () => {
    const home = svcHome()
    const { running, link, userCode } = await startLogin(home.env)
    expect(link).toBe(`${server.url}/cli?code=${userCode}`)
    expect(running.output.stderr).toContain(userCode)
    const page = browser.page
    await page.goto(link)
    await page.getByRole('heading', { name: 'Sign in the svc command' }).waitFor()
    // The link opens the page; the person types the code from the terminal.
    await typeCode(page, userCode)
    expect(await page.locator('.cli-device').textContent()).toBe(hostname())
    expect(await page.locator('.cli-code').textContent()).toBe(userCode)
    // Where and when the sign-in started.
    expect(await page.locator('.cli-address').textContent()).toBe('127.0.0.1')
    expect(await page.locator('.cli-user-agent').textContent()).toContain('Bun/')
    expect(await page.locator('.cli-started').textContent()).toContain('just now')
    const scopes = await page.locator('.cli-scopes code').allTextContents()
    expect(scopes).toEqual(DEFAULT_SCOPES)
    expect(await page.locator('.cli-scopes input:checked').count()).toBe(DEFAULT_SCOPES.length)
    expect(await page.locator('.cli-approval').textContent()).toContain(`svc on ${hostname()}`)
    await page.getByRole('button', { name: 'Approve' }).click()
    await page.getByText('Approved.').waitFor()

    const result = await running.end()
    expect(result.code).toBe(0)
    expect(result.stderr).toContain(`Signed in to ${server.url} as ${owner.email}`)

    // The stored sign-in: folder 0700, file 0600, nothing else left in the folder.
    const dir = join(home.config, 'svc-vault')
    expect(statSync(dir).mode & 0o777).toBe(0o700)
    expect(statSync(join(dir, 'config.json')).mode & 0o777).toBe(0o600)
    expect(readdirSync(dir)).toEqual(['config.json'])
    const stored = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'))
    expect(stored.url).toBe(server.url)
    expect(stored.key).toStartWith('svc_')

    // The key, as the web interface lists it: its name, the default scopes, 90 days.
    const keys = (await owner.get('/api/access-keys')).body as { name: string; scopes: string[]; expiresAt: string; keyPrefix: string }[]
    const made = keys.find((k) => stored.key.startsWith(k.keyPrefix))!
    expect(made.name).toBe(`svc on ${hostname()}`)
    expect(made.scopes).toEqual(DEFAULT_SCOPES)
    expect(Math.abs(Date.parse(made.expiresAt) - (now() + 90 * DAY))).toBeLessThan(60_000)

    const whoami = await svc(['whoami'], { env: home.env })
    expect(whoami.code).toBe(0)
    expect(whoami.stdout).toContain(`URL:     ${server.url}\n`)
    expect(whoami.stdout).toContain(`Account: ${owner.email}\n`)
    expect(whoami.stdout).toContain(`Key:     svc on ${hostname()} (`)
    expect(whoami.stdout).toContain(`Scopes:  ${DEFAULT_SCOPES.join(' ')}\n`)
    expect(whoami.stdout).toContain(`Expires: ${made.expiresAt}\n`)

    // The code was single-use: the page now says so.
    await page.goto(link)
    await page.getByLabel('Code').fill(userCode)
    await page.getByRole('button', { name: 'Continue' }).click()
    await page.getByText('No sign-in is waiting for the code').waitFor()

    const logout = await svc(['logout'], { env: home.env })
    expect(logout.code).toBe(0)
    expect((await new Client(server.url, { key: stored.key }).get('/api/auth/me')).status).toBe(401)
    expect(readdirSync(dir)).toEqual([])
    expect(browser.errors.filter((e) => !e.includes('404'))).toEqual([])
  }, 40_000)

  test('denying on the page: svc gets no key and says so', async () => {
    const home = svcHome()
    const { running, link, userCode } = await startLogin(home.env)
    await browser.page.goto(link)
    await typeCode(browser.page, userCode)
    await browser.page.getByRole('button', { name: 'Deny' }).click()
    await browser.page.getByText('Denied.').waitFor()
    const result = await running.end()
    expect(result).toMatchObject({ code: 1, stderr: expect.stringContaining('svc: the sign-in was denied in the web interface\n') })
    expect(existsSync(join(home.config, 'svc-vault', 'config.json'))).toBe(false)
  }, 30_000)

  test('a signed-out visit signs in first, then comes back to the approval', async () => {
    const fresh = await openBrowser(server.url)
    try {
      const home = svcHome()
      const { running, link, userCode } = await startLogin(home.env, ['--scopes', 'export:read'])
      await fresh.page.goto(link)
      await fresh.page.getByRole('button', { name: 'Sign in' }).waitFor()
      await fresh.page.getByLabel('E-mail').fill(owner.email)
      await fresh.page.getByLabel('Password').fill(PASSWORD)
      await fresh.page.getByRole('button', { name: 'Sign in' }).click()
      await typeCode(fresh.page, userCode)
      expect(await fresh.page.locator('.cli-code').textContent()).toBe(userCode)
      expect(await fresh.page.locator('.cli-scopes code').allTextContents()).toEqual(['export:read'])
      await fresh.page.getByRole('button', { name: 'Approve' }).click()
      expect((await running.end()).code).toBe(0)
      const whoami = await svc(['whoami'], { env: home.env })
      expect(whoami.stdout).toContain('Scopes:  export:read\n')
    } finally {
      await fresh.close()
    }
  }, 40_000)
})

describe.skipIf(!hasChromium())('device sign-in phishing: a link someone sends approves nothing (issue 36)', () => {
  let browser: BrowserSession

  beforeAll(async () => {
    browser = await openBrowser(server.url)
    await browser.context.addCookies([{ name: 'svc_session', value: owner.credentials.cookie!, url: server.url }])
  }, 20_000)

  afterAll(async () => {
    await browser?.close()
  })

  test('a pre-filled link approves nothing; typed, only the default scopes are ticked and granted', async () => {
    // The attacker, without an account, asks for every scope and sends the ready link.
    const attacker = new Client(server.url)
    const started = await attacker.post('/api/auth/device', { deviceName: 'IT support', scopes: ALL_SCOPES })
    const { deviceCode, userCode, verificationUri } = started.body
    const page = browser.page
    await page.goto(verificationUri)
    await page.getByText('This page was opened from a link').waitFor()
    // The code is not filled in, nothing of the request is shown, and there is nothing to approve.
    expect(await page.getByLabel('Code').inputValue()).toBe('')
    expect(await page.getByRole('button', { name: 'Approve' }).count()).toBe(0)
    expect(await page.locator('.cli-device').count()).toBe(0)
    expect(await page.content()).not.toContain(userCode)
    // Continue with nothing typed goes nowhere, and the request stays pending.
    await page.getByRole('button', { name: 'Continue' }).click()
    expect(await page.getByRole('button', { name: 'Approve' }).count()).toBe(0)
    expect((await attacker.post('/api/auth/device/token', { deviceCode })).body.code).toBe('AUTHORIZATION_PENDING')

    // Talked into typing the code too: the write scopes are called out and left unticked.
    await typeCode(page, userCode)
    const written = await page.locator('.cli-write code').allTextContents()
    expect(written).toEqual(ALL_SCOPES.filter((scope) => scope.endsWith(':write')))
    const ticked = await page.locator('.cli-scopes input:checked').evaluateAll((inputs) => inputs.map((input) => (input as HTMLInputElement).value))
    expect(ticked.sort()).toEqual([...DEFAULT_SCOPES].sort())
    expect(await page.locator('.cli-widen').textContent()).toContain('entries:write')
    await page.getByRole('button', { name: 'Approve' }).click()
    await page.getByText('Approved.').waitFor()
    offset += 20_000
    const granted = await attacker.post('/api/auth/device/token', { deviceCode })
    expect(granted.status).toBe(200)
    expect([...granted.body.scopes].sort()).toEqual([...DEFAULT_SCOPES].sort())
  }, 40_000)

  test('the approver widens on the page: a ticked write scope is granted', async () => {
    const anonymous = new Client(server.url)
    const started = await anonymous.post('/api/auth/device', { deviceName: 'my-laptop', scopes: ['export:read', 'entries:write'] })
    await browser.page.goto(`${server.url}/cli`)
    await typeCode(browser.page, started.body.userCode)
    await browser.page.getByRole('checkbox', { name: /entries:write/ }).check()
    await browser.page.getByRole('button', { name: 'Approve' }).click()
    await browser.page.getByText('Approved.').waitFor()
    offset += 20_000
    const granted = await anonymous.post('/api/auth/device/token', { deviceCode: started.body.deviceCode })
    expect(granted.body.scopes).toEqual(['export:read', 'entries:write'])
  }, 30_000)
})

describe('svc login: expiry and the endpoints', () => {
  test('a code not approved within 10 minutes (server clock) expires: svc stops with one line', async () => {
    const home = svcHome()
    const { running, userCode } = await startLogin(home.env)
    offset += 10 * 60_000 + 1000
    try {
      const result = await running.end()
      expect(result.code).toBe(1)
      expect(result.stderr).toEndWith('svc: the sign-in code expired before it was approved: run svc login again\n')
      expect((await owner.get(`/api/auth/device/${userCode}`)).body.code).toBe('DEVICE_CODE_NOT_FOUND')
    } finally {
      offset -= 10 * 60_000 + 1000
    }
  }, 30_000)

  test('polling: pending, slow_down (the interval grows by 5 s), approval, then single use', async () => {
    const anonymous = new Client(server.url)
    const started = await anonymous.post('/api/auth/device', { deviceName: 'build-box' })
    expect(started.status).toBe(200)
    const { deviceCode, userCode, verificationUri, expiresIn, interval } = started.body
    expect(userCode).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/)
    expect(verificationUri).toBe(`${server.url}/cli?code=${userCode}`)
    expect(expiresIn).toBe(600)
    expect(interval).toBe(5)
    const poll = () => anonymous.post('/api/auth/device/token', { deviceCode })
    expect((await poll()).body.code).toBe('AUTHORIZATION_PENDING')
    const tooSoon = await poll()
    expect(tooSoon.status).toBe(400)
    expect(tooSoon.body.code).toBe('SLOW_DOWN')
    expect(tooSoon.headers.get('retry-after')).toBe('10')
    // 6 s later is still too soon for the 10 s interval; 10 s later is fine.
    offset += 6000
    expect((await poll()).body.code).toBe('SLOW_DOWN')
    offset += 15_000
    expect((await poll()).body.code).toBe('AUTHORIZATION_PENDING')

    // The page's endpoints take a session only; the code may be typed in any case, without the hyphen.
    const described = await owner.get(`/api/auth/device/${userCode.replace('-', '').toLowerCase()}`)
    expect(described.body).toMatchObject({ userCode, deviceName: 'build-box', keyName: 'svc on build-box', scopes: DEFAULT_SCOPES, keyExpiresInDays: 90 })
    const key = await owner.keyClient(['export:read'])
    expect((await key.post(`/api/auth/device/${userCode}/approve`)).body.code).toBe('SESSION_REQUIRED')
    expect((await anonymous.post(`/api/auth/device/${userCode}/approve`)).status).toBe(401)
    expect((await owner.post(`/api/auth/device/${userCode}/approve`)).body).toEqual({ status: 'approved' })
    expect((await owner.post(`/api/auth/device/${userCode}/deny`)).body.code).toBe('DEVICE_CODE_NOT_FOUND')

    offset += 20_000
    const granted = await poll()
    expect(granted.status).toBe(200)
    expect(granted.headers.get('cache-control')).toBe('no-store')
    expect(granted.body).toMatchObject({ name: 'svc on build-box', scopes: DEFAULT_SCOPES })
    // 90 days from the grant (createdAt is read from the clock a moment later).
    expect(Math.abs(Date.parse(granted.body.expiresAt) - (Date.parse(granted.body.createdAt) + 90 * DAY))).toBeLessThan(1000)
    expect((await poll()).body.code).toBe('INVALID_GRANT')

    // The key knows itself, and can revoke itself (svc logout).
    const own = new Client(server.url, { key: granted.body.key })
    expect((await own.get('/api/auth/key')).body).toMatchObject({ id: granted.body.id, name: 'svc on build-box' })
    expect((await owner.get('/api/auth/key')).body.code).toBe('ACCESS_KEY_REQUIRED')
    expect((await own.delete('/api/auth/key')).status).toBe(204)
    expect((await own.get('/api/auth/me')).status).toBe(401)
  })

  test('requested write scopes are not granted without widening: an approval without a choice grants the default ones', async () => {
    const anonymous = new Client(server.url)
    const everything = await anonymous.post('/api/auth/device', { deviceName: 'IT support', scopes: ALL_SCOPES }, { 'user-agent': 'Phisher/1.0' })
    const described = await owner.get(`/api/auth/device/${everything.body.userCode}`)
    expect(described.body).toMatchObject({
      scopes: ALL_SCOPES,
      grantedByDefault: ALL_SCOPES.filter((s) => DEFAULT_SCOPES.includes(s)),
      address: '127.0.0.1',
      userAgent: 'Phisher/1.0',
    })
    expect(Math.abs(Date.parse(described.body.createdAt) - now())).toBeLessThan(5000)
    expect((await owner.post(`/api/auth/device/${everything.body.userCode}/approve`)).body).toEqual({ status: 'approved' })
    offset += 20_000
    const granted = await anonymous.post('/api/auth/device/token', { deviceCode: everything.body.deviceCode })
    expect([...granted.body.scopes].sort()).toEqual([...DEFAULT_SCOPES].sort())
    expect(granted.body.scopes.some((scope: string) => scope.endsWith(':write'))).toBe(false)

    // Only write scopes asked for: nothing to grant without a choice; the approver's choice is granted as given.
    const writer = await anonymous.post('/api/auth/device', { deviceName: 'ci', scopes: ['entries:write'] })
    const refused = await owner.post(`/api/auth/device/${writer.body.userCode}/approve`)
    expect(refused.status).toBe(400)
    expect(refused.body.code).toBe('VALIDATION_ERROR')
    expect((await owner.post(`/api/auth/device/${writer.body.userCode}/approve`, { scopes: ['nope'] })).body.code).toBe('VALIDATION_ERROR')
    expect((await owner.post(`/api/auth/device/${writer.body.userCode}/approve`, { scopes: ['entries:write', 'entries:read'] })).body).toEqual({
      status: 'approved',
    })
    offset += 20_000
    expect((await anonymous.post('/api/auth/device/token', { deviceCode: writer.body.deviceCode })).body.scopes).toEqual(['entries:write', 'entries:read'])
  })

  test('the body may be left out: a device of unknown name asks for the default scopes', async () => {
    for (const body of [undefined, {}]) {
      const started = await new Client(server.url).post('/api/auth/device', body)
      expect(started.status).toBe(200)
      const described = await owner.get(`/api/auth/device/${started.body.userCode}`)
      expect(described.body).toMatchObject({ deviceName: 'unknown device', keyName: 'svc on unknown device', scopes: DEFAULT_SCOPES })
      await owner.post(`/api/auth/device/${started.body.userCode}/deny`)
    }
  })

  test('bad requests: unknown scopes, control characters, unknown codes', async () => {
    const anonymous = new Client(server.url)
    expect((await anonymous.post('/api/auth/device', { deviceName: 'x', scopes: ['everything'] })).body.code).toBe('VALIDATION_ERROR')
    expect((await anonymous.post('/api/auth/device', { deviceName: 'a\nb' })).body.code).toBe('VALIDATION_ERROR')
    expect((await anonymous.post('/api/auth/device', { deviceName: ' ' })).body.code).toBe('VALIDATION_ERROR')
    expect((await anonymous.post('/api/auth/device', { deviceName: 'x', extra: 1 })).body.code).toBe('VALIDATION_ERROR')
    expect((await anonymous.post('/api/auth/device/token', { deviceCode: 'nope' })).body.code).toBe('INVALID_GRANT')
    expect((await owner.get('/api/auth/device/BCDF-GHJK')).status).toBe(404)
    expect((await owner.get('/api/auth/device/not-a-code')).status).toBe(404)
  })

  test('the new endpoints are in the OpenAPI document', async () => {
    const doc = (await new Client(server.url).get('/api/openapi')).body
    const ids = Object.values(doc.paths as Record<string, Record<string, { operationId?: string }>>).flatMap((ops) =>
      Object.values(ops).map((op) => op.operationId),
    )
    for (const id of [
      'startDeviceLogin',
      'pollDeviceLogin',
      'getDeviceLogin',
      'approveDeviceLogin',
      'denyDeviceLogin',
      'getCurrentAccessKey',
      'revokeCurrentAccessKey',
    ]) {
      expect(ids).toContain(id)
    }
    expect(doc.paths['/api/auth/device'].post.security).toEqual([])
    expect(doc.paths['/api/auth/device/token'].post.security).toEqual([])
  })
})

describe('svc login: a code approved by another account (issue 36)', () => {
  test('the terminal prints the account it got and warns when it is not the one before; svc whoami shows it', async () => {
    const home = svcHome()
    // Signed in as the owner first (any way will do: here with a key).
    const mine = await owner.post('/api/access-keys', { name: 'mine', scopes: ['export:read'] })
    const first = await svc(['login', '--key', server.url], { env: home.env, stdin: mine.body.key })
    expect(first.stderr).toContain(`Signed in to ${server.url} as ${owner.email} with the key "mine"`)
    expect(first.stderr).not.toContain('warning')

    // Someone who saw the code approves it with their own account.
    const other = await signUp(server.url)
    const { running, userCode } = await startLogin(home.env)
    expect((await other.post(`/api/auth/device/${userCode}/approve`)).body).toEqual({ status: 'approved' })
    const result = await running.end()
    expect(result.code).toBe(0)
    expect(result.stderr).toContain(`Signed in to ${server.url} as ${other.email}: key "svc on ${hostname()}"`)
    expect(result.stderr).toContain(`svc: warning: this sign-in is for ${other.email}, not ${owner.email} as before`)
    const whoami = await svc(['whoami'], { env: home.env })
    expect(whoami.stdout).toContain(`Account: ${other.email} (svc was signed in as ${owner.email} before)\n`)

    // Signing in again as the same account: no warning.
    const again = await other.post('/api/access-keys', { name: 'again', scopes: ['export:read'] })
    const same = await svc(['login', '--key', server.url], { env: home.env, stdin: again.body.key })
    expect(same.stderr).not.toContain('warning')
    expect((await svc(['whoami'], { env: home.env })).stdout).toContain(`Account: ${other.email}\n`)

    // A config stored before the account was kept: the vault is asked whose the old key is.
    const config = join(home.config, 'svc-vault', 'config.json')
    const { account: _, ...older } = JSON.parse(readFileSync(config, 'utf8'))
    await Bun.write(config, JSON.stringify(older))
    const switched = await svc(['login', '--key', server.url], {
      env: home.env,
      stdin: (await owner.post('/api/access-keys', { name: 'back', scopes: ['export:read'] })).body.key,
    })
    expect(switched.stderr).toContain(`svc: warning: this sign-in is for ${owner.email}, not ${other.email} as before`)
  }, 40_000)
})

describe('svc login --key and the config file', () => {
  test('reads the key from standard input only, stores it 0600 in a 0700 folder; logout revokes it (--keep-key only forgets)', async () => {
    const home = svcHome()
    // An XDG folder that exists already with looser modes: svc's own folder is still 0700.
    mkdirSync(home.config, { recursive: true, mode: 0o755 })
    const created = await owner.post('/api/access-keys', { name: 'laptop', scopes: ['export:read'] })
    const key = created.body.key as string
    const asArgument = await svc(['login', '--key', key], { env: home.env })
    expect(asArgument.code).toBe(2)
    expect(asArgument.stderr).toContain('never pass a key as an argument')
    const noUrl = await svc(['login', '--key'], { env: home.env, stdin: key })
    expect(noUrl.code).toBe(2)
    const bad = await svc(['login', '--key', server.url], { env: home.env, stdin: 'svc_wrongwrongwrongwrongwrongwrongwrongwrong\n' })
    expect(bad).toMatchObject({ code: 1, stderr: `svc: the vault at ${server.url} does not accept this key (unknown, revoked or expired)\n` })

    const ok = await svc(['login', '--key', server.url], { env: home.env, stdin: `${key}\n` })
    expect(ok.code).toBe(0)
    expect(ok.stdout).toBe('')
    expect(ok.stderr).not.toContain(key)
    const dir = join(home.config, 'svc-vault')
    expect(statSync(dir).mode & 0o777).toBe(0o700)
    expect(statSync(join(dir, 'config.json')).mode & 0o777).toBe(0o600)
    expect((await svc(['whoami'], { env: home.env })).stdout).toContain('Key:     laptop (')

    // SVC_URL naming another vault does not receive the stored key.
    const elsewhere = await svc(['ls'], { env: { ...home.env, SVC_URL: 'http://127.0.0.1:9' } })
    expect(elsewhere.code).toBe(1)
    expect(elsewhere.stderr).toContain('is not the vault svc is signed in to')

    // logout --keep-key forgets the key and leaves it valid (it may serve elsewhere too).
    expect((await svc(['logout', '--keep-key'], { env: home.env })).code).toBe(0)
    expect(readdirSync(dir)).toEqual([])
    expect((await new Client(server.url, { key }).get('/api/auth/me')).status).toBe(200)
    expect(await svc(['logout'], { env: home.env })).toMatchObject({ code: 0, stderr: 'svc is not signed in; nothing to forget\n' })

    // Plain logout revokes the stored key, however it came, and forgets it.
    expect((await svc(['login', '--key', server.url], { env: home.env, stdin: key })).code).toBe(0)
    const out = await svc(['logout'], { env: home.env })
    expect(out.code).toBe(0)
    expect(out.stderr).toContain('Revoked the key "laptop"')
    expect(readdirSync(dir)).toEqual([])
    expect((await new Client(server.url, { key }).get('/api/auth/me')).status).toBe(401)
  })

  test('logout with the vault unreachable still forgets the key, and says it stays valid', async () => {
    const home = svcHome()
    mkdirSync(join(home.config, 'svc-vault'), { recursive: true })
    await Bun.write(join(home.config, 'svc-vault', 'config.json'), JSON.stringify({ url: 'http://127.0.0.1:9', key: 'svc_unreachable' }))
    const result = await svc(['logout'], { env: home.env })
    expect(result.code).toBe(0)
    expect(result.stderr).toContain('cannot reach the vault at http://127.0.0.1:9')
    expect(result.stderr).toContain('stays valid until revoked')
    expect(existsSync(join(home.config, 'svc-vault', 'config.json'))).toBe(false)
  })

  test('without XDG_CONFIG_HOME the config goes to ~/.config/svc-vault', async () => {
    const home = svcHome()
    const { XDG_CONFIG_HOME: _, ...env } = home.env
    const created = await owner.post('/api/access-keys', { name: 'home', scopes: ['export:read'] })
    expect((await svc(['login', '--key', server.url], { env, stdin: created.body.key })).code).toBe(0)
    expect(statSync(join(home.home, '.config', 'svc-vault', 'config.json')).mode & 0o777).toBe(0o600)
    expect(statSync(join(home.home, '.config', 'svc-vault')).mode & 0o777).toBe(0o700)
  })
})

describe('device sign-in limits', () => {
  test('at most 10 sign-ins wait per client address (429 with Retry-After); expired ones make room', async () => {
    let shift = 0
    const own = await startTestServer({ now: () => Date.now() + shift })
    try {
      const anonymous = new Client(own.url)
      for (let i = 0; i < 10; i++) expect((await anonymous.post('/api/auth/device', { deviceName: `box-${i}` })).status).toBe(200)
      const refused = await anonymous.post('/api/auth/device', { deviceName: 'one-more' })
      expect(refused.status).toBe(429)
      expect(refused.body.code).toBe('TOO_MANY_ATTEMPTS')
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
      shift += 10 * 60_000 + 1000
      expect((await anonymous.post('/api/auth/device', { deviceName: 'later' })).status).toBe(200)
    } finally {
      await own.stop()
    }
  })

  test('one IPv6 /64 holds at most 20 waiting sign-ins, however many addresses it uses; other clients still get in', async () => {
    const own = await startTestServer({ env: { SVC_TRUST_PROXY: 'loopback' } })
    try {
      const anonymous = new Client(own.url)
      const from = (address: string) => ({ post: (path: string, body: unknown) => anonymous.post(path, body, { 'x-forwarded-for': address }) })
      const answers: number[] = []
      // 100 addresses of one /64, two sign-ins each (the per-address cap of 10 never comes into play).
      for (let i = 1; i <= 100; i++) {
        for (let j = 0; j < 2; j++) answers.push((await from(`2001:db8:1:2::${i.toString(16)}`).post('/api/auth/device', { deviceName: 'x' })).status)
      }
      expect(answers.filter((s) => s === 200).length).toBe(20)
      expect(answers.filter((s) => s === 429).length).toBe(180)
      // The same /64 written another way is still the same network.
      expect((await from('2001:0db8:0001:0002:ffff:0:0:1').post('/api/auth/device', {})).status).toBe(429)
      // Another /64 of the same /48, another IPv6 client and an IPv4 one are unaffected.
      expect((await from('2001:db8:1:3::1').post('/api/auth/device', {})).status).toBe(200)
      expect((await from('2001:db8:9::1').post('/api/auth/device', {})).status).toBe(200)
      expect((await from('203.0.113.7').post('/api/auth/device', {})).status).toBe(200)
    } finally {
      await own.stop()
    }
  }, 30_000)

  test('a signed-in user guessing codes is stopped after 20 unknown ones', async () => {
    const own = await startTestServer()
    try {
      const guesser = await signUp(own.url)
      for (let i = 0; i < 20; i++) expect((await guesser.get('/api/auth/device/BCDF-GHJK')).status).toBe(404)
      const stopped = await guesser.get('/api/auth/device/BCDF-GHJK')
      expect(stopped.status).toBe(429)
      expect(stopped.body.code).toBe('TOO_MANY_ATTEMPTS')
    } finally {
      await own.stop()
    }
  })
})
