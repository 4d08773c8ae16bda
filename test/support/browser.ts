// Real headless Chromium (Debian's /usr/bin/chromium) driven by playwright-core, with a fresh
// profile, recording what a UI test checks: console errors, every request's URL, CSP violations.
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright-core'

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
export const hasChromium = () => existsSync(CHROMIUM)

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

export interface BrowserSession {
  context: BrowserContext
  page: Page
  /** Console messages of type error, page errors and failed requests. */
  errors: string[]
  /** Every URL the browser asked for. */
  requests: string[]
  /** CSP violations the page reported (securitypolicyviolation events). */
  cspViolations: string[]
  close(): Promise<void>
}

/** A fresh browser profile, one page; `origin` is the vault, granted clipboard access. */
export async function openBrowser(
  origin: string,
  options: { colorScheme?: 'light' | 'dark'; viewport?: { width: number; height: number } } = {},
): Promise<BrowserSession> {
  const profile = mkdtempSync(join(tmpdir(), 'svc-vault-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: ARGS,
    headless: true,
    viewport: options.viewport ?? { width: 1280, height: 860 },
    colorScheme: options.colorScheme ?? 'light',
    acceptDownloads: true,
  })
  context.setDefaultTimeout(5000)
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin })
  const errors: string[] = []
  const requests: string[] = []
  const cspViolations: string[] = []
  await context.exposeBinding('__svcReportCsp', (_source, text: string) => void cspViolations.push(text))
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) => {
      ;(window as unknown as { __svcReportCsp(text: string): void }).__svcReportCsp(`${event.violatedDirective} blocked ${event.blockedURI}`)
    })
  })
  context.on('request', (request) => void requests.push(request.url()))
  context.on('requestfailed', (request) => {
    // A download's navigation request is handed to the download manager: not a failure.
    if (request.failure()?.errorText !== 'net::ERR_ABORTED') errors.push(`request failed: ${request.url()} ${request.failure()?.errorText}`)
  })
  const watched = new WeakSet<Page>()
  const watch = (page: Page) => {
    if (watched.has(page)) return
    watched.add(page)
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(`console: ${message.text()}`)
    })
    page.on('pageerror', (error) => void errors.push(`page error: ${error.message}`))
  }
  context.on('page', watch)
  const page = context.pages()[0] ?? (await context.newPage())
  watch(page)
  return {
    context,
    page,
    errors,
    requests,
    cspViolations,
    async close() {
      await context.close()
      rmSync(profile, { recursive: true, force: true })
    },
  }
}
