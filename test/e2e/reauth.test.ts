// "Confirm it is you" in real Chromium (issue 36): a session whose proof is older than 10 minutes
// creating an access key is asked for the password, and the key is then made without starting
// again; "Sign out everywhere else" lists what was added in the last 30 days and removes the
// ticked ones in the same step. The server runs on a test clock.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { hasChromium, openBrowser } from '../support/browser'
import { Client, PASSWORD, signUp } from '../support/client'
import { removeDir, startTestServer, type TestServer } from '../support/server'
import { post, testClock } from '../account/support'

const clock = testClock(Date.now())
let vault: TestServer

beforeAll(async () => {
  vault = await startTestServer({ now: clock.now })
}, 30_000)
afterAll(async () => {
  await vault?.stop()
  if (vault) removeDir(vault.dataDir)
})

describe.skipIf(!hasChromium())('re-authentication in the page', () => {
  test('a stale session is asked to confirm, then the key is created; Sign out everywhere else removes it', async () => {
    const owner = await signUp(vault.url)
    const browser = await openBrowser(vault.url)
    try {
      await browser.context.addCookies([{ name: 'svc_session', value: owner.credentials.cookie!, url: vault.url }])
      const page = browser.page
      clock.advance(11 * 60_000)
      await page.goto(`${vault.url}/access-keys`)
      await page.locator('input[name="keyName"]').fill('planted?')
      await page.locator('input[name="scope"][value="stats:read"]').check()
      await page.getByRole('button', { name: 'Create key' }).click()
      const dialog = page.getByRole('dialog', { name: 'Confirm it is you' })
      await dialog.waitFor()
      // A wrong password keeps the dialog, with the server's answer.
      await dialog.locator('input[name="reauthPassword"]').fill('not the password')
      await dialog.getByRole('button', { name: 'Confirm' }).click()
      await dialog.getByRole('alert').waitFor()
      expect((await owner.get('/api/access-keys')).body).toEqual([])
      await dialog.locator('input[name="reauthPassword"]').fill(PASSWORD)
      await dialog.getByRole('button', { name: 'Confirm' }).click()
      await page.locator('.created-key-value').waitFor()
      const keys = (await owner.get('/api/access-keys')).body
      expect(keys.map((k: { name: string }) => k.name)).toEqual(['planted?'])
      await dialog.waitFor({ state: 'detached' })

      // Another session exists: sign out everywhere else offers to remove the new key.
      await post(vault.url, '/api/auth/login', { email: owner.email, password: PASSWORD })
      await page.goto(`${vault.url}/settings`)
      await page.getByRole('button', { name: 'Sign out everywhere else' }).click()
      const signOut = page.getByRole('dialog', { name: 'Sign out everywhere else' })
      await signOut.getByText('Access key “planted?”').click()
      await signOut.getByRole('button', { name: 'Sign out others' }).click()
      await signOut.waitFor({ state: 'detached' })
      expect((await owner.get('/api/access-keys')).body).toEqual([])
      expect((await owner.get('/api/account/sessions')).body).toHaveLength(1)
      expect((await new Client(vault.url, { cookie: owner.credentials.cookie }).get('/api/auth/me')).status).toBe(200)
    } finally {
      await browser.close()
    }
  }, 60_000)
})
