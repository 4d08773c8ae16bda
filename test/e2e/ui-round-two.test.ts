// Issue 32, the page's part, in real headless Chromium: the phone navigation stays short on every
// page, fields whose text must be kept as typed carry autocorrect/autocapitalize/spellcheck/
// autocomplete as real attributes, keys are named by variable, project and environment everywhere
// a person tells them apart, a multi-line value shows its lines, a project starts with one
// variable, recovery codes say how many are left, and axe stays at 0 serious or critical.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import type { Page } from 'playwright-core'
import { hasChromium, openBrowser, type BrowserSession } from '../support/browser'
import { PASSWORD, signUp, type Client } from '../support/client'
import { created, DESKTOP, openTab, seedOtherPages, signInBrowser } from '../support/page-session'
import { startTestServer, type TestServer } from '../support/server'
import { axeEveryWay, PHONE, seriousViolations } from '../support/axe'
import { enableTwoFactor, testClock } from '../account/support'

const STEP = 60_000
const PEM = ['-----BEGIN PRIVATE KEY-----', 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC', 'MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3S', '-----END PRIVATE KEY-----'].join('\n')

let server: TestServer
let browser: BrowserSession
let client: Client & { email: string }
const ids: Record<string, string> = {}
const clock = testClock(Date.now())

const open = (path: string, viewport = DESKTOP): Promise<Page> => openTab(browser, server.url, path, viewport)

/** The attributes a keep-as-typed field must carry, as the DOM has them (not as properties). */
const verbatimAttributes = (page: Page, selector: string) =>
  page
    .locator(selector)
    .first()
    .evaluate((element) => ({
      autocorrect: element.getAttribute('autocorrect'),
      autocapitalize: element.getAttribute('autocapitalize'),
      spellcheck: element.getAttribute('spellcheck'),
      autocomplete: element.getAttribute('autocomplete'),
    }))
const VERBATIM = { autocorrect: 'off', autocapitalize: 'off', spellcheck: 'false', autocomplete: 'off' }

describe.skipIf(!hasChromium())('web page: everyday use, round two (issue 32)', () => {
  beforeAll(async () => {
    server = await startTestServer({ now: clock.now })
    client = await signUp(server.url, 'alice@example.com')
    const openai = await created(client.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' }))
    const tls = await created(client.post('/api/categories', { name: 'TLS', keyType: 'simple', envVarName: 'TLS_KEY' }))
    ids.openai = openai.id
    ids.blogProd = (await created(client.post('/api/entries', { categoryId: openai.id, name: 'blog', value: 'sk-prod', environment: 'production' }))).id
    ids.blogDev = (await created(client.post('/api/entries', { categoryId: openai.id, name: 'blog', value: 'sk-dev', environment: 'development' }))).id
    ids.pem = (await created(client.post('/api/entries', { categoryId: tls.id, name: 'blog', value: PEM, environment: 'production' }))).id
    ids.envProject = await seedOtherPages(client)
    browser = await openBrowser(server.url)
    await signInBrowser(browser, server.url, client.email)
  }, 30_000)

  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  test(
    'at 390 px the navigation is as short on every page as on a long one, and the content starts right under it',
    async () => {
      const paths = [
        '/',
        '/projects',
        '/projects/blog',
        '/keys',
        '/2fa',
        '/envs',
        `/envs/${ids.envProject}`,
        '/import',
        '/access-keys',
        '/export',
        '/trash',
        '/activity',
        '/settings',
        '/cli',
      ]
      const page = await open('/', PHONE)
      const heights: Record<string, number> = {}
      for (const path of paths) {
        await page.goto(server.url + path)
        await page.locator('main h1').first().waitFor()
        const box = await page.evaluate(() => {
          const nav = document.querySelector('.nav')!.getBoundingClientRect()
          const heading = document.querySelector('main h1')!.getBoundingClientRect()
          return { navHeight: Math.round(nav.height), gap: Math.round(heading.top - nav.bottom) }
        })
        heights[path] = box.navHeight
        // The links wrap onto a few lines (about 119 px at 390 px), never stretched to fill the screen.
        expect({ path, short: box.navHeight <= 160 }).toEqual({ path, short: true })
        expect({ path, under: box.gap >= 0 && box.gap <= 80 }).toEqual({ path, under: true })
      }
      expect(Math.max(...Object.values(heights)) - Math.min(...Object.values(heights))).toBeLessThanOrEqual(2)
      await page.close()
    },
    STEP,
  )

  test(
    'fields kept as typed carry autocorrect, autocapitalize, spellcheck and autocomplete as DOM attributes',
    async () => {
      const page = await open('/keys')
      await page.locator('[data-category="OpenAI"]').getByRole('button', { name: 'Add entry' }).click()
      expect(await verbatimAttributes(page, '[role="dialog"] textarea.secret-textarea')).toEqual(VERBATIM)
      await page.keyboard.press('Escape')
      await page.goto(server.url + '/import')
      await page.locator('main h1').waitFor()
      expect(await verbatimAttributes(page, 'textarea[name="configText"]')).toEqual(VERBATIM)
      await page.goto(`${server.url}/envs/${ids.envProject}`)
      await page.locator('textarea.env-editor').waitFor()
      expect(await verbatimAttributes(page, 'textarea.env-editor')).toEqual(VERBATIM)
      await page.goto(server.url + '/projects')
      await page.getByRole('button', { name: 'New project' }).click()
      expect(await verbatimAttributes(page, '[role="dialog"] input[name="variable"]')).toEqual(VERBATIM)
      expect(await verbatimAttributes(page, '[role="dialog"] textarea.secret-textarea')).toEqual(VERBATIM)
      await page.close()
    },
    STEP,
  )

  test(
    'keys are named by variable, project and environment: row buttons, Edit, History, the confirm, the toast, Trash and Activity',
    async () => {
      const page = await open('/keys')
      const row = page.locator('[data-category="OpenAI"] [data-entry="blog"]')
      // Two rows of one project: each button says which one it is for.
      for (const verb of ['Reveal', 'Edit', 'History of', 'Delete']) {
        await row.getByRole('button', { name: `${verb} OPENAI_API_KEY of blog (production)`, exact: true }).waitFor()
        await row.getByRole('button', { name: `${verb} OPENAI_API_KEY of blog (development)`, exact: true }).waitFor()
      }
      await page.getByRole('button', { name: 'Edit OPENAI_API_KEY of blog (production)', exact: true }).click()
      await page.getByRole('dialog', { name: 'Edit OPENAI_API_KEY of blog (production)' }).waitFor()
      await page.keyboard.press('Escape')
      await page.getByRole('button', { name: 'History of OPENAI_API_KEY of blog (production)', exact: true }).click()
      await page.getByRole('dialog', { name: 'History of OPENAI_API_KEY of blog (production)' }).waitFor()
      await page.keyboard.press('Escape')

      await page.getByRole('button', { name: 'Delete OPENAI_API_KEY of blog (development)', exact: true }).click()
      const question = page.getByRole('dialog', { name: 'Are you sure?' })
      expect(await question.innerText()).toContain('Delete OPENAI_API_KEY of blog (development)?')
      await question.getByRole('button', { name: 'Delete' }).click()
      await page.locator('.toast', { hasText: 'Deleted OPENAI_API_KEY of blog (development)' }).waitFor()

      await page.goto(server.url + '/trash')
      await page.locator('.trash-item', { hasText: 'OPENAI_API_KEY of blog (development)' }).waitFor()
      await page.getByRole('button', { name: 'Restore OPENAI_API_KEY of blog (development)', exact: true }).click()
      await page.locator('.toast', { hasText: 'Restored OPENAI_API_KEY of blog (development)' }).waitFor()

      await page.goto(server.url + '/activity')
      const restore = page.locator('.activity-event[data-action="trash.restore"]').first()
      await restore.waitFor()
      const restoreText = await restore.innerText()
      expect(restoreText).toContain('OPENAI_API_KEY of blog (development)')
      const events = await page.locator('.activity-event').allInnerTexts()
      // No raw UUID where a name is known (a session's own id aside, which has no name).
      const subjects = await page
        .locator('.activity-event .grow > .muted')
        .first()
        .evaluate(() => [...document.querySelectorAll('.activity-event .grow > span.muted')].map((element) => element.textContent ?? ''))
      expect(events.length).toBeGreaterThan(3)
      for (const subject of subjects) expect(subject).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/)
      await page.close()
    },
    STEP,
  )

  test(
    'a revealed multi-line value shows its lines',
    async () => {
      const page = await open('/keys')
      const row = page.locator('[data-category="TLS"] [data-entry="blog"]')
      await row.getByRole('button', { name: 'Reveal TLS_KEY of blog (production)', exact: true }).click()
      const value = row.locator('code.secret-value')
      await value.waitFor()
      expect(await value.evaluate((element) => getComputedStyle(element).whiteSpace)).toBe('pre-wrap')
      expect(await value.innerText()).toBe(PEM)
      const lineHeight = await value.evaluate((element) => parseFloat(getComputedStyle(element).lineHeight) || 16)
      expect((await value.boundingBox())!.height).toBeGreaterThanOrEqual(lineHeight * 3.5)
      await page.close()
    },
    STEP,
  )

  test(
    'a new project starts with one plain variable, another is added in one step, and the counts are variables',
    async () => {
      const page = await open('/projects')
      await page.getByRole('button', { name: 'New project' }).click()
      let dialog = page.getByRole('dialog', { name: 'New project' })
      await dialog.getByLabel('Project name').fill('shop')
      await dialog.getByLabel('Environment').selectOption('staging')
      await dialog.getByRole('textbox', { name: 'Variable', exact: true }).fill('PORT')
      await dialog.getByLabel('Value of PORT').fill('8080')
      await dialog.getByRole('button', { name: 'Create project' }).click()
      await page.getByRole('heading', { level: 1, name: 'shop' }).waitFor()
      await page.locator('.toast', { hasText: 'Added PORT of shop (staging)' }).waitFor()
      await page.getByRole('button', { name: 'Add a variable' }).click()
      dialog = page.getByRole('dialog', { name: 'Add a variable to shop' })
      await dialog.getByRole('textbox', { name: 'Variable', exact: true }).fill('NODE_ENV')
      await dialog.getByLabel('Value of NODE_ENV').fill('production')
      await dialog.getByRole('button', { name: 'Add variable' }).click()
      await dialog.waitFor({ state: 'detached' })
      await page.locator('[data-environment="staging"] h2', { hasText: '2 keys' }).waitFor()
      // No category was needed: both sit in the one group of plain variables.
      const categories = (await client.get('/api/categories')).body.map((c: any) => c.name)
      expect(categories.filter((name: string) => !['OpenAI', 'TLS'].includes(name))).toEqual(['Variables'])
      const exported = (await client.get('/api/export?environment=staging&name=shop')).text
      expect(exported).toContain('PORT=8080')
      expect(exported).toContain('NODE_ENV=production')
      // The page says which projects are which.
      await page.goto(server.url + '/projects')
      await page.locator('main p.muted', { hasText: 'Env projects' }).waitFor()
      await page.goto(server.url + '/envs')
      await page.locator('main p.muted', { hasText: 'Projects' }).waitFor()
      await page.close()
    },
    STEP,
  )

  test(
    'Settings says how many recovery codes are left; the downloaded codes name the vault they open',
    async () => {
      const { recoveryCodes } = await enableTwoFactor(client, clock.now())
      const page = await open('/settings')
      await page.getByText('10 of 10 recovery codes left.').waitFor()
      await page.getByRole('button', { name: 'New recovery codes' }).click()
      const form = page.getByRole('form', { name: 'New recovery codes' })
      await form.getByLabel('Current password').fill(PASSWORD)
      await form.getByLabel('Recovery code').fill(recoveryCodes[0])
      await page.getByRole('button', { name: 'Make new recovery codes' }).click()
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download as a text file' }).click()])
      const host = new URL(server.url).host
      expect(download.suggestedFilename()).toBe(`svc-vault-recovery-codes-${host.replace(':', '_')}.txt`)
      const text = readFileSync((await download.path())!, 'utf8')
      expect(text).toContain(`for alice@example.com at ${new URL(server.url).origin}`)
      await page.getByRole('button', { name: 'I saved them' }).click()
      await page.getByText('10 of 10 recovery codes left.').waitFor()
      await page.close()
    },
    STEP,
  )

  test(
    'axe: no serious or critical violation on the new and changed views, light and dark, 1280 and 390 px',
    async () => {
      const page = await open('/projects')
      const found: string[] = []
      await page.getByRole('button', { name: 'New project' }).click()
      found.push(...(await axeEveryWay(page, 'New project dialog', () => page.getByRole('dialog').waitFor())))
      await page.keyboard.press('Escape')
      await page.goto(server.url + '/projects/blog')
      await page.getByRole('button', { name: 'Add a variable' }).click()
      found.push(...(await axeEveryWay(page, 'Add a variable dialog', () => page.getByRole('dialog').waitFor())))
      await page.keyboard.press('Escape')
      for (const [path, title] of [
        ['/projects', 'Projects'],
        ['/projects/blog', 'blog'],
        ['/envs', 'Env projects'],
        ['/trash', 'Trash'],
        ['/activity', 'Activity'],
        ['/settings', 'Settings'],
        ['/keys', 'Keys'],
      ] as const) {
        await page.goto(server.url + path)
        found.push(...(await axeEveryWay(page, path, () => page.getByRole('heading', { level: 1, name: title }).waitFor())))
      }
      await page
        .locator('[data-category="TLS"] [data-entry="blog"]')
        .getByRole('button', { name: /^Reveal/ })
        .click()
      found.push(...(await axeEveryWay(page, '/keys revealed PEM', () => page.locator('.secret').first().waitFor())))
      expect(found).toEqual([])
      await page.close()
    },
    STEP * 2,
  )
})
