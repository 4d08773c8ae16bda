// Issue 22 in real headless Chromium: the interface a person lives in. First run opens on creating
// the first account; empty pages teach; the Projects page (by entry name, per environment: reveal
// all, .env copy and download, the `svc run` line, add a key, rename); import says which keys the
// project already has (update or skip) and goes to the project; Keys fold, sort, count and `/`;
// 2FA search and announced copy; axe-core on every page (light, dark, desktop, phone); a
// keyboard-only walk; and the first load's size and the Keys page with 1,000 entries, recorded.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { hasChromium, openBrowser, type BrowserSession } from '../support/browser'
import { firstLoadPaths } from '../support/compressed-assets'
import { Client, PASSWORD, signUp, uniqueEmail } from '../support/client'
import { created, DESKTOP, openTab, seedOtherPages, signInBrowser as signIn, useSession } from '../support/page-session'
import { ROOT, startTestServer, type TestServer } from '../support/server'
import { axeEveryWay, PHONE, seriousViolations } from '../support/axe'

const STEP = 60_000
// The README's screenshots are made by this test run (issue 32), so they cannot drift from the
// page: every run rewrites docs/screenshots. SVC_SCREENSHOTS=0 sends them to a temporary folder.
const SCREENSHOTS = process.env.SVC_SCREENSHOTS === '0' ? mkdtempSync(join(tmpdir(), 'svc-vault-screenshots-')) : join(ROOT, 'docs', 'screenshots')
const SHOT = { width: 1100, height: 720 }

describe.skipIf(!hasChromium())('web page: first run (issue 22)', () => {
  let server: TestServer
  let browser: BrowserSession

  beforeAll(async () => {
    server = await startTestServer({ env: { SVC_SIGNUP: 'first' } })
    browser = await openBrowser(server.url)
  }, 30_000)
  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  test(
    'an empty vault opens on "Create the first account"; after it, sign-up is gone and empty pages teach',
    async () => {
      const providers = async () => (await (await fetch(server.url + '/api/auth/providers')).json()) as Record<string, unknown>
      expect(await providers()).toMatchObject({ signup: 'open', signupPolicy: 'first', firstAccount: true })
      const page = browser.page
      await page.goto(server.url + '/')
      await page.getByRole('heading', { name: 'Create the first account' }).waitFor()
      expect(await page.locator('.login-card').innerText()).toContain('sign-up closes after it')
      // No "Sign in" form with a small link: the form is the sign-up form.
      expect(await page.getByRole('button', { name: 'Sign in' }).count()).toBe(0)
      expect(await page.getByRole('button', { name: 'Create one' }).count()).toBe(0)
      await page.setViewportSize({ width: 900, height: 640 })
      await page.screenshot({ path: join(SCREENSHOTS, 'first-run.png') })
      expect(await axeEveryWay(page, 'first run', () => page.getByRole('heading', { name: 'Create the first account' }).waitFor())).toEqual([])

      // A second tab still showing the first-run form when the account gets made elsewhere.
      const late = await browser.context.newPage()
      await late.goto(server.url + '/')
      await late.getByRole('heading', { name: 'Create the first account' }).waitFor()

      const email = uniqueEmail('owner')
      await page.getByLabel('Name (optional)').fill('Owner')
      await page.getByLabel('E-mail').fill(email)
      await page.getByLabel('Password').fill(PASSWORD)
      await page.getByRole('button', { name: 'Create the first account' }).click()

      // The dashboard of an empty vault points to import.
      await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor()
      await late.getByLabel('E-mail').fill(uniqueEmail('late'))
      await late.getByLabel('Password').fill(PASSWORD)
      await late.getByRole('button', { name: 'Create the first account' }).click()
      await late
        .getByRole('alert')
        .getByText(/Sign-up is closed on this vault/)
        .waitFor()
      await late.getByRole('button', { name: 'Sign in' }).waitFor()
      expect(await late.getByRole('button', { name: /create/i }).count()).toBe(0)
      await late.close()
      expect(await providers()).toMatchObject({ signup: 'closed', signupPolicy: 'first', firstAccount: false })
      const welcome = page.locator('.welcome')
      await welcome.getByRole('heading', { name: 'Your vault is empty' }).waitFor()
      expect(await welcome.getByRole('link', { name: 'Import a config' }).getAttribute('href')).toBe('/import')
      await page.setViewportSize(SHOT)
      await page.screenshot({ path: join(SCREENSHOTS, 'empty-dashboard.png') })
      await page.setViewportSize(DESKTOP)

      // The empty Keys page offers import and a new category.
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Keys', exact: true }).click()
      await page.getByRole('heading', { name: 'No keys yet' }).waitFor()
      const empty = page.locator('.empty')
      expect(await empty.getByRole('link', { name: 'Import a config' }).getAttribute('href')).toBe('/import')
      await empty.getByRole('button', { name: 'New category' }).click()
      await page.getByRole('dialog', { name: 'New category' }).waitFor()
      await page.keyboard.press('Escape')
      await page.getByRole('dialog', { name: 'New category' }).waitFor({ state: 'detached' })

      // The empty 2FA page says what to paste.
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: '2FA' }).click()
      await page.getByRole('heading', { name: 'No 2FA tokens yet' }).waitFor()
      const help = await page.locator('.empty').innerText()
      expect(help).toContain('secret key')
      expect(help).toContain('otpauth://')
      await page.getByRole('button', { name: 'Add your first token' }).click()
      await page.getByRole('dialog', { name: 'Add a 2FA token' }).waitFor()
      await page.keyboard.press('Escape')

      // The empty pages pass axe too.
      for (const [path, title] of [
        ['/', 'Your vault is empty'],
        ['/keys', 'No keys yet'],
        ['/2fa', 'No 2FA tokens yet'],
        ['/projects', 'No projects yet'],
      ]) {
        await page.goto(server.url + path)
        expect(await axeEveryWay(page, `empty ${path}`, () => page.getByRole('heading', { name: title }).waitFor())).toEqual([])
      }

      // Signed out, with the account made and sign-up closed: no sign-up anywhere. The page's loads
      // answer first (one the server took after the sign-out would be a 401 on the console).
      await page.waitForLoadState('networkidle')
      await page.getByRole('button', { name: 'Sign out' }).click()
      await page.getByRole('button', { name: 'Sign in' }).waitFor()
      expect(await page.locator('.login-card').innerText()).not.toMatch(/create|sign up|register/i)
      expect(await page.getByRole('button', { name: /create/i }).count()).toBe(0)
      expect(await page.getByLabel('Name (optional)').count()).toBe(0)
      expect(await axeEveryWay(page, 'sign in', () => page.getByRole('button', { name: 'Sign in' }).waitFor())).toEqual([])
      // The late tab's refused sign-up is the one failed request Chromium logs.
      expect(browser.errors.filter((error) => !error.includes('status of 403'))).toEqual([])
    },
    STEP * 2,
  )
})

