// Shared vaults in real headless Chromium (issue 33): create a vault, switch vaults (the page keeps
// its place, and the choice survives a reload), every resource call going to /api/vaults/{id}/…;
// a viewer's write buttons disabled; a member demoted while the page is open sees the API's
// ROLE_REQUIRED message; remove a member; invite by link, accepted in a second browser
// (a new account) and by a signed-in one; axe-core on the new pages: no serious or critical violation.
import { afterAll, describe, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { hasChromium, openBrowser, type BrowserSession } from '../support/browser'
import { PASSWORD, signUp, uniqueEmail } from '../support/client'
import { created, openTab, signInBrowser } from '../support/page-session'
import { testNeeding } from '../support/requirements'
import { startTestServer, type TestServer } from '../support/server'
import { seriousViolations } from '../support/axe'

const STEP = 60_000

const switcher = (page: Page) => page.getByLabel('Vault', { exact: true })
// Longer than the default 5 s: under the whole suite's load (two passes and Chromium on 2 cores) an
// accepted invite once took longer to reach the Dashboard; alone it takes well under a second.
const heading = (page: Page, name: string) => page.getByRole('heading', { level: 1, name }).waitFor({ timeout: 15_000 })

// One server for the file. Whether the invites API is there decides the invite test (it is built
// on another branch): it skips only when POST /api/vaults/{id}/invites answers 404, and fails under CI=true.
const server: TestServer | null = hasChromium() ? await startTestServer() : null
let invitesMissing: string | null = 'Chromium is missing'
if (server) {
  const probe = await signUp(server.url)
  const vault = await created(probe.post('/api/vaults', { name: 'probe' }))
  const answer = await probe.post(`/api/vaults/${vault.id}/invites`, { role: 'viewer' })
  invitesMissing = answer.status === 404 ? 'POST /api/vaults/{vaultId}/invites answers 404 (the invites API is not on this branch)' : null
}
const browsers: BrowserSession[] = []
async function browserFor(email?: string): Promise<BrowserSession> {
  const browser = await openBrowser(server!.url)
  browsers.push(browser)
  if (email) await signInBrowser(browser, server!.url, email)
  return browser
}

describe.skipIf(!hasChromium())('web page: shared vaults (issue 33)', () => {
  afterAll(async () => {
    for (const browser of browsers) await browser.close()
    await server?.stop()
  })

  test(
    'create a vault; the switcher keeps the page and survives a reload; a viewer cannot write; remove a member',
    async () => {
      const base = server!.url
      const admin = await signUp(base)
      const bob = await signUp(base)
      const carol = await signUp(base)
      await created(admin.post('/api/categories', { name: 'Personal only', keyType: 'simple', envVarName: 'PERSONAL_KEY' }))
      const browser = await browserFor(admin.email)
      const page = await openTab(browser, base, '/vaults')
      const violations = await seriousViolations(page, '/vaults')

      // Create a vault: its settings page opens, and the vault is the chosen one.
      await page.getByLabel('Name', { exact: true }).fill('Side project')
      await page.getByRole('button', { name: 'Create vault' }).click()
      await heading(page, 'Side project')
      const vaultId = new URL(page.url()).pathname.split('/')[2]
      expect(vaultId).toMatch(/^[0-9a-f-]{36}$/)
      expect(await switcher(page).inputValue()).toBe(vaultId)
      violations.push(...(await seriousViolations(page, '/vaults/<id>')))
      const prefix = `/api/vaults/${vaultId}`
      await created(admin.post(`${prefix}/categories`, { name: 'Shared only', keyType: 'simple', envVarName: 'SHARED_KEY' }))
      await server!.deps.sharedVaults.addMember(vaultId, bob.user.id, 'editor', admin.user.id)
      await server!.deps.sharedVaults.addMember(vaultId, carol.user.id, 'viewer', admin.user.id)

      // The Keys page of the shared vault; switching keeps the page, each time from the other vault.
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Keys', exact: true }).click()
      await page.getByText('Shared only').waitFor()
      expect(await page.getByText('Personal only').count()).toBe(0)
      expect(browser.requests.some((url) => url.startsWith(`${base}${prefix}/categories`))).toBe(true)
      await switcher(page).selectOption({ label: 'Personal' })
      await page.getByText('Personal only').waitFor()
      expect(new URL(page.url()).pathname).toBe('/keys')
      expect(await page.getByText('Shared only').count()).toBe(0)
      await switcher(page).selectOption(vaultId)
      await page.getByText('Shared only').waitFor()
      expect(new URL(page.url()).pathname).toBe('/keys')
      // A reload stays in the shared vault, on the same page.
      await page.reload()
      await page.getByText('Shared only').waitFor()
      expect(await switcher(page).inputValue()).toBe(vaultId)
      expect(new URL(page.url()).pathname).toBe('/keys')
      // Another page keeps its place too: 2FA and Activity.
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: '2FA', exact: true }).click()
      await heading(page, 'Two-factor codes')
      const personalTokens = page.waitForResponse((response) => response.url().startsWith(`${base}/api/2fa`))
      await switcher(page).selectOption({ label: 'Personal' })
      await heading(page, 'Two-factor codes')
      expect((await personalTokens).status()).toBe(200)
      expect(new URL(page.url()).pathname).toBe('/2fa')
      await switcher(page).selectOption(vaultId)
      const vaultAudit = page.waitForResponse((response) => response.url().startsWith(`${base}${prefix}/audit`))
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Activity', exact: true }).click()
      await heading(page, 'Activity')
      expect((await vaultAudit).status()).toBe(200)

      // A viewer sees the vault read-only: the write buttons are disabled, saying why.
      const viewerBrowser = await browserFor(carol.email)
      const viewerPage = await openTab(viewerBrowser, base, '/keys')
      await switcher(viewerPage).selectOption(vaultId)
      await viewerPage.getByText('Shared only').waitFor()
      await viewerPage.getByText(/You are a viewer in Side project/).waitFor()
      expect(await viewerPage.getByRole('button', { name: 'New category' }).first().isDisabled()).toBe(true)
      expect(await viewerPage.getByRole('link', { name: 'Import', exact: true }).count()).toBe(0)
      const viewerSettings = await openTab(viewerBrowser, base, `/vaults/${vaultId}`)
      await viewerSettings.getByRole('cell', { name: bob.email, exact: true }).waitFor()
      expect(await viewerSettings.getByRole('button', { name: `Remove ${bob.email}` }).count()).toBe(0)
      expect(await viewerSettings.getByRole('button', { name: 'Create invite link' }).count()).toBe(0)
      violations.push(...(await seriousViolations(viewerSettings, '/vaults/<id> as viewer')))

      // Demoted while the page is open: the write is refused and the API's message is shown.
      const bobBrowser = await browserFor(bob.email)
      const bobPage = await openTab(bobBrowser, base, '/keys')
      await switcher(bobPage).selectOption(vaultId)
      await bobPage.getByText('Shared only').waitFor()
      await bobPage.getByRole('button', { name: 'New category' }).first().click()
      await server!.deps.sharedVaults.setRole({ userId: admin.user.id, accessKey: null }, vaultId, bob.user.id, 'viewer')
      const dialog = bobPage.getByRole('dialog')
      await dialog.getByLabel('Name', { exact: true }).fill('Not allowed')
      await dialog.getByLabel('Environment variable').fill('NOT_ALLOWED')
      await dialog.getByRole('button', { name: 'Create category' }).click()
      await dialog.getByText('needs the editor role in this vault').waitFor()
      await server!.deps.sharedVaults.setRole({ userId: admin.user.id, accessKey: null }, vaultId, bob.user.id, 'editor')

      // Remove bob from the settings page: the row goes, and the server agrees.
      await page.getByRole('link', { name: 'Vault settings' }).click()
      await heading(page, 'Side project')
      await page.getByRole('button', { name: `Remove ${bob.email}` }).click()
      await page.getByRole('dialog').getByRole('button', { name: 'Remove' }).click()
      await page.getByRole('cell', { name: bob.email, exact: true }).waitFor({ state: 'detached' })
      const members = (await admin.get(`${prefix}/members`)).body as { email: string }[]
      expect(members.map((member) => member.email).sort()).toEqual([admin.email, carol.email].sort())
      expect((await bob.get(`${prefix}/categories`)).status).toBe(404)
      violations.push(...(await seriousViolations(page, '/vaults/<id> after a removal')))

      expect(violations).toEqual([])
      expect(browser.errors.filter((error) => !error.includes('404'))).toEqual([])
      expect(browser.cspViolations).toEqual([])
    },
    STEP,
  )

  testNeeding(invitesMissing)(
    'invite by link: the link is shown once with Copy, accepted by a new account in a second browser and by a signed-in one',
    async () => {
      const base = server!.url
      const admin = await signUp(base)
      const vault = await created(admin.post('/api/vaults', { name: 'Invited' }))
      const browser = await browserFor(admin.email)
      const page = await openTab(browser, base, `/vaults/${vault.id}`)
      let last = ''
      const createLink = async (role: string) => {
        await page.locator('select[name="invite-role"]').selectOption(role)
        await page.getByRole('button', { name: 'Create invite link' }).click()
        // The new link, not the one shown before it (once read too early, the next step accepted
        // the first link again, already used, and never reached the Dashboard).
        await page.waitForFunction((previous) => {
          const text = document.querySelector('[data-testid="invite-url"]')?.textContent
          return !!text && text !== previous
        }, last)
        const url = (await page.getByTestId('invite-url').textContent())!
        expect(url).toContain('/invite/')
        last = url
        return url
      }
      const url = await createLink('editor')
      await page.getByRole('button', { name: 'Copy the invite link' }).click()
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(url)
      await page.getByRole('table', { name: 'Pending invites' }).getByRole('cell', { name: 'editor', exact: true }).waitFor()
      const violations = await seriousViolations(page, '/vaults/<id> with an invite link')

      // A second browser, signed out: the link's page offers to create an account with it.
      const newcomer = await browserFor()
      const invited = newcomer.page
      await invited.goto(base + new URL(url).pathname)
      await invited.getByRole('heading', { name: 'You are invited to a shared vault' }).waitFor()
      violations.push(...(await seriousViolations(invited, '/invite/<token> signed out')))
      await invited.getByRole('button', { name: 'Create an account' }).click()
      const email = uniqueEmail('newcomer')
      await invited.getByLabel('E-mail').fill(email)
      await invited.getByLabel('Password').fill(PASSWORD)
      await invited.getByRole('button', { name: 'Create account and join' }).click()
      await heading(invited, 'Dashboard')
      expect(await switcher(invited).inputValue()).toBe(vault.id)
      expect(new URL(invited.url()).pathname).toBe('/')

      // A signed-in account accepts a second link (a viewer's).
      const second = await createLink('viewer')
      const dana = await signUp(base)
      const signedIn = await browserFor(dana.email)
      await signedIn.page.goto(base + new URL(second).pathname)
      await heading(signedIn.page, 'Join a shared vault')
      violations.push(...(await seriousViolations(signedIn.page, '/invite/<token> signed in')))
      await signedIn.page.getByRole('button', { name: 'Accept the invite' }).click()
      await heading(signedIn.page, 'Dashboard')
      expect(await switcher(signedIn.page).inputValue()).toBe(vault.id)

      // Revoke a third link from the list; the admin's page lists the two who joined.
      await createLink('viewer')
      await page.reload()
      await heading(page, 'Invited')
      const pending = page.getByRole('table', { name: 'Pending invites' })
      await pending.getByRole('button', { name: /^Revoke/ }).click()
      await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click()
      await page.getByText('No pending invites.').waitFor()
      const members = (await admin.get(`/api/vaults/${vault.id}/members`)).body as { email: string; role: string }[]
      expect(members.map((member) => [member.email, member.role]).sort()).toEqual(
        [
          [admin.email, 'admin'],
          [email, 'editor'],
          [dana.email, 'viewer'],
        ].sort(),
      )
      expect(violations).toEqual([])
    },
    STEP,
  )
})
