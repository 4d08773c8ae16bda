// The set-up the Chromium tests share: records made through the API, a session put into the test
// browser (so a test needs no sign-in form), and a new signed-in tab on a page.
import type { Page } from 'playwright-core'
import type { BrowserSession } from './browser'
import { PASSWORD, sessionCookie, type Client } from './client'

export const DESKTOP = { width: 1280, height: 860 }

/** The body of a set-up request, which must answer 200 or 201. */
export async function created(answer: Promise<{ status: number; body: any; text: string }>): Promise<any> {
  const result = await answer
  if (result.status !== 201 && result.status !== 200) throw new Error(`setup failed: ${result.status} ${result.text}`)
  return result.body
}

/** Puts this session cookie into the browser for the vault at `base`. */
export async function useSession(browser: BrowserSession, base: string, cookie: string): Promise<void> {
  await browser.context.addCookies([{ name: 'svc_session', value: cookie, url: base }])
}

/** Signs `email` in through the API, a session of the browser's own, and puts it in the browser; returns its cookie. */
export async function signInBrowser(browser: BrowserSession, base: string, email: string, password = PASSWORD): Promise<string> {
  const response = await fetch(`${base}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  })
  const cookie = sessionCookie(response.headers)
  if (!cookie) throw new Error(`sign-in failed: ${response.status} ${await response.text()}`)
  await useSession(browser, base, cookie)
  return cookie
}

/** A new tab on `path` at this viewport, once the page's main heading shows. */
export async function openTab(browser: BrowserSession, base: string, path: string, viewport = DESKTOP): Promise<Page> {
  const page = await browser.context.newPage()
  await page.setViewportSize(viewport)
  await page.goto(base + path)
  await page.locator('main h1').first().waitFor()
  return page
}

/**
 * What the Env projects, 2FA and Access keys pages show in the UI tests: a project "site" with a .env
 * file, a GitHub token and a "ci" key, all `client`'s; answers the project's id.
 */
export async function seedOtherPages(client: Client): Promise<string> {
  const project = await created(client.post('/api/envs', { name: 'site', description: 'The site' }))
  await created(client.post(`/api/envs/${project.data.id}/files`, { fileType: 'env', content: 'SAVED=1\n' }))
  await created(client.post('/api/2fa', { service: 'GitHub', accountName: 'alice@example.com', secret: 'JBSWY3DPEHPK3PXPJBSWY3DP' }))
  await created(client.post('/api/access-keys', { name: 'ci', scopes: ['stats:read'] }))
  return project.data.id
}
