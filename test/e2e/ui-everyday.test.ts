// Issue 23, the page's part, in real headless Chromium: nothing typed is lost without asking, values
// keep their bytes (multi-line too), names are never cut silently, the page fits a phone, dialogs
// handle focus, and labels and contrast hold for screen readers and low vision. Each test names
// the guarantee it checks; the data comes in through the API, so each test stands alone.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { hasChromium, openBrowser, type BrowserSession } from '../support/browser'
import { Client, PASSWORD, signUp } from '../support/client'
import { created, openTab, seedOtherPages, signInBrowser as signIn } from '../support/page-session'
import { startTestServer, type TestServer } from '../support/server'

const STEP = 45_000
const PEM = [
  '-----BEGIN PRIVATE KEY-----',
  'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj',
  'MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu',
  '+/3jrL9Q2g==',
  '-----END PRIVATE KEY-----',
  '',
].join('\n')
const LONG_NAME = 'n'.repeat(200)

let server: TestServer
let browser: BrowserSession
/** The test's own session (for checks through the API); the browser signs in separately. */
let client: Client & { email: string }
let browserCookie: string
const ids: Record<string, string> = {}

async function signInBrowser(): Promise<void> {
  browserCookie = await signIn(browser, server.url, client.email)
}

/** A new tab on `path`, signed in, at this viewport. */
const open = (path: string, viewport?: { width: number; height: number }): Promise<Page> => openTab(browser, server.url, path, viewport)

const reveal = async (id: string) => (await client.post(`/api/entries/${id}/reveal`)).body.value
const dialogNamed = (page: Page, name: string) => page.getByRole('dialog', { name })
const question = (page: Page) => page.getByRole('dialog', { name: 'Are you sure?' })

/** Relative luminance and contrast ratio (WCAG 2.x) of two CSS rgb() colours. */
function contrast(foreground: string, background: string): number {
  const channels = (color: string) => {
    const match = /rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)/.exec(color)
    if (!match) throw new Error(`not an rgb colour: ${color}`)
    return [match[1], match[2], match[3]].map(Number)
  }
  const luminance = (color: string) => {
    const [r, g, b] = channels(color).map((value) => {
      const c = value / 255
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
    })
    return 0.2126 * r + 0.7152 * g + 0.0722 * b
  }
  const [light, dark] = [luminance(foreground), luminance(background)].sort((a, b) => b - a)
  return (light + 0.05) / (dark + 0.05)
}

