// The Keys page with 10,000 entries: shown in pages of rows (more as the end scrolls into view or
// on "Show more"), so the first paint, scrolling and searching stay quick. The figures (first
// rows, a scroll step, a search; the longest main-thread task in Chromium's trace) are printed
// for the report, not asserted: timings belong to the bench. What is asserted: the page does not
// put every entry in the DOM, scrolling brings more, and a search finds an entry far down the list.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { hasChromium, openBrowser, type BrowserSession } from '../support/browser'
import { PASSWORD, sessionCookie, signUp, type Client } from '../support/client'
import { removeDir, startTestServer, type TestServer } from '../support/server'

const ENTRIES = 10_000
const CATEGORIES = 10
let server: TestServer
let browser: BrowserSession | undefined
let client: Client & { email: string }

if (!hasChromium() && process.env.CI === 'true') throw new Error('Chromium is missing (/usr/bin/chromium)')

beforeAll(async () => {
  server = await startTestServer()
  client = await signUp(server.url)
  const categories: string[] = []
  for (let c = 0; c < CATEGORIES; c++) {
    categories.push((await client.post('/api/categories', { name: `Service ${c}`, keyType: 'simple', envVarName: `SERVICE_${c}_KEY` })).body.id)
  }
  // Many at once: concurrent writes share one commit.
  let next = 0
  const lane = async () => {
    while (next < ENTRIES) {
      const i = next++
      const answer = await client.post('/api/entries', {
        categoryId: categories[i % CATEGORIES],
        name: `project-${String(i).padStart(5, '0')}`,
        value: `v${i}`,
        environment: 'production',
      })
      if (answer.status !== 201) throw new Error(`seed: ${answer.status} ${answer.text}`)
    }
  }
  await Promise.all(Array.from({ length: 64 }, lane))
}, 300_000)

afterAll(async () => {
  await browser?.close()
  await server.stop()
  removeDir(server.dataDir)
})

test.skipIf(!hasChromium())(
  '10,000 entries: paged rows, more on scroll, search finds one far down; figures printed',
  async () => {
    browser = await openBrowser(server.url)
    const login = await fetch(`${server.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: client.email, password: PASSWORD }),
    })
    await browser.context.addCookies([{ name: 'svc_session', value: sessionCookie(login.headers)!, url: server.url }])
    const page = browser.page
    // Chromium's own trace of the main thread, through the DevTools protocol.
    const cdp = await browser.context.newCDPSession(page)
    const traceEvents: { name: string; dur?: number }[] = []
    cdp.on('Tracing.dataCollected', (data) => void traceEvents.push(...(data.value as unknown as { name: string; dur?: number }[])))
    const traced = new Promise((resolve) => cdp.once('Tracing.tracingComplete', resolve))
    await cdp.send('Tracing.start', { categories: 'toplevel,devtools.timeline', transferMode: 'ReportEvents' })
    const rows = () => page.locator('ul.entries > li').count()

    const loadStart = performance.now()
    await page.goto(`${server.url}/keys`)
    await page.locator('ul.entries > li').first().waitFor({ timeout: 30_000 })
    const firstRowsMs = performance.now() - loadStart
    const firstCount = await rows()
    expect(firstCount).toBeGreaterThan(0)
    expect(firstCount).toBeLessThan(1000)

    // Scrolling to the end brings the next page of rows.
    const scrollMs = await page.evaluate(async (before) => {
      const started = performance.now()
      window.scrollTo(0, document.body.scrollHeight)
      while (document.querySelectorAll('ul.entries > li').length <= before) {
        await new Promise((resolve) => requestAnimationFrame(resolve))
        if (performance.now() - started > 10_000) break
      }
      await new Promise((resolve) => requestAnimationFrame(resolve))
      return performance.now() - started
    }, firstCount)
    expect(await rows()).toBeGreaterThan(firstCount)

    // A search for an entry far down the list shows it.
    const target = `project-09998`
    const searchMs = await page.evaluate(async (name) => {
      const input = document.querySelector<HTMLInputElement>('input[type=search]')!
      const started = performance.now()
      input.value = name
      input.dispatchEvent(new Event('input', { bubbles: true }))
      while (![...document.querySelectorAll('ul.entries > li')].some((li) => li.textContent?.includes(name))) {
        await new Promise((resolve) => requestAnimationFrame(resolve))
        if (performance.now() - started > 10_000) break
      }
      await new Promise((resolve) => requestAnimationFrame(resolve))
      return performance.now() - started
    }, target)
    await page.getByText(target).first().waitFor()

    await cdp.send('Tracing.end')
    await traced
    const tasks = traceEvents.filter((e) => (e.name === 'RunTask' || e.name === 'ThreadControllerImpl::RunTask') && e.dur).map((e) => e.dur! / 1000)
    const longestTaskMs = tasks.length > 0 ? Math.max(...tasks) : null
    console.log(
      `keys page, ${ENTRIES} entries: first rows ${firstRowsMs.toFixed(0)} ms (${firstCount} rows in the DOM), scroll to the next page ${scrollMs.toFixed(0)} ms, search to a hit ${searchMs.toFixed(0)} ms, longest main-thread task ${longestTaskMs === null ? 'n/a' : `${longestTaskMs.toFixed(0)} ms`}`,
    )
    expect(browser.errors).toEqual([])
  },
  120_000,
)
