// Settings → Security and the sign-in page in real Chromium (issue 16): two-factor sign-in set up
// from the page with codes from oathtool, passkeys through the DevTools virtual authenticator
// (WebAuthn.enable + WebAuthn.addVirtualAuthenticator over a CDP session), sessions, password and
// account deletion. Passkeys need a domain as relying party: the vault is reached as localhost.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import type { CDPSession, Page } from 'playwright-core'
import { hasChromium, openBrowser, type BrowserSession } from '../support/browser'
import { Client, PASSWORD, signUp } from '../support/client'
import { removeDir, startTestServer, type TestServer } from '../support/server'
import { enableTwoFactor, oathtool, post } from '../account/support'

let vault: TestServer
let base: string

beforeAll(async () => {
  vault = await startTestServer({ baseHost: 'localhost' })
  base = vault.deps.config.baseUrl!
}, 30_000)

afterAll(async () => {
  await vault?.stop()
  if (vault) removeDir(vault.dataDir)
})

async function signedInBrowser(cookie: string): Promise<BrowserSession> {
  const browser = await openBrowser(base)
  await browser.context.addCookies([{ name: 'svc_session', value: cookie, url: base }])
  return browser
}

async function signOut(page: Page) {
  await page.getByRole('button', { name: 'Sign out', exact: true }).first().click()
  await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor()
}

async function passwordSignIn(page: Page, email: string, password = PASSWORD) {
  await page.locator('input[name="email"]').fill(email)
  await page.locator('input[name="password"]').fill(password)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
}

async function virtualAuthenticator(browser: BrowserSession): Promise<{ cdp: CDPSession; authenticatorId: string }> {
  const cdp = await browser.context.newCDPSession(browser.page)
  await cdp.send('WebAuthn.enable')
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  })
  return { cdp, authenticatorId }
}