describe.skipIf(!hasChromium())('web page: everyday use loses nothing (issue 23)', () => {
  beforeAll(async () => {
    server = await startTestServer()
    client = await signUp(server.url)
    const openai = await created(client.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' }))
    const database = await created(client.post('/api/categories', { name: 'Database', keyType: 'group', fieldDefinitions: ['DB_HOST', 'DB_PASSWORD'] }))
    const misc = await created(client.post('/api/categories', { name: 'Misc', keyType: 'group' }))
    const tls = await created(client.post('/api/categories', { name: 'TLS', keyType: 'simple', envVarName: 'TLS_KEY' }))
    await created(
      client.post('/api/categories', {
        name: 'Wide',
        keyType: 'group',
        fieldDefinitions: Array.from({ length: 12 }, (_, index) => `A_RATHER_LONG_FIELD_NAME_${index}`),
      }),
    )
    const long = await created(client.post('/api/categories', { name: LONG_NAME, keyType: 'simple', envVarName: 'LONG_NAMED' }))
    ids.openai = openai.id
    ids.database = database.id
    ids.misc = misc.id
    ids.tls = tls.id
    ids.openaiBlog = (await created(client.post('/api/entries', { categoryId: openai.id, name: 'my-blog', value: 'sk-blog', environment: 'production' }))).id
    ids.openaiShop = (await created(client.post('/api/entries', { categoryId: openai.id, name: 'shop', value: 'sk-shop', environment: 'staging' }))).id
    ids.db = (
      await created(
        client.post('/api/entries', {
          categoryId: database.id,
          name: 'my-blog',
          value: JSON.stringify({ DB_HOST: 'db.internal', DB_PASSWORD: 'old-pass' }),
          environment: 'development',
        }),
      )
    ).id
    ids.misc = (await created(client.post('/api/entries', { categoryId: misc.id, name: 'tools', value: JSON.stringify({ ALPHA: 'a-one', BETA: 'b-two' }) }))).id
    await created(client.post('/api/entries', { categoryId: long.id, name: LONG_NAME, value: 'x' }))
    ids.project = await seedOtherPages(client)
    browser = await openBrowser(server.url)
    await signInBrowser()
  }, 30_000)

  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  test(
    'editing one field of a group entry keeps the others; an undeclared group shows its field names',
    async () => {
      const page = await open('/keys')
      // Declared fields: only DB_PASSWORD is typed; DB_HOST must survive the PUT.
      await page.locator('[data-category="Database"] [data-entry="my-blog"]').getByRole('button', { name: 'Edit Database of my-blog (development)' }).click()
      let dialog = dialogNamed(page, 'Edit Database of my-blog (development)')
      await dialog.getByLabel('Value of DB_PASSWORD').fill('new-pass')
      await dialog.getByRole('button', { name: 'Save' }).click()
      await dialog.waitFor({ state: 'detached' })
      expect(await reveal(ids.db)).toEqual({ DB_HOST: 'db.internal', DB_PASSWORD: 'new-pass' })

      // No declared fields: the form lists ALPHA and BETA; changing BETA keeps ALPHA.
      await page.locator('[data-category="Misc"] [data-entry="tools"]').getByRole('button', { name: 'Edit Misc of tools' }).click()
      dialog = dialogNamed(page, 'Edit Misc of tools')
      const names = dialog.getByRole('textbox', { name: 'Field name' })
      expect(await names.nth(1).inputValue()).toBe('BETA')
      expect(await names.evaluateAll((inputs) => inputs.map((input) => (input as HTMLInputElement).value))).toEqual(['ALPHA', 'BETA'])
      await dialog.getByLabel('Value of BETA').fill('b-new')
      await dialog.getByRole('button', { name: 'Add field' }).click()
      await names.nth(2).fill('GAMMA')
      await dialog.getByLabel('Value of GAMMA').fill('g-three')
      await dialog.getByRole('button', { name: 'Save' }).click()
      await dialog.waitFor({ state: 'detached' })
      expect(await reveal(ids.misc)).toEqual({ ALPHA: 'a-one', BETA: 'b-new', GAMMA: 'g-three' })

      // Notes only: the value is not touched at all.
      await page.locator('[data-category="Misc"] [data-entry="tools"]').getByRole('button', { name: 'Edit Misc of tools' }).click()
      dialog = dialogNamed(page, 'Edit Misc of tools')
      await dialog.getByLabel('Notes (optional)').fill('build tools')
      await dialog.getByRole('button', { name: 'Save' }).click()
      await dialog.waitFor({ state: 'detached' })
      expect(await reveal(ids.misc)).toEqual({ ALPHA: 'a-one', BETA: 'b-new', GAMMA: 'g-three' })

      // Remove drops one field and keeps the rest.
      await page.locator('[data-category="Misc"] [data-entry="tools"]').getByRole('button', { name: 'Edit Misc of tools' }).click()
      dialog = dialogNamed(page, 'Edit Misc of tools')
      await dialog.getByRole('button', { name: 'Remove field GAMMA' }).click()
      await dialog.getByRole('button', { name: 'Save' }).click()
      await dialog.waitFor({ state: 'detached' })
      expect(await reveal(ids.misc)).toEqual({ ALPHA: 'a-one', BETA: 'b-new' })
      await page.close()
    },
    STEP,
  )

  test(
    'a pasted PEM key keeps its line breaks, byte for byte, in a masked field',
    async () => {
      const page = await open('/keys')
      await page.locator('[data-category="TLS"]').getByRole('button', { name: 'Add entry' }).click()
      const dialog = dialogNamed(page, 'New TLS entry')
      await dialog.getByLabel('Project name').fill('web')
      const value = dialog.getByLabel('Value of TLS_KEY')
      // Masked until shown, like a password field.
      expect(await value.evaluate((element) => getComputedStyle(element).getPropertyValue('-webkit-text-security'))).toBe('disc')
      await page.evaluate((text) => navigator.clipboard.writeText(text), PEM)
      await value.focus()
      await page.keyboard.press('ControlOrMeta+V')
      expect(await value.inputValue()).toBe(PEM)
      await dialog.getByRole('button', { name: 'Show TLS_KEY' }).click()
      expect(await value.evaluate((element) => getComputedStyle(element).getPropertyValue('-webkit-text-security'))).toBe('none')
      await dialog.getByRole('button', { name: 'Add entry' }).click()
      await dialog.waitFor({ state: 'detached' })
      const entries = (await client.get('/api/entries')).body as { id: string; name: string; categoryId: string }[]
      const stored = entries.find((entry) => entry.categoryId === ids.tls && entry.name === 'web')!
      const revealed: string = await reveal(stored.id)
      expect(Buffer.from(revealed, 'utf8').equals(Buffer.from(PEM, 'utf8'))).toBe(true)

      // A group field takes several lines as well.
      await page.locator('[data-category="Database"]').getByRole('button', { name: 'Add entry' }).click()
      const group = dialogNamed(page, 'New Database entry')
      await group.getByLabel('Project name').fill('pem-group')
      await group.getByLabel('Value of DB_HOST').fill('h')
      await group.getByLabel('Value of DB_PASSWORD').focus()
      await page.keyboard.press('ControlOrMeta+V')
      await group.getByRole('button', { name: 'Add entry' }).click()
      await group.waitFor({ state: 'detached' })
      const all = (await client.get('/api/entries')).body as { id: string; name: string }[]
      expect((await reveal(all.find((entry) => entry.name === 'pem-group')!.id)).DB_PASSWORD).toBe(PEM)
      await page.close()
    },
    STEP,
  )

  test(
    'a name over 200 characters is kept whole and refused with a message, not cut',
    async () => {
      const page = await open('/keys')
      await page.getByRole('button', { name: 'New category' }).click()
      const dialog = dialogNamed(page, 'New category')
      const name = 'k'.repeat(230)
      await dialog.getByLabel('Name').fill(name)
      expect(await dialog.getByLabel('Name').inputValue()).toBe(name)
      await dialog.getByText('at most 200 are allowed').first().waitFor()
      await dialog.getByLabel('Environment variable').fill('TOO_LONG')
      await dialog.getByRole('button', { name: 'Create category' }).click()
      await dialog.getByRole('alert').filter({ hasText: 'The name is 230 characters long' }).first().waitFor()
      expect(((await client.get('/api/categories')).body as { name: string }[]).some((category) => category.name.startsWith('kkk'))).toBe(false)
      // Shortened, it goes through.
      await dialog.getByLabel('Name').fill('k'.repeat(200))
      expect(await dialog.locator('.length-note').count()).toBe(0)
      await dialog.getByRole('button', { name: 'Create category' }).click()
      await dialog.waitFor({ state: 'detached' })
      expect(((await client.get('/api/categories')).body as { name: string }[]).some((category) => category.name === 'k'.repeat(200))).toBe(true)

      // The same on the other forms that had a silent maxLength.
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Access keys' }).click()
      await page.getByLabel('Name').fill('a'.repeat(201))
      expect(await page.getByLabel('Name').inputValue()).toHaveLength(201)
      await page.getByText('at most 200 are allowed').waitFor()
      await page.close()
    },
    STEP,
  )

  test(
    'switching the env-file tab, an upload over a file, and leaving the page ask before discarding',
    async () => {
      // Reached from the list inside the page, so Back is a step within the page (popstate).
      const page = await open('/envs')
      await page.getByRole('link', { name: /site/ }).click()
      const editor = page.getByLabel('Contents of .env', { exact: true })
      expect(await editor.inputValue()).toBe('SAVED=1\n')
      await editor.fill('SAVED=1\nTYPED=unsaved\n')
      await page.getByRole('tab', { name: '.env.local' }).click()
      await question(page).getByRole('button', { name: 'Cancel' }).click()
      await question(page).waitFor({ state: 'detached' })
      expect(await editor.inputValue()).toBe('SAVED=1\nTYPED=unsaved\n')
      expect(await page.getByRole('tab', { name: '.env', exact: true }).getAttribute('aria-selected')).toBe('true')

      // An upload over the existing file asks; declined, nothing changes on the server.
      await page.locator('input[type="file"]').setInputFiles({ name: 'other.env', mimeType: 'text/plain', buffer: Buffer.from('UPLOADED=1\n') })
      await question(page).getByText('Replace .env with “other.env”').waitFor()
      await question(page).getByRole('button', { name: 'Cancel' }).click()
      await question(page).waitFor({ state: 'detached' })
      const files = (await client.get(`/api/envs/${ids.project}`)).body.data.files as { id: string; fileType: string }[]
      const envFile = files.find((file) => file.fileType === 'env')!
      expect((await client.post(`/api/envs/${ids.project}/files/${envFile.id}/reveal`)).body.data.content).toBe('SAVED=1\n')
      expect(await editor.inputValue()).toBe('SAVED=1\nTYPED=unsaved\n')

      // In-app navigation asks too; declined, the text stays.
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Keys', exact: true }).click()
      await question(page).getByRole('button', { name: 'Cancel' }).click()
      expect(new URL(page.url()).pathname).toBe(`/envs/${ids.project}`)
      expect(await editor.inputValue()).toBe('SAVED=1\nTYPED=unsaved\n')
      // So does the browser's Back button.
      await page.goBack().catch(() => undefined)
      await question(page).getByRole('button', { name: 'Cancel' }).click()
      expect(new URL(page.url()).pathname).toBe(`/envs/${ids.project}`)
      expect(await editor.inputValue()).toBe('SAVED=1\nTYPED=unsaved\n')

      // Leaving the page (reload, close, another address): the browser's own question.
      const asked = new Promise<string>((resolve) => page.once('dialog', (dialog) => (resolve(dialog.type()), void dialog.dismiss())))
      await page.close({ runBeforeUnload: true })
      expect(await asked).toBe('beforeunload')
      expect(page.isClosed()).toBe(false)

      // Discarding on the tab switch goes on.
      await page.getByRole('tab', { name: '.env.local' }).click()
      await question(page).getByRole('button', { name: 'Discard' }).click()
      await page.getByLabel('Contents of .env.local').waitFor()
      await page.close()
    },
    STEP,
  )

  test(
    'Escape, the backdrop and Cancel ask before a dialog with typed text closes',
    async () => {
      const page = await open('/2fa')
      await page.getByRole('button', { name: 'Add token' }).click()
      const dialog = dialogNamed(page, 'Add a 2FA token')
      await dialog.getByLabel('Service').fill('Typed service')
      await page.keyboard.press('Escape')
      await question(page).getByRole('button', { name: 'Cancel' }).click()
      await question(page).waitFor({ state: 'detached' })
      expect(await dialog.getByLabel('Service').inputValue()).toBe('Typed service')
      // The backdrop (outside the dialog box).
      await page.mouse.click(5, 400)
      await question(page).getByRole('button', { name: 'Cancel' }).click()
      expect(await dialog.getByLabel('Service').inputValue()).toBe('Typed service')
      await dialog.getByRole('button', { name: 'Cancel' }).click()
      await question(page).getByRole('button', { name: 'Discard' }).click()
      await dialog.waitFor({ state: 'detached' })
      // Nothing typed: Escape closes at once.
      await page.getByRole('button', { name: 'Add token' }).click()
      await dialog.waitFor()
      await page.keyboard.press('Escape')
      await dialog.waitFor({ state: 'detached' })
      expect(await question(page).count()).toBe(0)
      await page.close()
    },
    STEP,
  )

  test(
    'an expired session on Save: sign in again, back on the same page with the text, never in storage',
    async () => {
      try {
        const page = await open('/keys')
        await page.locator('[data-category="OpenAI"]').getByRole('button', { name: 'Add entry' }).click()
        const dialog = dialogNamed(page, 'New OpenAI entry')
        await dialog.getByLabel('Project name').fill('after-expiry')
        await dialog.getByLabel('Value of OPENAI_API_KEY').fill('sk-typed-before-expiry')
        // The session ends on the server (signed out elsewhere, or expired).
        expect((await new Client(server.url, { cookie: browserCookie }).post('/api/auth/logout')).status).toBeLessThan(300)
        await dialog.getByRole('button', { name: 'Add entry' }).click()
        await page.getByText('Your session has ended').first().waitFor()
        // The page waits out of sight (and out of reach) under the sign-in form.
        expect(await page.locator('.shell').isVisible()).toBe(false)
        expect(await page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.name)).toBe('password')
        const stored = await page.evaluate(() => JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage }, cookie: document.cookie }))
        expect(stored).not.toContain('sk-typed-before-expiry')
        expect(stored).not.toContain('after-expiry')
        expect((await browser.context.cookies()).some((cookie) => cookie.value.includes('sk-typed'))).toBe(false)
        await page.getByLabel('Password').fill(PASSWORD)
        await page.getByRole('button', { name: 'Sign in' }).click()
        await dialog.waitFor()
        expect(new URL(page.url()).pathname).toBe('/keys')
        expect(await dialog.getByLabel('Project name').inputValue()).toBe('after-expiry')
        expect(await dialog.getByLabel('Value of OPENAI_API_KEY').inputValue()).toBe('sk-typed-before-expiry')
        await dialog.getByRole('button', { name: 'Add entry' }).click()
        await dialog.waitFor({ state: 'detached' })
        const entries = (await client.get('/api/entries')).body as { id: string; name: string }[]
        expect(await reveal(entries.find((entry) => entry.name === 'after-expiry')!.id)).toBe('sk-typed-before-expiry')
        await page.close()
      } finally {
        // Whatever happened, the next tests start signed in.
        await signInBrowser()
      }
    },
    STEP,
  )

  for (const width of [360, 390]) {
    test(
      `at ${width} px every page fits, the navigation shows every section, the dialog's button is on-screen`,
      async () => {
        const viewport = { width, height: 740 }
        const page = await open('/', viewport)
        const pages = [
          '/',
          '/projects',
          '/projects/my-blog',
          `/projects/${encodeURIComponent(LONG_NAME)}`,
          '/keys',
          '/2fa',
          '/envs',
          `/envs/${ids.project}`,
          '/import',
          '/access-keys',
          '/export',
        ]
        for (const path of pages) {
          await page.goto(server.url + path)
          await page.locator('main h1').first().waitFor()
          await page.waitForLoadState('networkidle')
          const width = await page.evaluate(() => document.documentElement.scrollWidth)
          expect({ path, width }).toEqual({ path, width: viewport.width })
        }
        // Every section's link is on screen: none hidden past the edge of a scrolling strip.
        await page.goto(server.url + '/keys')
        await page.locator('main h1').first().waitFor()
        for (const label of ['Dashboard', 'Projects', 'Keys', '2FA', 'Env projects', 'Import', 'Access keys', 'Export']) {
          const box = (await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: label, exact: true }).boundingBox())!
          expect({ label, inside: box.x >= 0 && box.x + box.width <= viewport.width }).toEqual({ label, inside: true })
        }
        // The long names wrap instead of widening the page.
        await page.getByText(LONG_NAME).first().waitFor()
        expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBe(viewport.width)
        await page.getByRole('button', { name: 'New category' }).click()
        const button = dialogNamed(page, 'New category').getByRole('button', { name: 'Create category' })
        await button.scrollIntoViewIfNeeded()
        const box = (await button.boundingBox())!
        expect(box.x).toBeGreaterThanOrEqual(0)
        expect(box.x + box.width).toBeLessThanOrEqual(viewport.width)
        expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBe(viewport.width)
        await page.close()
      },
      STEP,
    )
  }

  test(
    'no gap under nested labels in a form row (Access keys, Import)',
    async () => {
      const page = await open('/access-keys')
      const gaps = async () =>
        page.evaluate(() =>
          [...document.querySelectorAll('.form-row > .field')].map((field) => {
            const control = field.querySelector('input, select')!
            return Math.round(field.getBoundingClientRect().bottom - control.getBoundingClientRect().bottom)
          }),
        )
      for (const gap of await gaps()) expect(gap).toBeLessThanOrEqual(4)
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Import' }).click()
      await page.getByLabel('Config to import').fill('STRIPE_SECRET_KEY=sk_live_abc\n')
      await page.getByRole('button', { name: 'Suggest categories' }).click()
      await page.getByLabel('Project name (entry name)').waitFor()
      const importGaps = await gaps()
      expect(importGaps.length).toBe(2)
      for (const gap of importGaps) expect(gap).toBeLessThanOrEqual(4)
      await page.getByLabel('Config to import').fill('')
      await page.close()
    },
    STEP,
  )

  test(
    'dialogs take focus, keep Tab inside, close on Escape and give focus back',
    async () => {
      const page = await open('/keys')
      const opener = page.getByRole('button', { name: 'New category' })
      await opener.focus()
      await page.keyboard.press('Enter')
      const dialog = dialogNamed(page, 'New category')
      await dialog.waitFor()
      const inDialog = () => page.evaluate(() => document.activeElement?.closest('[role="dialog"]')?.getAttribute('aria-labelledby') ?? null)
      expect(await inDialog()).not.toBeNull()
      expect(await page.evaluate(() => (document.activeElement as HTMLInputElement).name)).toBe('name')
      for (let i = 0; i < 20; i++) {
        await page.keyboard.press('Tab')
        expect(await inDialog()).not.toBeNull()
      }
      for (let i = 0; i < 6; i++) {
        await page.keyboard.press('Shift+Tab')
        expect(await inDialog()).not.toBeNull()
      }
      await page.keyboard.press('Escape')
      await dialog.waitFor({ state: 'detached' })
      await page.waitForFunction(() => document.activeElement?.textContent?.trim() === 'New category')
      // The confirmation dialog does the same, and Escape there answers “no”.
      const remove = page.getByRole('button', { name: 'Delete OPENAI_API_KEY of shop (staging)' })
      await remove.click()
      await question(page).waitFor()
      expect(await page.evaluate(() => document.activeElement?.closest('[role="dialog"]') !== null)).toBe(true)
      await page.keyboard.press('Escape')
      await question(page).waitFor({ state: 'detached' })
      await page.waitForFunction(() => document.activeElement?.getAttribute('aria-label') === 'Delete OPENAI_API_KEY of shop (staging)')
      expect((await client.get('/api/entries')).body.some((entry: { name: string }) => entry.name === 'shop')).toBe(true)
      await page.close()
    },
    STEP,
  )

  test(
    'screen readers hear the 2FA digits and which entry a Reveal or Copy button is for; toasts reach AA',
    async () => {
      const page = await open('/2fa')
      await page.getByRole('button', { name: /^Code for GitHub: \d{3} \d{3}, copy$/ }).waitFor()

      await page.goto(server.url + '/keys')
      const row = page.locator('[data-category="OpenAI"] [data-entry="my-blog"]')
      await row.getByRole('button', { name: 'Reveal OPENAI_API_KEY of my-blog (production)', exact: true }).click()
      await row.getByRole('button', { name: 'Copy OPENAI_API_KEY of my-blog (production)', exact: true }).click()
      await page.getByRole('button', { name: 'Reveal OPENAI_API_KEY of shop (staging)', exact: true }).waitFor()

      for (const scheme of ['dark', 'light'] as const) {
        await page.emulateMedia({ colorScheme: scheme })
        // An error toast: revealing an entry that is gone.
        const gone = await created(client.post('/api/entries', { categoryId: ids.openai, name: `gone-${scheme}`, value: 'v' }))
        await page.reload()
        await page.locator(`[data-entry="gone-${scheme}"]`).waitFor()
        await client.delete(`/api/entries/${gone.id}`)
        await page
          .locator(`[data-entry="gone-${scheme}"]`)
          .getByRole('button', { name: /^Reveal/ })
          .click()
        const toast = page.locator('.toast-error').first()
        await toast.waitFor()
        const colors = await toast.evaluate((element) => [getComputedStyle(element).color, getComputedStyle(element).backgroundColor])
        expect({ scheme, ratio: contrast(colors[0], colors[1]) >= 4.5 }).toEqual({ scheme, ratio: true })
        // The confirmation's red button too.
        await page.getByRole('button', { name: 'Delete OPENAI_API_KEY of shop (staging)' }).click()
        const danger = question(page).getByRole('button', { name: 'Delete' })
        const buttonColors = await danger.evaluate((element) => [getComputedStyle(element).color, getComputedStyle(element).backgroundColor])
        expect({ scheme, button: contrast(buttonColors[0], buttonColors[1]) >= 4.5 }).toEqual({ scheme, button: true })
        await question(page).getByRole('button', { name: 'Cancel' }).click()
      }
      await page.close()
    },
    STEP,
  )

  test(
    'search finds field names and environments',
    async () => {
      const page = await open('/keys')
      const search = page.getByLabel('Search keys')
      await search.fill('db_password')
      await page.locator('[data-category="Database"]').waitFor()
      expect(await page.locator('[data-category="OpenAI"]').count()).toBe(0)
      await search.fill('staging')
      await page.locator('[data-category="OpenAI"] [data-entry="shop"]').waitFor()
      expect(await page.locator('[data-category="OpenAI"] [data-entry="my-blog"]').count()).toBe(0)
      expect(await page.locator('[data-category="Database"]').count()).toBe(0)
      await page.close()
    },
    STEP,
  )

  for (const viewport of [
    { width: 1280, height: 520 },
    { width: 390, height: 700 },
  ]) {
    test(
      `toasts do not cover row buttons (${viewport.width} px)`,
      async () => {
        const page = await open('/keys', viewport)
        // The last row's buttons at the bottom right of the window, where toasts used to sit.
        const row = page.locator('[data-category="OpenAI"] [data-entry="shop"]')
        await row.getByRole('button', { name: /^Reveal/ }).click()
        const copy = row.getByRole('button', { name: /^Copy/ })
        await copy.evaluate((element) => element.scrollIntoView({ block: 'end' }))
        await copy.click()
        await page.locator('.toast').first().waitFor()
        const covered = await page.evaluate(() => {
          const toasts = [...document.querySelectorAll('.toast')].map((toast) => toast.getBoundingClientRect())
          const problems: string[] = []
          // What scrolled under the sticky top bar is out of sight anyway.
          const top = document.querySelector('.topbar')!.getBoundingClientRect().bottom
          for (const button of document.querySelectorAll<HTMLElement>('main button')) {
            const rect = button.getBoundingClientRect()
            if (rect.width === 0 || rect.bottom <= top || rect.top > innerHeight) continue
            const box = {
              left: rect.left,
              right: rect.right,
              top: Math.max(rect.top, top),
              bottom: rect.bottom,
              width: rect.width,
              height: rect.bottom - Math.max(rect.top, top),
            }
            if (toasts.some((toast) => toast.left < box.right && toast.right > box.left && toast.top < box.bottom && toast.bottom > box.top))
              problems.push(`${button.textContent} overlaps`)
            const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2)
            if (hit && !button.contains(hit) && hit.closest('.toasts')) problems.push(`${button.textContent} under a toast`)
          }
          return problems
        })
        expect(covered).toEqual([])
        await page.close()
      },
      STEP,
    )
  }

  test(
    '2FA codes with 8 digits and a 60 s period are shown whole (the server’s code; API from the 2FA branch mocked)',
    async () => {
      const page = await browser.context.newPage()
      const tokens = (await client.get('/api/2fa')).body as { id: string }[]
      await page.route('**/api/2fa', (route) =>
        route.request().method() === 'GET'
          ? route.fulfill({ json: [{ ...tokens[0], service: 'Bank', algorithm: 'SHA256', digits: 8, period: 60 }] })
          : route.continue(),
      )
      await page.route('**/api/2fa/*/reveal', (route) => route.fulfill({ json: { id: tokens[0].id, code: '12345678', remainingSeconds: 45 } }))
      await page.goto(server.url + '/2fa')
      const card = page.locator('[data-token="Bank"]')
      await card.getByRole('button', { name: 'Code for Bank: 1234 5678, copy' }).waitFor()
      expect(await card.locator('.token-digits').textContent()).toBe('1234 5678')
      await card.getByText('SHA256 · 8 digits · every 60 s').waitFor()
      const seconds = Number(await card.locator('.countdown-text').textContent())
      expect(seconds).toBeGreaterThan(30)
      expect(seconds).toBeLessThanOrEqual(45)
      await card.getByRole('button', { name: /^Code for Bank/ }).click()
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('12345678')
      await page.close()
    },
    STEP,
  )

  test(
    'an ambiguous environment export (409 AMBIGUOUS_EXPORT) offers the choice of project (answer mocked)',
    async () => {
      const page = await open('/export')
      const asked: string[] = []
      await page.route('**/api/export?*', (route) => {
        const url = new URL(route.request().url())
        asked.push(url.search)
        if (url.searchParams.get('environment') && !url.searchParams.get('name')) {
          return route.fulfill({
            status: 409,
            json: {
              error: 'OPENAI_API_KEY is set by several projects: my-blog, shop',
              code: 'AMBIGUOUS_EXPORT',
              variable: 'OPENAI_API_KEY',
              projects: ['shop', 'my-blog'],
            },
          })
        }
        return route.continue()
      })
      await page.getByLabel('Environment').selectOption('production')
      await page.getByRole('button', { name: 'Download .env' }).click()
      await page.getByRole('alert').getByText('OPENAI_API_KEY comes from more than one project for production (my-blog, shop).').waitFor()
      expect(await page.getByRole('button', { name: 'Download .env' }).isDisabled()).toBe(true)
      const choice = page.getByLabel('Project')
      expect(await choice.locator('option').allTextContents()).toEqual(['Choose a project…', 'my-blog', 'shop'])
      await choice.selectOption('my-blog')
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download .env' }).click()])
      expect(asked.at(-1)).toBe('?environment=production&name=my-blog')
      expect(require('node:fs').readFileSync((await download.path())!, 'utf8')).toContain('OPENAI_API_KEY=sk-blog')
      await page.close()
    },
    STEP,
  )

  test(
    'import suggestions show whether each category exists or is new (reuse flag mocked)',
    async () => {
      const page = await open('/import')
      await page.route('**/api/ai/import', async (route) => {
        const body = JSON.parse(route.request().postData() ?? '{}')
        if (body.apply) return route.continue()
        const answer = await route.fetch()
        const json = await answer.json()
        for (const key of json.data.keys) key.reuse = key.categoryName === 'OpenAI'
        return route.fulfill({ response: answer, json })
      })
      await page.getByLabel('Config to import').fill('OPENAI_API_KEY=sk-x\nRESEND_API_KEY=re_1\n')
      await page.getByRole('button', { name: 'Suggest categories' }).click()
      const groups = page.locator('.import-group')
      await groups.first().waitFor()
      const badges = await groups.evaluateAll((items) =>
        items.map((item) => [item.querySelector('.import-category')!.textContent!.includes('OpenAI'), item.querySelector('.badge')?.textContent ?? null]),
      )
      expect(badges.length).toBeGreaterThanOrEqual(2)
      for (const [isOpenAi, badge] of badges) expect(badge).toBe(isOpenAi ? 'existing' : 'new')
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme })
        for (const badge of await page.locator('.import-group .badge').all()) {
          const [color, background] = await badge.evaluate((element) => [getComputedStyle(element).color, getComputedStyle(element).backgroundColor])
          expect({ scheme, aa: contrast(color, background) >= 4.5 }).toEqual({ scheme, aa: true })
        }
      }
      await page.getByLabel('Config to import').fill('')
      await page.close()
    },
    STEP,
  )

  test('no script errors on any page', () => {
    expect(browser.errors.filter((error) => error.startsWith('page error'))).toEqual([])
  })
})
