// Issue 36 in real Chromium: failed sign-ins counted rather than recorded one by one still show on
// the dashboard (as counts) and the Activity page (how many, from where, when); a locked second
// step shows as a warning on the dashboard.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { hasChromium, openBrowser, type BrowserSession } from '../support/browser'
import { signUp } from '../support/client'
import { removeDir, startTestServer, type TestServer } from '../support/server'

let vault: TestServer
let browser: BrowserSession

describe.skipIf(!hasChromium())('failed sign-ins and a locked second step in Chromium', () => {
  beforeAll(async () => {
    vault = await startTestServer()
    browser = await openBrowser(vault.url)
  }, 30_000)

  afterAll(async () => {
    await browser?.close()
    await vault?.stop()
    if (vault) removeDir(vault.dataDir)
  })

  test('the dashboard counts a summary as its attempts and warns of a lock; Activity says how many and from where', async () => {
    const owner = await signUp(vault.url)
    expect((await owner.anonymous().post('/api/auth/login', { email: owner.email, password: 'wrong password' })).status).toBe(401)
    // 40 throttled attempts (as the login route reports them), without 40 password checks.
    const source = { request: new Request(vault.url), server: { requestIP: () => ({ address: '203.0.113.9', family: 'IPv4', port: 1 }) } as any }
    for (let i = 0; i < 40; i++)
      await vault.deps.audit.signIn({ userId: owner.user.id, method: 'password', ok: false, source, reason: 'throttled', outcome: 'denied' })
    const lockedUntil = new Date(Date.now() + 15 * 60_000).toISOString()
    await vault.deps.audit.record(owner.user.id, {
      action: 'auth.twofa_locked',
      outcome: 'denied',
      actor: { type: 'anonymous', id: null, name: null },
      clientAddress: '203.0.113.10',
      userAgent: null,
      details: { wrongCodes: 20, lockedUntil },
    })

    await browser.context.addCookies([{ name: 'svc_session', value: owner.credentials.cookie!, url: vault.url }])
    const page = browser.page
    await page.goto(`${vault.url}/`)
    const card = page.locator('.recent-activity')
    await card.getByRole('heading', { name: 'Last 7 days' }).waitFor()
    expect(await card.locator('[data-count="failed-sign-ins"] .activity-count').textContent()).toBe('41')
    const notice = page.locator('.second-step-locked')
    await notice.getByRole('heading', { name: 'Two-factor sign-in was locked' }).waitFor()
    expect(await notice.textContent()).toContain('from 203.0.113.10')
    expect(await notice.textContent()).toContain('locked until')

    await page.goto(`${vault.url}/activity?action=auth.login_failed`)
    const rows = page.locator('.activity-event')
    await page.waitForFunction(() => document.querySelectorAll('.activity-event').length === 2)
    const summary = await rows.first().textContent()
    expect(summary).toContain('40 attempts (throttled)')
    expect(summary).toContain('from 203.0.113.9')

    await page.waitForLoadState('networkidle')
    expect(browser.errors).toEqual([])
    expect(browser.cspViolations).toEqual([])
  }, 30_000)
})
