// The page follows what the server answers for the parts of issue 23 that the API side adds
// (2FA algorithm/digits/period, 409 AMBIGUOUS_EXPORT, import `reuse`). Each test asks the server
// first and holds the page to that answer, so it checks the real path once the API side is in,
// and the page's fallback before (ui-everyday.test.ts covers the new answers with mocked replies).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { hasChromium, openBrowser, type BrowserSession } from '../support/browser'
import { signUp, type Client } from '../support/client'
import { signInBrowser } from '../support/page-session'
import { startTestServer, type TestServer } from '../support/server'

const STEP = 30_000
let server: TestServer
let browser: BrowserSession
let client: Client & { email: string }

describe.skipIf(!hasChromium())('web page follows the API answers (issue 23)', () => {
  beforeAll(async () => {
    server = await startTestServer()
    client = await signUp(server.url)
    browser = await openBrowser(server.url)
    await signInBrowser(browser, server.url, client.email)
  }, 20_000)

  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  test(
    'a 2FA token from a SHA256 / 8-digit / 60 s link shows the server’s code, digits as the token says',
    async () => {
      const secret = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ'
      const made = await client.post('/api/2fa', {
        service: 'Bank',
        accountName: 'a',
        secret: `otpauth://totp/Bank:a?secret=${secret}&algorithm=SHA256&digits=8&period=60`,
      })
      expect(made.status).toBe(201)
      const token = (await client.get('/api/2fa')).body.find((item: { service: string }) => item.service === 'Bank')
      const digits: number = token.digits ?? 6
      const page = browser.page
      await page.goto(server.url + '/2fa')
      const codes = async () => (await client.post(`/api/2fa/${token.id}/reveal`)).body.code as string
      const before = await codes()
      await page.waitForFunction(
        (count) => (document.querySelector('.token-digits')?.textContent ?? '').replace(' ', '').match(new RegExp(`^\\d{${count}}$`)) !== null,
        digits,
      )
      const shown = (await page.locator('.token-digits').textContent())!.replace(' ', '')
      const after = await codes()
      expect([before, after]).toContain(shown)
      if (token.digits !== undefined) {
        expect(shown).toHaveLength(8)
        await page.getByText('SHA256 · 8 digits · every 60 s').waitFor()
      }
    },
    STEP,
  )

  test(
    'an environment export with one variable from two projects: the page offers the choice when the server refuses',
    async () => {
      const category = (await client.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' })).body
      await client.post('/api/entries', { categoryId: category.id, name: 'app-a', value: 'sk-a', environment: 'production' })
      await client.post('/api/entries', { categoryId: category.id, name: 'app-b', value: 'sk-b', environment: 'production' })
      const direct = await client.get('/api/export?environment=production')
      const page = browser.page
      await page.goto(server.url + '/export')
      await page.getByLabel('Environment').selectOption('production')
      if (direct.status === 409) {
        expect(direct.body.code).toBe('AMBIGUOUS_EXPORT')
        await page.getByRole('button', { name: 'Download .env' }).click()
        await page.getByRole('alert').getByText('OPENAI_API_KEY comes from more than one project for production').waitFor()
        await page.getByLabel('Project').selectOption('app-b')
      }
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download .env' }).click()])
      const text = readFileSync((await download.path())!, 'utf8')
      if (direct.status === 409) {
        expect(text).toContain('OPENAI_API_KEY=sk-b')
        expect(text).not.toContain('sk-a')
      } else expect(text).toBe(direct.text)
    },
    STEP,
  )

  test(
    'import suggestions carry “existing” / “new” exactly where the server marks reuse',
    async () => {
      const config = 'OPENAI_API_KEY=sk-x\nRESEND_API_KEY=re_1\n'
      const suggestion = (await client.post('/api/ai/import', { text: config })).body.data as { keys: { categoryName: string; reuse?: boolean }[] }
      const page = browser.page
      await page.goto(server.url + '/import')
      await page.getByLabel('Config to import').fill(config)
      await page.getByRole('button', { name: 'Suggest categories' }).click()
      await page.locator('.import-group').first().waitFor()
      const shown = await page
        .locator('.import-group')
        .evaluateAll((groups) =>
          groups.map((group) => ({ name: group.querySelector('.import-category')!.textContent!, badge: group.querySelector('.badge')?.textContent ?? null })),
        )
      for (const key of suggestion.keys) {
        const group = shown.find((item) => item.name.includes(key.categoryName))!
        expect({ category: key.categoryName, badge: group.badge }).toEqual({
          category: key.categoryName,
          badge: key.reuse === undefined ? null : key.reuse ? 'existing' : 'new',
        })
      }
      await page.getByLabel('Config to import').fill('')
    },
    STEP,
  )
})
