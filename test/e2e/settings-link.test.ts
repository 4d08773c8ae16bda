// Settings in real Chromium (issue 14): a signed-in owner links single sign-on with the
// "Link single sign-on" control, passes the real provider's pages, and comes back linked.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { hasChromium, openBrowser, type BrowserSession } from '../support/browser'
import { signUp, uniqueEmail } from '../support/client'
import { startOidcVault, startTestProvider, type TestProvider } from '../support/oidc-provider'
import { removeDir, type TestServer } from '../support/server'

let provider: TestProvider
let vault: TestServer
let base: string
let browser: BrowserSession

describe.skipIf(!hasChromium())('Settings: link single sign-on in Chromium', () => {
  beforeAll(async () => {
    provider = await startTestProvider()
    vault = await startOidcVault(provider)
    base = vault.url
    browser = await openBrowser(base)
  }, 30_000)

  afterAll(async () => {
    await browser?.close()
    await vault?.stop()
    await provider?.stop()
    if (vault) removeDir(vault.dataDir)
  })

  test('the owner links the provider from Settings and lands back on Settings, linked', async () => {
    const email = uniqueEmail('settings')
    const owner = await signUp(base, email)
    provider.accounts.set('settings-owner', { email, email_verified: true, name: 'Owner' })
    await browser.context.addCookies([{ name: 'svc_session', value: owner.credentials.cookie!, url: base }])
    const page = browser.page
    await page.goto(`${base}/settings`)
    await page.getByRole('heading', { level: 1, name: 'Settings' }).waitFor()
    await page.getByRole('button', { name: 'Link single sign-on' }).click()

    // The provider's development login and consent pages.
    await page.waitForURL((url) => url.origin === provider.issuer)
    await page.locator('input[name="login"]').fill('settings-owner')
    await page.locator('input[name="password"]').fill('any')
    await page.locator('button[type="submit"]').click()
    await page.waitForLoadState()
    if (new URL(page.url()).origin === provider.issuer) await page.locator('button[type="submit"]').click()

    await page.waitForURL(`${base}/settings`)
    await page.getByText('Linked to Test IdP').waitFor()
    expect(vault.deps.accounts.userById(owner.user.id)!.identities.map((id) => id.subject)).toEqual(['settings-owner'])
    // The page's CSP let the form's redirect through (form-action names the provider).
    expect(browser.cspViolations).toEqual([])
    // This browser's session survived the link.
    expect((await owner.get('/api/auth/me')).status).toBe(200)
  }, 30_000)
})
