// The Activity page in real Chromium (issue 17): events listed newest first and filtered by action
// and key; an access key's row says where it was last used from and links to its events; the
// dashboard counts failed sign-ins and secret reads of the last 7 days.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { rewriteStoredAuditLines } from '../support/audit-file'
import { hasChromium, openBrowser, type BrowserSession } from '../support/browser'
import { signUp } from '../support/client'
import { removeDir, startTestServer, type TestServer } from '../support/server'

let vault: TestServer
let browser: BrowserSession

describe.skipIf(!hasChromium())('Activity page in Chromium', () => {
  beforeAll(async () => {
    vault = await startTestServer()
    browser = await openBrowser(vault.url)
  }, 30_000)

  afterAll(async () => {
    await browser?.close()
    await vault?.stop()
    if (vault) removeDir(vault.dataDir)
  })

  test('lists, filters, links from a key, and the dashboard card counts', async () => {
    const owner = await signUp(vault.url)
    const category = (await owner.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })).body
    const entry = (await owner.post('/api/entries', { categoryId: category.id, name: 'shop', value: 'sk_live_page_canary' })).body
    const ci = await owner.keyClient(['entries:reveal'], { name: 'ci-deploy' })
    for (let i = 0; i < 2; i++) expect((await ci.post(`/api/entries/${entry.id}/reveal`)).status).toBe(200)
    expect((await owner.anonymous().post('/api/auth/login', { email: owner.email, password: 'wrong password' })).status).toBe(401)

    await browser.context.addCookies([{ name: 'svc_session', value: owner.credentials.cookie!, url: vault.url }])
    const page = browser.page

    // Dashboard: the last 7 days.
    await page.goto(`${vault.url}/`)
    const card = page.locator('.recent-activity')
    await card.getByRole('heading', { name: 'Last 7 days' }).waitFor()
    expect(await card.locator('[data-count="failed-sign-ins"] .activity-count').textContent()).toBe('1')
    expect(await card.locator('[data-count="secret-reads"] .activity-count').textContent()).toBe('2')

    // Activity: newest first, every action of this user.
    await page.getByRole('link', { name: 'Activity', exact: true }).click()
    await page.getByRole('heading', { level: 1, name: 'Activity' }).waitFor()
    const rows = page.locator('.activity-event')
    await rows.first().waitFor()
    const actions = await rows.evaluateAll((items) => items.map((item) => item.getAttribute('data-action')))
    expect(actions).toEqual(['auth.login_failed', 'entry.reveal', 'entry.reveal', 'access_key.create', 'entry.create', 'category.create', 'auth.register'])
    expect(await rows.nth(1).textContent()).toContain('key “ci-deploy” · from 127.0.0.1')
    expect(await page.content()).not.toContain('sk_live_page_canary')

    // Filter by action.
    await page.locator('select[name="action"]').selectOption('entry.reveal')
    await page.waitForFunction(() => document.querySelectorAll('.activity-event').length === 2)
    expect(await rows.evaluateAll((items) => items.map((item) => item.getAttribute('data-action')))).toEqual(['entry.reveal', 'entry.reveal'])
    // A date range that holds nothing.
    await page.locator('input[name="since"]').fill('2020-01-01')
    await page.locator('input[name="until"]').fill('2020-01-02')
    await page.getByText('No activity matches.').waitFor()

    // Access keys: "last used from" and the link to the key's events.
    await page.getByRole('link', { name: 'Access keys' }).click()
    const row = page.locator('.access-key[data-key="ci-deploy"]')
    await row.getByText('Last used from 127.0.0.1').waitFor()
    await row.getByRole('link', { name: 'Its events' }).click()
    await page.getByRole('heading', { level: 1, name: 'Activity' }).waitFor()
    await page.waitForFunction(() => document.querySelectorAll('.activity-event').length === 2)
    expect(await page.locator('select[name="actor"]').inputValue()).not.toBe('')
    expect(await rows.evaluateAll((items) => items.map((item) => item.getAttribute('data-action')))).toEqual(['entry.reveal', 'entry.reveal'])

    // Nothing still in flight when the browser closes (playwright-core then trips over late answers).
    await page.waitForLoadState('networkidle')
    expect(browser.errors).toEqual([])
    expect(browser.cspViolations).toEqual([])
  }, 30_000)

  test('a log found broken when opened is said on the Activity page and the dashboard (issue 29)', async () => {
    const owner = await signUp(vault.url)
    for (let i = 0; i < 4; i++) await owner.post('/api/categories', { name: `b${i}`, keyType: 'group' })
    vault.deps.audit.closeUserLog(owner.user.id)
    await vault.deps.audit.settle()
    await rewriteStoredAuditLines(vault, owner.user.id, (lines) => lines.slice(0, -2))
    // A page of its own: the one the test before left may still have requests in flight.
    await browser.context.addCookies([{ name: 'svc_session', value: owner.credentials.cookie!, url: vault.url }])
    const page = await browser.context.newPage()
    try {
      await page.goto(`${vault.url}/`)
      expect(await page.locator('.recent-activity [data-chain-broken]').textContent()).toMatch(/chain is broken.*2 missing/)
      await page.goto(`${vault.url}/activity`)
      expect(await page.locator('section [data-chain-broken]').first().textContent()).toMatch(/chain is broken.*2 missing.*svc-vault audit-verify/)
      await page.locator('[data-action="chain.broken"]').first().waitFor()
    } finally {
      await page.close()
    }
  }, 30_000)

  test('the 2FA page fetches codes only while it is visible (issue 29)', async () => {
    const owner = await signUp(vault.url)
    expect((await owner.post('/api/2fa', { service: 'GitHub', accountName: 'owner', secret: 'JBSWY3DPEHPK3PXP' })).status).toBe(201)
    const page = await browser.context.newPage()
    try {
      // A background tab: hidden from the start.
      await page.addInitScript(() => {
        ;(window as unknown as { __hidden: boolean }).__hidden = true
        Object.defineProperty(document, 'visibilityState', {
          configurable: true,
          get: () => ((window as unknown as { __hidden: boolean }).__hidden ? 'hidden' : 'visible'),
        })
      })
      const reveals: string[] = []
      page.on('request', (request) => {
        if (request.method() === 'POST' && request.url().endsWith('/reveal')) reveals.push(request.url())
      })
      await browser.context.addCookies([{ name: 'svc_session', value: owner.credentials.cookie!, url: vault.url }])
      await page.goto(`${vault.url}/2fa`)
      await page.locator('[data-token="GitHub"]').waitFor()
      await page.waitForTimeout(600)
      expect(reveals).toEqual([])
      await page.evaluate(() => {
        ;(window as unknown as { __hidden: boolean }).__hidden = false
        document.dispatchEvent(new Event('visibilitychange'))
      })
      await page.waitForResponse((response) => response.url().endsWith('/reveal'))
      expect(reveals.length).toBe(1)
    } finally {
      await page.close()
    }
  }, 30_000)
})
