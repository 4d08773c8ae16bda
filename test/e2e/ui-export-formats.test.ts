// Issue 30 in the browser: the Export page offers project, environment and format, the Projects
// page's download picks the format (Bun by default), and a refusal shows the variable it names.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { hasChromium, openBrowser, type BrowserSession } from '../support/browser'
import { signUp, type Client } from '../support/client'
import { READERS } from '../support/env-readers'
import { signInBrowser } from '../support/page-session'
import { startTestServer, type TestServer } from '../support/server'

const STEP = 30_000
const PASSWORD = 'pa$$w0rd "quoted" $HOME'
const KEY = '-----BEGIN KEY-----\nabc\n-----END KEY-----'
let server: TestServer
let browser: BrowserSession
let client: Client & { email: string }

describe.skipIf(!hasChromium())('web page: export formats (issue 30)', () => {
  beforeAll(async () => {
    server = await startTestServer()
    client = await signUp(server.url)
    const app = (await client.post('/api/categories', { name: 'App', keyType: 'group', fieldDefinitions: ['DB_PASSWORD', 'TLS_KEY'] })).body
    await client.post('/api/entries', {
      categoryId: app.id,
      name: 'shop',
      value: JSON.stringify({ DB_PASSWORD: PASSWORD, TLS_KEY: KEY }),
      environment: 'production',
    })
    await client.post('/api/entries', { categoryId: app.id, name: 'blog', value: JSON.stringify({ DB_PASSWORD: 'other' }), environment: 'production' })
    browser = await openBrowser(server.url)
    await signInBrowser(browser, server.url, client.email)
  }, 20_000)

  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  test(
    'Export page: project, environment and format; the file is what the reader reads back; a refusal names the variable',
    async () => {
      const page = browser.page
      await page.goto(server.url + '/export')
      await page.getByLabel('Project').selectOption('shop')
      await page.getByLabel('Environment').selectOption('production')
      await page.getByLabel('Format').selectOption('bun')
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download .env' }).click()])
      const text = readFileSync((await download.path())!, 'utf8')
      expect(await READERS['bun --env-file'](text, ['DB_PASSWORD', 'TLS_KEY'])).toEqual({ DB_PASSWORD: PASSWORD, TLS_KEY: KEY })
      await page.getByLabel('Format').selectOption('yaml')
      const [yaml] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download .yaml' }).click()])
      expect(yaml.suggestedFilename()).toBe('svc-export.yaml')
      // docker cannot carry the key's line breaks: the server's 400 is shown, naming it.
      await page.getByLabel('Format').selectOption('docker')
      await page.getByRole('button', { name: 'Download .env' }).click()
      await page
        .getByText(/TLS_KEY holds a line break/)
        .first()
        .waitFor()
      // The browser logs the refused request itself; nothing else went wrong.
      expect(browser.errors.filter((error) => !error.includes('status of 400'))).toEqual([])
      browser.errors.length = 0
    },
    STEP,
  )

  test(
    'Projects page: the download picks the format, Bun by default',
    async () => {
      const page = browser.page
      await page.goto(server.url + '/projects/shop')
      const card = page.locator('[data-environment="production"]')
      const format = card.getByLabel('Export format: shop (production)')
      expect(await format.inputValue()).toBe('bun')
      const [download] = await Promise.all([page.waitForEvent('download'), card.getByRole('button', { name: 'Download .env: shop (production)' }).click()])
      expect(download.suggestedFilename()).toBe('shop.production.env')
      expect(await READERS['bun run (.env)'](readFileSync((await download.path())!, 'utf8'), ['DB_PASSWORD'])).toEqual({ DB_PASSWORD: PASSWORD })
      await format.selectOption('json')
      const [json] = await Promise.all([page.waitForEvent('download'), card.getByRole('button', { name: 'Download .json: shop (production)' }).click()])
      expect(json.suggestedFilename()).toBe('shop.production.json')
      expect(JSON.parse(readFileSync((await json.path())!, 'utf8'))).toEqual({ DB_PASSWORD: PASSWORD, TLS_KEY: KEY })
      expect(browser.errors).toEqual([])
    },
    STEP,
  )
})