describe.skipIf(!hasChromium())('Settings → Security in Chromium', () => {
  test('two-factor sign-in: set up from Settings, recovery codes downloaded, then sign-in asks for a code', async () => {
    const owner = await signUp(base)
    const browser = await signedInBrowser(owner.credentials.cookie!)
    try {
      const page = browser.page
      await page.goto(`${base}/settings`)
      await page.getByRole('heading', { name: 'Two-factor sign-in' }).waitFor()
      const setupForm = page.locator('form', { has: page.getByRole('button', { name: 'Set up two-factor sign-in' }) })
      const password = setupForm.locator('input[name="password"]')
      await password.fill(PASSWORD)
      // Typed into the field that is there once the page has loaded (a re-render must not lose it).
      await page.waitForLoadState('networkidle')
      if ((await password.inputValue()) !== PASSWORD) await password.fill(PASSWORD)
      await setupForm.getByRole('button', { name: 'Set up two-factor sign-in' }).click()
      // The first setup loads the QR and TOTP libraries and checks the password (argon2): give it
      // time. An error the page shows instead ends the wait with its text.
      const qr = page.getByRole('img', { name: 'QR code of the two-factor secret' })
      const qrShown = qr.waitFor({ timeout: 20_000 }).then(
        () => null,
        (error: Error) => `no QR code: ${error.message}`,
      )
      const alertShown = setupForm
        .getByRole('alert')
        .waitFor({ timeout: 20_000 })
        .then(
          async () => `the page showed: ${await setupForm.getByRole('alert').textContent()}`,
          () => new Promise<never>(() => {}),
        )
      expect(await Promise.race([qrShown, alertShown])).toBeNull()
      const secret = (await page.locator('.totp-secret').textContent())!.trim()
      expect(secret).toMatch(/^[A-Z2-7]{32}$/)
      await page.locator('input[name="code"]').fill(oathtool(secret, Date.now()))
      await page.getByRole('button', { name: 'Turn on' }).click()

      await page.getByText('Save these recovery codes now.').waitFor()
      const shown = (await page.locator('.recovery-codes code').allTextContents()).map((code) => code.trim())
      expect(shown).toHaveLength(10)
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download as a text file' }).click()])
      // The file names the vault it opens (issue 32).
      expect(download.suggestedFilename()).toBe(`svc-vault-recovery-codes-${new URL(page.url()).host.replace(':', '_')}.txt`)
      const text = readFileSync((await download.path())!, 'utf8')
      for (const code of shown) expect(text).toContain(code)
      await page.getByRole('button', { name: 'I saved them' }).click()
      await page.getByText('On.', { exact: false }).first().waitFor()
      expect((await owner.get('/api/auth/me')).body.user.twoFactorEnabled).toBe(true)

      // Sign out and back in: the password, then a code (the next step's: the current one was used).
      await signOut(page)
      await passwordSignIn(page, owner.email)
      await page.getByLabel('Code').fill('000000')
      await page.getByRole('button', { name: 'Verify' }).click()
      await page.getByRole('alert').getByText('wrong').waitFor()
      await page.getByLabel('Code').fill(oathtool(secret, Date.now() + 30_000))
      await page.getByRole('button', { name: 'Verify' }).click()
      await page.getByRole('button', { name: 'Sign out', exact: true }).waitFor()
      expect(new URL(page.url()).pathname).toBe('/')

      // A recovery code works too, once.
      await signOut(page)
      await passwordSignIn(page, owner.email)
      await page.getByRole('button', { name: 'Use a recovery code' }).click()
      await page.getByLabel('Recovery code').fill(shown[0])
      await page.getByRole('button', { name: 'Verify' }).click()
      await page.getByRole('button', { name: 'Sign out', exact: true }).waitFor()
      expect(browser.errors.filter((e) => !e.includes('401'))).toEqual([])
      expect(browser.cspViolations).toEqual([])
    } finally {
      await browser.close()
    }
  }, 60_000)

  test('passkeys: register in Settings, sign in with no e-mail typed, as the second factor, then delete', async () => {
    const signedUp = await signUp(base)
    const browser = await signedInBrowser(signedUp.credentials.cookie!)
    // The API's own session: signing out in the browser ends the browser's.
    const owner = Object.assign(
      new Client(base, { cookie: (await post(base, '/api/auth/login', { email: signedUp.email, password: PASSWORD })).cookies.svc_session }),
      { email: signedUp.email },
    )
    try {
      const page = browser.page
      const { cdp, authenticatorId } = await virtualAuthenticator(browser)
      await page.goto(`${base}/settings`)
      await page.locator('input[name="passkeyName"]').fill('Laptop')
      await page.getByRole('button', { name: 'Add a passkey' }).click()
      const row = page.getByRole('table', { name: 'Passkeys' }).getByRole('row', { name: /Laptop/ })
      await row.waitFor()
      expect(await row.textContent()).toContain('never')
      const listed = (await owner.get('/api/account/passkeys')).body
      expect(listed).toHaveLength(1)
      expect(Object.keys(listed[0]).sort()).toEqual(['createdAt', 'id', 'lastUsedAt', 'name'])
      const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId })
      expect(credentials).toHaveLength(1)
      expect(credentials[0].isResidentCredential).toBe(true)
      // Only the public key is stored.
      expect(readFileSync(`${vault.dataDir}/accounts.json`, 'utf8')).not.toContain(credentials[0].privateKey)

      // Sign out, then in with the passkey alone; the assertion is kept to replay it later.
      await signOut(page)
      let assertion: unknown
      await page.route('**/api/auth/passkey/login', async (route) => {
        assertion = route.request().postDataJSON()
        await route.continue()
      })
      await page.getByRole('button', { name: 'Use a passkey', exact: true }).click()
      await page.getByRole('button', { name: 'Sign out', exact: true }).waitFor()
      expect((await owner.get('/api/account/passkeys')).body[0].lastUsedAt).not.toBeNull()
      await page.unroute('**/api/auth/passkey/login')

      // A replayed assertion is refused (with a fresh challenge cookie, and without).
      const options = await post(base, '/api/auth/passkey/options', {})
      const replayed = await post(base, '/api/auth/passkey/login', assertion, { svc_passkey: options.cookies.svc_passkey })
      expect(replayed.status).toBe(401)
      expect(replayed.body.code).toBe('PASSKEY_FAILED')
      expect((await post(base, '/api/auth/passkey/login', assertion)).body.code).toBe('PASSKEY_FAILED')

      // A cloned authenticator (the same key with an old signature counter) is refused.
      await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId: credentials[0].credentialId })
      await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: { ...credentials[0], signCount: credentials[0].signCount } })
      await signOut(page)
      await page.getByRole('button', { name: 'Use a passkey', exact: true }).click()
      await page.getByRole('alert').getByText('counter').waitFor()
      // Put the authenticator's counter past the server's again.
      await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId: credentials[0].credentialId })
      await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: { ...credentials[0], signCount: credentials[0].signCount + 100 } })

      // With two-factor sign-in on, the passkey is the second factor after the password.
      const apiSession = new Client(base, { cookie: (await post(base, '/api/auth/login', { email: owner.email, password: PASSWORD })).cookies.svc_session })
      await enableTwoFactor(apiSession, Date.now())
      await page.reload()
      await passwordSignIn(page, owner.email)
      await page.getByRole('button', { name: 'Use a passkey instead' }).click()
      await page.getByRole('button', { name: 'Sign out', exact: true }).waitFor()

      // Another account's sign-in refuses this passkey as its second factor.
      const other = await signUp(base)
      await enableTwoFactor(other, Date.now())
      await signOut(page)
      await passwordSignIn(page, other.email)
      await page.getByRole('button', { name: 'Use a passkey instead' }).click()
      await page.getByRole('alert').getByText('another account').waitFor()
      await page.getByRole('button', { name: 'Start over' }).click()

      // Delete it in Settings: it no longer signs in.
      await browser.context.addCookies([{ name: 'svc_session', value: apiSession.credentials.cookie!, url: base }])
      await page.goto(`${base}/settings`)
      await page.getByRole('button', { name: 'Delete passkey Laptop' }).click()
      await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click()
      await page.getByText('No passkeys yet.').waitFor()
      await signOut(page)
      await page.getByRole('button', { name: 'Use a passkey', exact: true }).click()
      await page.getByRole('alert').getByText('not registered').waitFor()
      expect(browser.cspViolations).toEqual([])
    } finally {
      await browser.close()
    }
  }, 90_000)

  test('a passkey registered at another origin is refused', async () => {
    const other = await startTestServer({ baseHost: 'localhost' })
    const otherBase = other.deps.config.baseUrl!
    const owner = await signUp(otherBase)
    const browser = await openBrowser(otherBase)
    try {
      await browser.context.addCookies([{ name: 'svc_session', value: owner.credentials.cookie!, url: otherBase }])
      const page = browser.page
      await virtualAuthenticator(browser)
      await page.goto(`${otherBase}/settings`)
      await page.getByRole('button', { name: 'Add a passkey' }).click()
      await page
        .getByRole('table', { name: 'Passkeys' })
        .getByRole('row', { name: /Passkey/ })
        .waitFor()
      // The same browser and authenticator at this vault (another origin): refused.
      await page.goto(`${base}/login`)
      await page.getByRole('button', { name: 'Use a passkey', exact: true }).click()
      await page.getByRole('alert').getByText('not registered').waitFor()
    } finally {
      await browser.close()
      await other.stop()
      removeDir(other.dataDir)
    }
  }, 60_000)

  test('sessions, password and account deletion from Settings; deletion asks twice', async () => {
    const owner = await signUp(base)
    const elsewhere = new Client(base, {
      cookie: (await post(base, '/api/auth/login', { email: owner.email, password: PASSWORD }, {}, { 'user-agent': 'curl/8.5.0' })).cookies.svc_session,
    })
    const browser = await signedInBrowser(owner.credentials.cookie!)
    try {
      const page = browser.page
      await page.goto(`${base}/settings`)
      const sessions = page.getByRole('table', { name: 'Sessions' })
      await sessions.getByRole('row', { name: /curl/ }).waitFor()
      await sessions.getByRole('button', { name: 'End session curl' }).click()
      await page.getByText('Session ended').waitFor()
      expect((await elsewhere.get('/api/auth/me')).status).toBe(401)

      await page.locator('input[name="password"]').nth(1).fill('wrong password here')
      await page.locator('input[name="newPassword"]').fill('a new password 1')
      await page.getByRole('button', { name: 'Change password' }).click()
      await page.getByRole('alert').getByText('wrong').waitFor()
      // A wrong password is the form's error; the page stays signed in.
      expect(new URL(page.url()).pathname).toBe('/settings')
      await page.locator('input[name="password"]').nth(1).fill(PASSWORD)
      await page.getByRole('button', { name: 'Change password' }).click()
      await page.getByText('Password changed').waitFor()
      expect((await post(base, '/api/auth/login', { email: owner.email, password: 'a new password 1' })).status).toBe(200)

      await page.locator('input[name="password"]').nth(2).fill('a new password 1')
      await page.getByRole('button', { name: 'Delete account…' }).click()
      // First question: cancelling keeps the account.
      await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click()
      expect(vault.deps.accounts.userById(owner.user.id)).toBeDefined()
      await page.getByRole('button', { name: 'Delete account…' }).click()
      await page.getByRole('dialog').getByRole('button', { name: 'Continue' }).click()
      await page.getByRole('dialog').getByText('cannot be undone').waitFor()
      await page.getByRole('dialog').getByRole('button', { name: 'Delete my account' }).click()
      await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor()
      expect(vault.deps.accounts.userById(owner.user.id)).toBeUndefined()
      expect(browser.cspViolations).toEqual([])
    } finally {
      await browser.close()
    }
  }, 60_000)
})
