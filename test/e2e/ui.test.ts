// The web interface in real headless Chromium, walked as a person would: register, keys, reveal
// and copy, 2FA, env files, access keys, import, export, sign out. Throughout: no console error,
// no request to any host but the vault, no CSP violation.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as OTPAuth from 'otpauth'
import type { Page } from 'playwright-core'
import { CHROMIUM, hasChromium, openBrowser, type BrowserSession } from '../support/browser'
import { describeNeeding } from '../support/requirements'
import { Client, PASSWORD, sessionCookie } from '../support/client'
import { useSession } from '../support/page-session'
import { ROOT, startTestServer, type TestServer } from '../support/server'

// The README's screenshots are made by this test run (issue 32), so they cannot drift from the
// page: every run rewrites docs/screenshots. SVC_SCREENSHOTS=0 sends them to a temporary folder.
const SCREENSHOTS = process.env.SVC_SCREENSHOTS === '0' ? mkdtempSync(join(tmpdir(), 'svc-vault-screenshots-')) : join(ROOT, 'docs', 'screenshots')
const TOTP_SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DP'
const STEP = 30_000

let server: TestServer
let browser: BrowserSession
let page: Page
let cookie: string | undefined
/** The account of the step under way (each step has its own). */
/** Readable addresses: they show in the README's screenshots (alice@example.com, alice2@…). */
let accounts = 0
const readableEmail = () => `alice${++accounts === 1 ? '' : accounts}@example.com`
let email = readableEmail()

const api = () => new Client(server.url, { cookie })
const clipboard = () => page.evaluate(() => navigator.clipboard.readText())
const heading = (text: string) => page.getByRole('heading', { level: 1, name: text })

async function go(label: string, title: string) {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: label, exact: true }).click()
  await heading(title).waitFor()
}

const noToasts = () => page.waitForFunction(() => !document.querySelector('.toast'))

// Each step below is one walk through a part of the interface, as its own new user (registered
// through the API, the session cookie put in the browser) and with the records it needs made
// through the API: every step passes alone (`bun test -t NAME`) and in any order.

async function confirm(action = 'Delete') {
  const dialog = page.getByRole('dialog', { name: 'Are you sure?' })
  await dialog.waitFor()
  await dialog.getByRole('button', { name: action }).click()
  await dialog.waitFor({ state: 'detached' })
}

/** A new account, signed in in the browser, on the dashboard. */
async function signInAsNewUser() {
  email = readableEmail()
  const registered = await new Client(server.url).post('/api/auth/register', { email, password: PASSWORD })
  expect(registered.status).toBe(201)
  cookie = sessionCookie(registered.headers)
  // The last test's page goes first: a request of it (a 2FA page fetches codes as a step begins)
  // sent without the cookies cleared here would be a 401 on the console, caused by the test.
  await page.goto('about:blank')
  await browser.context.clearCookies()
  await useSession(browser, server.url, cookie!)
  await page.goto(server.url + '/')
  await heading('Dashboard').waitFor()
}

/** The keys of the keys step: GitHub (production) and Database (development) entries of my-blog. */
async function addKeys() {
  const github = await api().post('/api/categories', { name: 'GitHub', keyType: 'simple', envVarName: 'GITHUB_TOKEN', icon: 'github' })
  expect(
    (await api().post('/api/entries', { categoryId: github.body.id, name: 'my-blog', value: 'ghp_test1234567890', environment: 'production' })).status,
  ).toBe(201)
  const database = await api().post('/api/categories', { name: 'Database', keyType: 'group', fieldDefinitions: ['DB_HOST', 'DB_PASSWORD'], icon: 'postgresql' })
  const value = JSON.stringify({ DB_HOST: 'db.internal', DB_PASSWORD: 'hunter2-very-secret' })
  expect(
    (await api().post('/api/entries', { categoryId: database.body.id, name: 'my-blog', value, environment: 'development', notes: 'primary database' })).status,
  ).toBe(201)
  // The page shows what it loaded: load it again.
  await page.reload()
}