describe.skipIf(!hasChromium())('web page: projects, import, keys, 2FA, everyone (issue 22)', () => {
  let server: TestServer
  let browser: BrowserSession
  let client: Client & { email: string }
  const ids: Record<string, string> = {}

  const clipboard = (page: Page) => page.evaluate(() => navigator.clipboard.readText())
  const entries = async () =>
    (await client.get('/api/entries')).body as { id: string; name: string; categoryId: string; environment: string | null; updatedAt: string }[]
  const reveal = async (id: string) => (await client.post(`/api/entries/${id}/reveal`)).body.value

  const signInBrowser = () => signIn(browser, server.url, client.email)

  /** A new tab on `path`, signed in. */
  async function open(path: string, viewport = DESKTOP): Promise<Page> {
    if (!(await browser.context.cookies(server.url)).some((cookie) => cookie.name === 'svc_session')) await signInBrowser()
    return openTab(browser, server.url, path, viewport)
  }

  beforeAll(async () => {
    server = await startTestServer()
    // A readable address: it shows in the README's screenshots.
    client = await signUp(server.url, 'alice@example.com')
    const openai = await created(client.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY', icon: 'openai' }))
    const database = await created(client.post('/api/categories', { name: 'Database', keyType: 'group', fieldDefinitions: ['DB_HOST', 'DB_PASSWORD'] }))
    const sentry = await created(client.post('/api/categories', { name: 'Sentry', keyType: 'simple', envVarName: 'SENTRY_DSN' }))
    ids.openai = openai.id
    ids.database = database.id
    ids.sentry = sentry.id
    const entry = async (categoryId: string, name: string, value: string, environment?: string) =>
      (await created(client.post('/api/entries', { categoryId, name, value, ...(environment ? { environment } : {}) }))).id as string
    ids.blogProd = await entry(openai.id, 'my-blog', 'sk-blog', 'production')
    ids.blogDev = await entry(openai.id, 'my-blog', 'sk-blog-dev', 'development')
    ids.blogDb = await entry(database.id, 'my-blog', JSON.stringify({ DB_HOST: 'db.internal', DB_PASSWORD: 'pw-dev' }), 'development')
    ids.blogSentry = await entry(sentry.id, 'my-blog', 'https://key@sentry.example/1')
    ids.shop = await entry(openai.id, 'shop', 'sk-shop', 'production')
    ids.old1 = await entry(openai.id, 'old-name', 'sk-old', 'staging')
    ids.old2 = await entry(sentry.id, 'old-name', 'https://old@sentry.example/2', 'staging')
    ids.envProject = await seedOtherPages(client)
    await created(client.post('/api/2fa', { service: 'GitLab', accountName: 'alice@example.com', secret: 'JBSWY3DPEHPK3PXPJBSWY3DQ' }))
    browser = await openBrowser(server.url)
    await signInBrowser()
  }, 30_000)

  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  test(
    'Projects lists every entry name with its keys by environment and counts',
    async () => {
      // The dashboard's recent entries lead to their project.
      const page = await open('/')
      await page.locator('main .list-row').getByRole('link', { name: 'shop', exact: true }).first().click()
      await page.getByRole('heading', { level: 1, name: 'shop' }).waitFor()
      expect(new URL(page.url()).pathname).toBe('/projects/shop')
      await page.getByRole('link', { name: 'Projects', exact: true }).first().click()
      await page.getByRole('heading', { level: 1, name: 'Projects' }).waitFor()
      const row = page.locator('[data-project="my-blog"]')
      const text = await row.innerText()
      // A group's fields count one each (issue 32): DB_HOST and DB_PASSWORD are two keys.
      expect(text).toContain('5 keys')
      expect(text).toContain('development: 3')
      expect(text).toContain('production: 1')
      expect(text).toContain('any environment: 1')
      expect(await page.locator('[data-project="shop"]').innerText()).toContain('1 key')
      await page.setViewportSize(SHOT)
      await page.screenshot({ path: join(SCREENSHOTS, 'projects.png') })
      await row.getByRole('link', { name: 'my-blog' }).click()
      await page.getByRole('heading', { level: 1, name: 'my-blog' }).waitFor()
      expect(new URL(page.url()).pathname).toBe('/projects/my-blog')
      const sections = await page.locator('[data-environment]').evaluateAll((items) => items.map((item) => item.getAttribute('data-environment')))
      expect(sections).toEqual(['development', 'production', 'any'])
      expect(await page.locator('[data-environment="development"] .entry').count()).toBe(2)
      expect(await page.locator('[data-environment="development"] h2').innerText()).toContain('3 keys')
      await page.close()
    },
    STEP,
  )

  test(
    'per environment: reveal all, copy as .env, download .env (name + environment filters), the svc run line',
    async () => {
      const page = await open('/projects/my-blog')
      const production = page.locator('[data-environment="production"]')
      await production.getByRole('button', { name: 'Reveal all keys of my-blog (production)' }).click()
      await production.getByText('sk-blog', { exact: true }).waitFor()
      await page.setViewportSize({ width: 1100, height: 1000 })
      await page.screenshot({ path: join(SCREENSHOTS, 'project.png') })
      await page.emulateMedia({ colorScheme: 'dark' })
      await page.setViewportSize({ width: 390, height: 780 })
      await page.screenshot({ path: join(SCREENSHOTS, 'project-phone-dark.png') })
      await page.emulateMedia({ colorScheme: 'light' })
      await page.setViewportSize(DESKTOP)
      await production.getByRole('button', { name: 'Copy OPENAI_API_KEY of my-blog (production)' }).click()
      await page.getByText('OPENAI_API_KEY copied to the clipboard').first().waitFor()
      expect(await clipboard(page)).toBe('sk-blog')
      await production.getByRole('button', { name: 'Hide all keys of my-blog (production)' }).click()
      await production.getByText('sk-blog', { exact: true }).waitFor({ state: 'detached' })

      await production.getByRole('button', { name: 'Copy as .env: my-blog (production)' }).click()
      await page.getByText('.env of my-blog (production) copied').first().waitFor()
      const copied = await clipboard(page)
      expect(copied).toContain('OPENAI_API_KEY=sk-blog\n')
      expect(copied).not.toContain('sk-shop') // another project
      expect(copied).not.toContain('sk-blog-dev') // another environment

      const development = page.locator('[data-environment="development"]')
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        development.getByRole('button', { name: 'Download .env: my-blog (development)' }).click(),
      ])
      expect(download.suggestedFilename()).toBe('my-blog.development.env')
      const file = readFileSync((await download.path())!, 'utf8')
      expect(file).toContain('OPENAI_API_KEY=sk-blog-dev')
      expect(file).toContain('DB_PASSWORD=pw-dev')
      expect(file).not.toContain('sk-blog\n')

      expect(await production.locator('.command-line').innerText()).toBe('svc run -n my-blog -e production -- …')
      await production.getByRole('button', { name: 'Copy the svc run command for my-blog (production)' }).click()
      await page.getByText('Command copied').first().waitFor()
      expect(await clipboard(page)).toBe('svc run -n my-blog -e production -- ')
      expect(browser.errors).toEqual([])
      await page.close()
    },
    STEP,
  )

  test(
    'from a project: add a key of an existing category; rename the project (its entries follow)',
    async () => {
      const page = await open('/projects/my-blog')
      await page.locator('[data-environment="production"]').getByRole('button', { name: 'Add a key to my-blog (production)' }).click()
      const dialog = page.getByRole('dialog', { name: 'Add a key' })
      expect(await dialog.getByLabel('Project name').inputValue()).toBe('my-blog')
      expect(await dialog.getByLabel('Environment').inputValue()).toBe('production')
      await dialog.getByLabel('Category').selectOption({ label: 'Database (group)' })
      await dialog.getByLabel('Value of DB_HOST').fill('db.prod')
      await dialog.getByLabel('Value of DB_PASSWORD').fill('pw-prod')
      await dialog.getByRole('button', { name: 'Add entry' }).click()
      await dialog.waitFor({ state: 'detached' })
      await page.locator('[data-environment="production"] [data-entry="Database"]').waitFor()
      const added = (await entries()).find((entry) => entry.name === 'my-blog' && entry.environment === 'production' && entry.categoryId === ids.database)!
      expect(await reveal(added.id)).toEqual({ DB_HOST: 'db.prod', DB_PASSWORD: 'pw-prod' })

      await page.goto(server.url + '/projects/old-name')
      await page.getByRole('heading', { level: 1, name: 'old-name' }).waitFor()
      await page.getByRole('button', { name: 'Rename' }).click()
      const rename = page.getByRole('dialog', { name: 'Rename old-name' })
      await rename.getByLabel('New project name').fill('new-name')
      await rename.getByRole('button', { name: 'Rename' }).click()
      await page.getByRole('heading', { level: 1, name: 'new-name' }).waitFor()
      expect(new URL(page.url()).pathname).toBe('/projects/new-name')
      const after = await entries()
      expect(after.filter((entry) => entry.name === 'old-name')).toEqual([])
      expect(
        after
          .filter((entry) => entry.name === 'new-name')
          .map((entry) => entry.id)
          .sort(),
      ).toEqual([ids.old1, ids.old2].sort())
      // The new project page loads its entries after the heading shows: wait for them.
      await page.locator('[data-environment="staging"] .entry').nth(1).waitFor()
      expect(await page.locator('[data-environment="staging"] .entry').count()).toBe(2)
      await page.close()
    },
    STEP,
  )

  test(
    'import: a key the project already has is "update" or "skip"; the button sits by the fields; then the project page',
    async () => {
      const page = await open('/import')
      await page.getByLabel('Config to import').fill('OPENAI_API_KEY=sk-pasted\nSTRIPE_SECRET_KEY=sk_live_pasted\n')
      await page.getByRole('button', { name: 'Suggest categories' }).click()
      await page.getByLabel('Project name (entry name)').fill('my-blog')
      await page.locator('select[name="importEnvironment"]').selectOption('production')
      const choice = page.getByLabel('OPENAI_API_KEY is already in my-blog (production): update or skip')
      await choice.waitFor()
      expect(await page.locator('[data-key="STRIPE_SECRET_KEY"] select').count()).toBe(0)
      expect(await choice.inputValue()).toBe('update')

      // No gap: the Import button is on the line of the project and environment fields.
      const select = await page.locator('select[name="importEnvironment"]').boundingBox()
      const button = await page.getByRole('button', { name: /^Import \d+ keys?$/ }).boundingBox()
      expect(Math.abs(button!.y + button!.height - (select!.y + select!.height))).toBeLessThan(4)

      await page.setViewportSize(SHOT)
      await page.locator('.import-suggestion').scrollIntoViewIfNeeded()
      await page.screenshot({ path: join(SCREENSHOTS, 'import-update-skip.png') })
      await choice.selectOption('skip')
      await page.getByRole('button', { name: 'Import 1 key' }).click()
      await page.getByRole('heading', { level: 1, name: 'my-blog' }).waitFor()
      expect(new URL(page.url()).pathname).toBe('/projects/my-blog')
      // Skipped: the project's OpenAI key is the one it had, alone, with its value; Stripe came in.
      const production = (await entries()).filter((entry) => entry.name === 'my-blog' && entry.environment === 'production')
      expect(production.filter((entry) => entry.categoryId === ids.openai).map((entry) => entry.id)).toEqual([ids.blogProd])
      expect(await reveal(ids.blogProd)).toBe('sk-blog')
      expect(production.length).toBeGreaterThanOrEqual(2)

      // "Update it": the pasted value reaches the project's key.
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Import', exact: true }).click()
      await page.getByLabel('Config to import').fill('OPENAI_API_KEY=sk-updated\n')
      await page.getByRole('button', { name: 'Suggest categories' }).click()
      await page.getByLabel('Project name (entry name)').fill('my-blog')
      await page.locator('select[name="importEnvironment"]').selectOption('production')
      await page.getByLabel('OPENAI_API_KEY is already in my-blog (production): update or skip').waitFor()
      await page.getByRole('button', { name: 'Import 1 key' }).click()
      await page.getByRole('heading', { level: 1, name: 'my-blog' }).waitFor()
      const openai = (await entries()).filter((entry) => entry.name === 'my-blog' && entry.environment === 'production' && entry.categoryId === ids.openai)
      const values = await Promise.all(openai.map((entry) => reveal(entry.id)))
      expect(values).toContain('sk-updated')
      await page.close()
    },
    STEP,
  )

  test(
    'import against the newer server answer: the category the server names (categoryId) decides; "updated" is reported',
    async () => {
      const page = await open('/import')
      let applied: { text: string; name: string; environment?: string } | null = null
      await page.route('**/api/ai/import', async (route) => {
        const body = JSON.parse(route.request().postData() ?? '{}')
        if (body.apply) {
          applied = body
          return route.fulfill({
            status: 200,
            json: { data: { source: 'builtin', keys: [], created: { categories: [], entries: [] }, updated: { categories: [], entries: [ids.blogProd] } } },
          })
        }
        // The newer server files the key into the user's category by id, under a name the page cannot match.
        return route.fulfill({
          status: 200,
          json: {
            data: {
              source: 'builtin',
              keys: [
                {
                  name: 'OPENAI_API_KEY',
                  categoryName: 'Renamed by the server',
                  keyType: 'simple',
                  envVarName: 'OPENAI_API_KEY',
                  reuse: true,
                  categoryId: ids.openai,
                },
              ],
            },
          },
        })
      })
      await page.getByLabel('Config to import').fill('OPENAI_API_KEY=sk-newer-server\n')
      await page.getByRole('button', { name: 'Suggest categories' }).click()
      await page.getByLabel('Project name (entry name)').fill('my-blog')
      await page.locator('select[name="importEnvironment"]').selectOption('production')
      const choice = page.getByLabel('OPENAI_API_KEY is already in my-blog (production): update or skip')
      await choice.waitFor()
      expect(await choice.inputValue()).toBe('update')
      await page.getByRole('button', { name: 'Import 1 key' }).click()
      await page.getByText('Imported into my-blog: 0 new, 1 updated').first().waitFor()
      await page.getByRole('heading', { level: 1, name: 'my-blog' }).waitFor()
      expect(applied!).toMatchObject({ name: 'my-blog', environment: 'production' })
      expect(applied!.text).toContain('OPENAI_API_KEY=sk-newer-server')
      await page.close()
    },
    STEP,
  )

  test(
    'Keys: a count per category, categories fold, sort by name or last change, / focuses the search',
    async () => {
      await created(client.put(`/api/entries/${ids.blogSentry}`, { notes: 'touched' }))
      const all = await entries()
      const page = await open('/keys')
      for (const [name, id] of [
        ['OpenAI', ids.openai],
        ['Sentry', ids.sentry],
      ]) {
        const count = all.filter((entry) => entry.categoryId === id).length
        expect(await page.locator(`[data-category="${name}"] .category-count`).innerText()).toBe(`${count} ${count === 1 ? 'key' : 'keys'}`)
      }
      const order = () => page.locator('[data-category]').evaluateAll((cards) => cards.map((card) => card.getAttribute('data-category')))
      expect((await order()).slice(0, 3)).toEqual(['Database', 'OpenAI', 'Sentry'])
      await page.getByLabel('Sort by').selectOption('changed')
      expect((await order())[0]).toBe('Sentry')
      await page.getByLabel('Sort by').selectOption('name')

      const fold = page.getByRole('button', { name: 'Collapse OpenAI' })
      expect(await fold.getAttribute('aria-expanded')).toBe('true')
      await fold.click()
      const unfold = page.getByRole('button', { name: 'Expand OpenAI' })
      expect(await unfold.getAttribute('aria-expanded')).toBe('false')
      expect(await page.locator('[data-category="OpenAI"] .entry').count()).toBe(0)
      expect(await page.locator('[data-category="Sentry"] .entry').count()).toBeGreaterThan(0)
      // Folded stays folded when coming back to Keys.
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Projects', exact: true }).click()
      await page.getByRole('heading', { level: 1, name: 'Projects' }).waitFor()
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Keys', exact: true }).click()
      await page.getByRole('button', { name: 'Expand OpenAI' }).click()
      await page.locator('[data-category="OpenAI"] .entry').first().waitFor()

      await page.locator('main h1').click()
      await page.keyboard.press('/')
      expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Search keys')
      await page.keyboard.type('sentry')
      expect(await order()).toEqual(['Sentry'])
      await page.close()
    },
    STEP,
  )

  test(
    '2FA: search, and the copy is announced in a live region',
    async () => {
      const page = await open('/2fa')
      await page.locator('[data-token="GitLab"]').waitFor()
      await page.getByLabel('Search tokens').fill('lab')
      expect(await page.locator('[data-token]').evaluateAll((cards) => cards.map((card) => card.getAttribute('data-token')))).toEqual(['GitLab'])
      await page.getByLabel('Search tokens').fill('')
      const card = page.locator('[data-token="GitHub"]')
      const code = card.getByRole('button', { name: /^Code for GitHub: \d{3} \d{3}, copy$/ })
      await code.click()
      const status = card.getByRole('status')
      expect(await status.getAttribute('aria-live')).toBe('polite')
      await status.getByText('Code for GitHub copied').waitFor()
      expect(await clipboard(page)).toMatch(/^\d{6}$/)
      await page.close()
    },
    STEP,
  )

  test(
    'axe-core: no serious or critical violation on any page, light and dark, desktop and phone',
    async () => {
      const page = await open('/')
      const found: string[] = []
      const pages: [string, string][] = [
        ['/', 'Dashboard'],
        ['/projects', 'Projects'],
        ['/projects/my-blog', 'my-blog'],
        ['/keys', 'Keys'],
        ['/2fa', 'Two-factor codes'],
        ['/envs', 'Env projects'],
        [`/envs/${ids.envProject}`, 'site'],
        ['/import', 'Import a config'],
        ['/access-keys', 'Access keys'],
        ['/export', 'Export'],
        ['/settings', 'Settings'],
        ['/no-such-page', 'Not found'],
      ]
      for (const [path, title] of pages) {
        await page.goto(server.url + path)
        found.push(...(await axeEveryWay(page, path, () => page.getByRole('heading', { level: 1, name: title }).waitFor())))
      }
      // The dialogs and the pages' open states too.
      await page.goto(server.url + '/keys')
      await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor()
      await page
        .locator('[data-category="OpenAI"] .entry')
        .first()
        .getByRole('button', { name: /^Reveal / })
        .click()
      found.push(...(await axeEveryWay(page, '/keys revealed', () => page.locator('.secret').first().waitFor())))
      await page.locator('[data-category="Database"]').getByRole('button', { name: 'Add entry' }).click()
      found.push(...(await axeEveryWay(page, '/keys entry dialog', () => page.getByRole('dialog').waitFor())))
      await page.keyboard.press('Escape')
      await page.goto(server.url + '/import')
      await page.getByLabel('Config to import').fill('OPENAI_API_KEY=x\nDB_HOST=h\nDB_PASSWORD=p\n')
      await page.getByRole('button', { name: 'Suggest categories' }).click()
      await page.getByLabel('Project name (entry name)').fill('my-blog')
      found.push(...(await axeEveryWay(page, '/import suggestion', () => page.locator('.import-suggestion').waitFor())))
      await page.getByLabel('Config to import').fill('')
      await page.goto(server.url + '/projects/my-blog')
      await page.getByRole('button', { name: 'Rename' }).click()
      found.push(...(await axeEveryWay(page, '/projects rename dialog', () => page.getByRole('dialog').waitFor())))
      await page.keyboard.press('Escape')
      expect(found).toEqual([])
      await page.close()
    },
    STEP * 4,
  )

  test(
    'keyboard only: sign in, reveal a key, copy it, add an entry, sign out; focus visible, trapped in dialogs, Escape closes',
    async () => {
      await browser.context.clearCookies()
      const page = await browser.context.newPage()
      await page.goto(server.url + '/')
      await page.getByRole('button', { name: 'Sign in' }).waitFor()
      const outlines: string[] = []
      /** Tab (or Shift+Tab) until `target` has focus; each stop must show where the focus is. */
      const tabTo = async (target: ReturnType<Page['getByRole']>, back = false, most = 120) => {
        for (let step = 0; step < most; step++) {
          await page.keyboard.press(back ? 'Shift+Tab' : 'Tab')
          const visible = await page.evaluate(() => {
            const element = document.activeElement as HTMLElement | null
            if (!element || element === document.body) return 'body'
            const style = getComputedStyle(element)
            return style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0
              ? 'ok'
              : `no focus ring on ${element.tagName} ${element.getAttribute('aria-label') ?? element.textContent}`
          })
          if (visible !== 'ok' && visible !== 'body') outlines.push(visible)
          if (await target.evaluate((element) => element === document.activeElement).catch(() => false)) return
        }
        throw new Error(`Tab never reached ${target}`)
      }
      await tabTo(page.getByLabel('E-mail'))
      await page.keyboard.type(client.email)
      await page.keyboard.press('Tab')
      await page.keyboard.type(PASSWORD)
      await page.keyboard.press('Enter')
      await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor()

      await tabTo(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Keys', exact: true }))
      await page.keyboard.press('Enter')
      await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor()
      const revealButton = page.getByRole('button', { name: 'Reveal OPENAI_API_KEY of shop (production)' })
      await tabTo(revealButton)
      await page.keyboard.press('Enter')
      await page.getByText('sk-shop', { exact: true }).waitFor()
      await tabTo(page.getByRole('button', { name: 'Copy OPENAI_API_KEY of shop (production)' }))
      await page.keyboard.press('Enter')
      await page.getByText('OPENAI_API_KEY copied to the clipboard').first().waitFor()
      expect(await clipboard(page)).toBe('sk-shop')

      // Add an entry: the dialog takes focus, keeps Tab inside, and Escape closes it.
      const addButton = page.locator('[data-category="Sentry"]').getByRole('button', { name: 'Add entry' })
      await tabTo(addButton)
      await page.keyboard.press('Enter')
      const dialog = page.getByRole('dialog', { name: 'New Sentry entry' })
      await dialog.waitFor()
      for (let step = 0; step < 15; step++) {
        await page.keyboard.press('Tab')
        expect(await dialog.evaluate((element) => element.contains(document.activeElement))).toBe(true)
      }
      await page.keyboard.press('Escape')
      await dialog.waitFor({ state: 'detached' })
      // Focus goes back once the closing render has settled (a task later): wait for it, briefly.
      await page.waitForFunction((element) => element === document.activeElement, await addButton.elementHandle(), { timeout: 2000 })
      await page.keyboard.press('Enter')
      await dialog.waitFor()
      expect(await dialog.getByLabel('Project name').evaluate((element) => element === document.activeElement)).toBe(true)
      await page.keyboard.type('keyboard-app')
      await tabTo(dialog.getByLabel('Value of SENTRY_DSN'))
      await page.keyboard.type('https://kbd@sentry.example/3')
      await tabTo(dialog.getByRole('button', { name: 'Add entry' }))
      await page.keyboard.press('Enter')
      await dialog.waitFor({ state: 'detached' })
      const added = (await entries()).find((entry) => entry.name === 'keyboard-app')!
      expect(await reveal(added.id)).toBe('https://kbd@sentry.example/3')

      await tabTo(page.getByRole('button', { name: 'Sign out' }), true, 400)
      await page.keyboard.press('Enter')
      await page.getByRole('button', { name: 'Sign in' }).waitFor()
      expect(outlines).toEqual([])
      await page.close()
      await signInBrowser()
    },
    STEP * 2,
  )

  test(
    'fast on a phone: the first load’s JavaScript and CSS gzipped (recorded, budget 60 KB), load and the Keys page with 1,000 entries (recorded)',
    async () => {
      const html = await (await fetch(server.url + '/')).text()
      // What index.html names and the chunks those scripts import statically.
      const assets = await firstLoadPaths(html, async (path) => (await fetch(server.url + path)).text())
      expect(assets.length).toBeGreaterThanOrEqual(2)
      let raw = 0
      let gzipped = 0
      for (const path of assets) {
        const body = new Uint8Array(await (await fetch(server.url + path)).arrayBuffer())
        raw += body.length
        gzipped += Bun.gzipSync(body, { level: 9 }).length
      }
      console.log(`[issue 22] first load: JavaScript + CSS ${(raw / 1024).toFixed(1)} KB, gzipped ${(gzipped / 1024).toFixed(1)} KB (${assets.join(', ')})`)
      expect(gzipped).toBeLessThan(60 * 1024)

      // A vault of 1,000 entries (another account), its Keys page rendered in the browser.
      const heavy = await signUp(server.url)
      const categories: string[] = []
      for (let index = 0; index < 10; index++) {
        categories.push((await created(heavy.post('/api/categories', { name: `Service ${index}`, keyType: 'simple', envVarName: `SERVICE_${index}_KEY` }))).id)
      }
      const work = Array.from({ length: 1000 }, (_, index) => index)
      const worker = async () => {
        for (let index = work.pop(); index !== undefined; index = work.pop()) {
          await created(
            heavy.post('/api/entries', { categoryId: categories[index % 10], name: `project-${index}`, value: `value-${index}`, environment: 'production' }),
          )
        }
      }
      await Promise.all(Array.from({ length: 10 }, worker))
      const session = await openBrowser(server.url, { viewport: PHONE })
      try {
        await useSession(session, server.url, heavy.credentials.cookie!)
        const page = session.page
        await page.goto(server.url + '/')
        await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor()
        const load = await page.evaluate(() => {
          const navigation = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming
          return { domContentLoaded: Math.round(navigation.domContentLoadedEventEnd), load: Math.round(navigation.loadEventEnd) }
        })
        const render = await page.evaluate(async () => {
          const start = performance.now()
          ;(document.querySelector('nav a[href="/keys"]') as HTMLAnchorElement).click()
          // The page shows long lists a page of rows at a time (issue 19: 200 rows, headings
          // included, more on scroll), rendered in one pass: its first row means its first page.
          while (document.querySelectorAll('.entry').length === 0) await new Promise((resolve) => requestAnimationFrame(resolve))
          return Math.round(performance.now() - start)
        })
        const shown = await page.locator('.entry').count()
        expect(shown).toBeGreaterThan(100)
        expect(shown).toBeLessThan(1000)
        console.log(
          `[issue 22] phone width: DOMContentLoaded ${load.domContentLoaded} ms, load ${load.load} ms; Keys page with 1,000 entries: first ${shown} rows rendered in ${render} ms`,
        )
      } finally {
        await session.close()
      }
    },
    STEP * 2,
  )
})