/** The token of the 2FA step. */
async function addToken() {
  expect((await api().post('/api/2fa', { service: 'GitHub', accountName: 'alice@example.com', secret: TOTP_SECRET })).status).toBe(201)
  await page.reload()
}

describeNeeding(hasChromium() ? null : `Chromium is not installed at ${CHROMIUM}`)('web interface in Chromium', () => {
  beforeAll(async () => {
    server = await startTestServer()
    browser = await openBrowser(server.url)
    page = browser.page
  }, 20_000)

  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  test(
    'serves the page with a strict CSP, and registers a new account',
    async () => {
      await browser.context.clearCookies()
      email = readableEmail()
      const response = await page.goto(server.url + '/')
      expect(response!.status()).toBe(200)
      const csp = response!.headers()['content-security-policy']
      expect(csp).toContain("script-src 'self'")
      expect(csp).toContain("style-src 'self'")
      expect(csp).not.toContain('unsafe-inline')
      await page.waitForURL(/\/login$/)
      // An empty vault opens on creating its first account (issue 22).
      await page.getByRole('heading', { name: 'Create the first account' }).waitFor()
      await page.getByLabel('E-mail').fill(email)
      await page.getByLabel('Password').fill(PASSWORD)
      await page.getByRole('button', { name: 'Create the first account' }).click()
      await heading('Dashboard').waitFor()
      expect(new URL(page.url()).pathname).toBe('/')
      cookie = (await browser.context.cookies()).find((c) => c.name === 'svc_session')?.value
      expect(cookie).toBeTruthy()
      expect((await api().get('/api/auth/me')).body.user.email).toBe(email)
    },
    STEP,
  )

  test(
    'creates categories and entries, reveals and copies, edits and deletes',
    async () => {
      await signInAsNewUser()
      await go('Keys', 'Keys')
      // A simple category with a brand icon.
      await page.getByRole('button', { name: 'New category' }).first().click()
      let dialog = page.getByRole('dialog', { name: 'New category' })
      await dialog.getByLabel('Name').fill('GitHub')
      await dialog.getByLabel('Environment variable').fill('GITHUB_TOKEN')
      await dialog.getByLabel('Icon (optional)').fill('github')
      await dialog.getByRole('button', { name: 'Create category' }).click()
      await dialog.waitFor({ state: 'detached' })
      const openai = page.locator('[data-category="GitHub"]')
      await openai.locator('img[src="/icons/github.svg"]').waitFor()

      await openai.getByRole('button', { name: 'Add entry' }).click()
      dialog = page.getByRole('dialog', { name: 'New GitHub entry' })
      await dialog.getByLabel('Project name').fill('my-blog')
      await dialog.getByLabel('Environment').selectOption('production')
      await dialog.getByLabel('Value of GITHUB_TOKEN').fill('ghp_test1234567890')
      await dialog.getByRole('button', { name: 'Add entry' }).click()
      await dialog.waitFor({ state: 'detached' })
      const entry = openai.locator('[data-entry="my-blog"]')
      await entry.getByText('production').waitFor()
      expect(await page.getByText('ghp_test1234567890').count()).toBe(0)

      await entry.getByRole('button', { name: 'Reveal' }).click()
      await entry.getByText('ghp_test1234567890').waitFor()
      await entry.getByRole('button', { name: 'Copy' }).click()
      await page.getByText('copied to the clipboard').first().waitFor()
      expect(await clipboard()).toBe('ghp_test1234567890')
      await entry.getByRole('button', { name: 'Hide' }).click()
      await entry.getByText('ghp_test1234567890').waitFor({ state: 'detached' })

      // A group category: each field is shown on reveal.
      await page.getByRole('button', { name: 'New category' }).first().click()
      dialog = page.getByRole('dialog', { name: 'New category' })
      await dialog.getByLabel('Name').fill('Database')
      await dialog.getByLabel('Group of fields').check()
      await dialog.getByLabel('Field names').fill('DB_HOST, DB_PASSWORD')
      await dialog.getByLabel('Icon (optional)').fill('postgresql')
      await dialog.getByRole('button', { name: 'Create category' }).click()
      await dialog.waitFor({ state: 'detached' })
      const database = page.locator('[data-category="Database"]')
      await database.getByRole('button', { name: 'Add entry' }).click()
      dialog = page.getByRole('dialog', { name: 'New Database entry' })
      await dialog.getByLabel('Project name').fill('my-blog')
      await dialog.getByLabel('Environment').selectOption('development')
      await dialog.getByLabel('Value of DB_HOST').fill('db.internal')
      await dialog.getByLabel('Value of DB_PASSWORD').fill('hunter2-very-secret')
      await dialog.getByRole('button', { name: 'Add entry' }).click()
      await dialog.waitFor({ state: 'detached' })
      const dbEntry = database.locator('[data-entry="my-blog"]')
      await dbEntry.getByRole('button', { name: 'Reveal' }).click()
      await dbEntry.getByText('db.internal').waitFor()
      await dbEntry.getByText('hunter2-very-secret').waitFor()
      expect(await dbEntry.getByText('Hides in').textContent()).toMatch(/Hides in \d+ s/)

      // Edit: notes change, the value is kept.
      await dbEntry.getByRole('button', { name: 'Edit Database of my-blog (development)' }).click()
      dialog = page.getByRole('dialog', { name: 'Edit Database of my-blog (development)' })
      await dialog.getByLabel('Notes (optional)').fill('primary database')
      await dialog.getByRole('button', { name: 'Save' }).click()
      await dialog.waitFor({ state: 'detached' })
      await database.getByText('primary database').waitFor()
      const entries = (await api().get('/api/entries')).body as { id: string; notes: string | null }[]
      const saved = entries.find((item) => item.notes === 'primary database')!
      expect((await api().post(`/api/entries/${saved.id}/reveal`)).body.value).toEqual({ DB_HOST: 'db.internal', DB_PASSWORD: 'hunter2-very-secret' })

      // A throwaway category, deleted after confirmation.
      await page.getByRole('button', { name: 'New category' }).first().click()
      dialog = page.getByRole('dialog', { name: 'New category' })
      await dialog.getByLabel('Name').fill('Old service')
      await dialog.getByLabel('Environment variable').fill('OLD_TOKEN')
      await dialog.getByRole('button', { name: 'Create category' }).click()
      await dialog.waitFor({ state: 'detached' })
      await page.getByRole('button', { name: 'Delete category Old service' }).click()
      await page.getByRole('dialog', { name: 'Are you sure?' }).getByRole('button', { name: 'Cancel' }).click()
      await page.locator('[data-category="Old service"]').waitFor()
      await page.getByRole('button', { name: 'Delete category Old service' }).click()
      await confirm()
      await page.locator('[data-category="Old service"]').waitFor({ state: 'detached' })
      expect(((await api().get('/api/categories')).body as { name: string }[]).map((c) => c.name).sort()).toEqual(['Database', 'GitHub'])
    },
    STEP,
  )

  test(
    'a revealed value hides itself after 30 seconds',
    async () => {
      await signInAsNewUser()
      await addKeys()
      const timed = await browser.context.newPage()
      await timed.clock.install()
      await timed.goto(server.url + '/keys')
      const entry = timed.locator('[data-category="GitHub"] [data-entry="my-blog"]')
      await entry.getByRole('button', { name: 'Reveal' }).click()
      await entry.getByText('ghp_test1234567890').waitFor()
      // The countdown starts in an effect, which Preact runs after the next frame: a frame timer of
      // the installed clock. Run the first second so that it has started (on a loaded machine the
      // jump below could come first, and the countdown would start 25 s late).
      await timed.clock.runFor(1_000)
      // The page's clock also runs on its own between steps (over a second on a loaded machine):
      // visible well before 30 s, gone just after.
      await timed.clock.fastForward(24_000)
      expect(await entry.getByText('ghp_test1234567890').count()).toBe(1)
      await timed.clock.fastForward(6_000)
      await entry.getByText('ghp_test1234567890').waitFor({ state: 'detached' })
      await timed.close()
    },
    STEP,
  )

  test(
    'adds a 2FA token from an otpauth:// URI and shows its live code',
    async () => {
      await signInAsNewUser()
      await go('2FA', 'Two-factor codes')
      await page.getByRole('button', { name: 'Add token' }).click()
      const dialog = page.getByRole('dialog', { name: 'Add a 2FA token' })
      await dialog.getByLabel('Secret or otpauth:// URI').fill(`otpauth://totp/GitHub:alice%40example.com?secret=${TOTP_SECRET}&issuer=GitHub`)
      expect(await dialog.getByLabel('Service').inputValue()).toBe('GitHub')
      expect(await dialog.getByLabel('Account').inputValue()).toBe('alice@example.com')
      await dialog.getByRole('button', { name: 'Add token' }).click()
      await dialog.waitFor({ state: 'detached' })

      const card = page.locator('[data-token="GitHub"]')
      const code = card.getByRole('button', { name: /Code for GitHub/ })
      await page.waitForFunction(() => /^\d{3} \d{3}$/.test(document.querySelector('[data-token="GitHub"] .token-code')?.textContent ?? ''))
      const shown = (await code.textContent())!.replace(' ', '')
      const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(TOTP_SECRET), digits: 6, period: 30, algorithm: 'SHA1' })
      const now = Date.now()
      expect([now - 30_000, now, now + 30_000].map((timestamp) => totp.generate({ timestamp }))).toContain(shown)
      const seconds = Number(await card.locator('.countdown-text').textContent())
      expect(seconds).toBeGreaterThanOrEqual(1)
      expect(seconds).toBeLessThanOrEqual(30)
      await code.click()
      await card.getByRole('status').getByText('Code for GitHub copied').waitFor()
      expect(await clipboard()).toMatch(/^\d{6}$/)
    },
    STEP,
  )

  test(
    'creates an env project, edits, uploads and downloads files',
    async () => {
      await signInAsNewUser()
      await go('Env projects', 'Env projects')
      await page.getByRole('button', { name: 'New project' }).click()
      const dialog = page.getByRole('dialog', { name: 'New env project' })
      await dialog.getByLabel('Name').fill('my-blog')
      await dialog.getByLabel('Description (optional)').fill('The blog')
      await dialog.getByRole('button', { name: 'Create project' }).click()
      await heading('my-blog').waitFor()

      const editor = page.getByLabel('Contents of .env', { exact: true })
      await editor.fill('API_URL=https://example.test\nSECRET=abc123\n')
      await page.getByRole('button', { name: 'Save', exact: true }).click()
      await page.getByRole('button', { name: 'Saved', exact: true }).waitFor()

      // Uploading a file into the .env.local tab saves it.
      await page.getByRole('tab', { name: '.env.local' }).click()
      await page.locator('input[type="file"]').setInputFiles({ name: '.env.local', mimeType: 'text/plain', buffer: Buffer.from('LOCAL_ONLY=yes\n') })
      await page.getByText('Saved .env.local').first().waitFor()

      // Reload: the content comes back from the vault.
      await page.reload()
      await heading('my-blog').waitFor()
      await page.getByLabel('Contents of .env', { exact: true }).waitFor()
      expect(await page.getByLabel('Contents of .env', { exact: true }).inputValue()).toBe('API_URL=https://example.test\nSECRET=abc123\n')
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download' }).click()])
      expect(download.suggestedFilename()).toBe('my-blog.env')
      expect(readFileSync((await download.path())!, 'utf8')).toBe('API_URL=https://example.test\nSECRET=abc123\n')

      await page.getByRole('tab', { name: '.env.local' }).click()
      await page.getByLabel('Contents of .env.local').waitFor()
      expect(await page.getByLabel('Contents of .env.local').inputValue()).toBe('LOCAL_ONLY=yes\n')

      // The list searches by name.
      await go('Env projects', 'Env projects')
      await page.getByRole('link', { name: /my-blog/ }).waitFor()
      await page.getByLabel('Search projects').fill('nothing-like-it')
      await page.getByText('No project matches').waitFor()
      await page.getByLabel('Search projects').fill('BLOG')
      await page.getByRole('link', { name: /my-blog/ }).waitFor()
      expect(await page.getByText('2 files').count()).toBe(1)
    },
    STEP,
  )

  test(
    'creates an access key (shown once), sees its use, revokes it',
    async () => {
      await signInAsNewUser()
      await go('Access keys', 'Access keys')
      await page.getByLabel('Name').fill('CI deploy')
      await page.getByLabel('Expires').selectOption('30')
      await page.getByRole('checkbox', { name: 'stats:read' }).check()
      await page.getByRole('checkbox', { name: 'entries:read' }).check()
      await page.getByRole('button', { name: 'Create key' }).click()
      const shown = page.locator('.created-key-value')
      await shown.waitFor()
      const key = (await shown.textContent())!
      expect(key).toMatch(/^svc_[A-Za-z0-9_-]{40,}$/)
      await page.locator('.created-key').getByRole('button', { name: 'Copy' }).click()
      await page.getByText('Key copied to the clipboard').first().waitFor()
      expect(await clipboard()).toBe(key)

      const client = new Client(server.url, { key })
      expect((await client.get('/api/stats')).status).toBe(200)
      await page.getByRole('button', { name: 'Done' }).click()
      expect(await page.getByText(key).count()).toBe(0)
      await page.reload()
      const row = page.locator('[data-key="CI deploy"]')
      await row.getByText('Last used just now').waitFor()
      await row.getByText('stats:read').waitFor()
      await row.getByText(/expires/).waitFor()

      await row.getByRole('button', { name: 'Revoke CI deploy' }).click()
      await confirm('Revoke')
      await row.waitFor({ state: 'detached' })
      expect((await client.get('/api/stats')).status).toBe(401)
    },
    STEP,
  )

  test(
    'imports a pasted config: suggestions, leave one out, apply',
    async () => {
      await signInAsNewUser()
      await go('Import', 'Import a config')
      await page.getByLabel('Config to import').fill('STRIPE_SECRET_KEY=sk_live_abc\nRESEND_API_KEY=re_123\nSENTRY_DSN=https://k@sentry.example/1\n')
      await page.getByRole('button', { name: 'Suggest categories' }).click()
      await page.getByRole('heading', { name: /Suggested categories/ }).waitFor()
      await page.getByText('RESEND_API_KEY').waitFor()
      await page.getByRole('checkbox', { name: 'SENTRY_DSN' }).uncheck()
      await page.getByLabel('Project name (entry name)').fill('shop')
      await page.getByLabel('Environment').selectOption('staging')
      await page.getByRole('button', { name: 'Import 2 keys' }).click()
      await page
        .getByText(/Imported into shop: 2 new/)
        .first()
        .waitFor()
      // After the import, the project's page (issue 22).
      await heading('shop').waitFor()
      expect(new URL(page.url()).pathname).toBe('/projects/shop')

      const entries = (await api().get('/api/entries')).body as { id: string; name: string; environment: string; category: { envVarName: string | null } }[]
      const imported = entries.filter((entry) => entry.name === 'shop')
      expect(imported.every((entry) => entry.environment === 'staging')).toBe(true)
      const exported = (await api().get('/api/export?name=shop')).text
      expect(exported).toContain('STRIPE_SECRET_KEY=sk_live_abc')
      expect(exported).toContain('RESEND_API_KEY=re_123')
      expect(exported).not.toContain('SENTRY_DSN')
    },
    STEP,
  )

  test(
    'dashboard, keys and 2FA pages; screenshots for the README',
    async () => {
      await signInAsNewUser()
      await addKeys()
      await addToken()
      await go('Dashboard', 'Dashboard')
      const cards = page.locator('.stat')
      await page.getByText('Recent entries').waitFor()
      await page.locator('.list-row').first().waitFor()
      const stats = (await api().get('/api/stats')).body
      expect(await cards.nth(0).locator('.stat-value').textContent()).toBe(String(stats.totalCategories))
      expect(await cards.nth(1).locator('.stat-value').textContent()).toBe(String(stats.totalEntries))
      expect(await cards.nth(2).locator('.stat-value').textContent()).toBe('1')
      expect(await page.locator('svg[aria-label="Entries by key type"] rect.chart-bar').count()).toBe(4)
      expect(await page.locator('svg[aria-label="Entries by environment"] rect.chart-bar').count()).toBe(3)
      await noToasts()
      await page.screenshot({ path: join(SCREENSHOTS, 'dashboard.png') })

      await go('Keys', 'Keys')
      await page.locator('[data-category="GitHub"] img').waitFor()
      await page.locator('[data-category="Database"] [data-entry="my-blog"]').getByRole('button', { name: 'Reveal' }).click()
      await page.getByText('hunter2-very-secret').waitFor()
      await page.waitForFunction(() => [...document.images].every((image) => image.complete && image.naturalWidth > 0))
      await noToasts()
      await page.screenshot({ path: join(SCREENSHOTS, 'keys.png'), fullPage: true })
      await page.locator('[data-category="Database"] [data-entry="my-blog"]').getByRole('button', { name: 'Hide' }).click()

      // Two more tokens, so the page looks lived in.
      for (const [service, accountName, secret] of [
        ['Cloudflare', 'ops@example.com', 'GEZDGNBVGY3TQOJQGEZDGNBVGY'],
        ['Google', 'alice@example.com', 'MFRGGZDFMZTWQ2LKNNWG23TPOA'],
      ]) {
        expect((await api().post('/api/2fa', { service, accountName, secret })).status).toBe(201)
      }
      await go('2FA', 'Two-factor codes')
      await page.waitForFunction(
        () => [...document.querySelectorAll('.token-code')].filter((code) => /^\d{3} \d{3}$/.test(code.textContent ?? '')).length === 3,
      )
      await page.screenshot({ path: join(SCREENSHOTS, '2fa.png') })

      // The same on a phone, in the dark theme.
      await page.setViewportSize({ width: 390, height: 780 })
      await page.emulateMedia({ colorScheme: 'dark' })
      await go('Keys', 'Keys')
      await page.locator('[data-category="GitHub"] img').waitFor()
      await page.screenshot({ path: join(SCREENSHOTS, 'keys-phone-dark.png') })
      await page.setViewportSize({ width: 1280, height: 860 })
      await page.emulateMedia({ colorScheme: 'light' })
    },
    STEP,
  )

  test(
    'exports the .env of one environment',
    async () => {
      await signInAsNewUser()
      await addKeys()
      await go('Export', 'Export')
      await page.getByLabel('Environment').selectOption('production')
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download .env' }).click()])
      expect(download.suggestedFilename()).toBe('svc-export.env')
      const text = readFileSync((await download.path())!, 'utf8')
      expect(text).toContain('GITHUB_TOKEN=ghp_test1234567890')
      expect(text).not.toContain('DB_PASSWORD')
    },
    STEP,
  )

  test(
    'signs out',
    async () => {
      await signInAsNewUser()
      // The dashboard's loads answered first: one the server took after the sign-out would be a
      // 401 on the console (harmless to the page, which is signing out anyway).
      await page.waitForLoadState('networkidle')
      await page.getByRole('button', { name: 'Sign out' }).click()
      await page.getByRole('button', { name: 'Sign in' }).waitFor()
      expect(new URL(page.url()).pathname).toBe('/login')
      expect((await api().get('/api/auth/me')).status).toBe(401)
      await page.goto(server.url + '/keys')
      await page.waitForURL(/\/login$/)
      await page.getByLabel('E-mail').fill(email)
      await page.getByLabel('Password').fill(PASSWORD)
      await page.getByRole('button', { name: 'Sign in' }).click()
      await heading('Dashboard').waitFor()
    },
    STEP,
  )

  test('no console errors, no request to another host, no CSP violation', async () => {
    await signInAsNewUser()
    const origin = new URL(server.url).origin
    const foreign = browser.requests.filter((url) => !url.startsWith('data:') && !url.startsWith('blob:') && new URL(url).origin !== origin)
    expect(foreign).toEqual([])
    expect(browser.requests.some((url) => url.startsWith(origin + '/api/'))).toBe(true)
    expect(browser.cspViolations).toEqual([])
    expect(browser.errors).toEqual([])
  })
})
