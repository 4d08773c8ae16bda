// Issue 35, the page's part, in real headless Chromium: a QR code image (a Google Authenticator
// export made by the test, drawn as a PNG) chosen in the import dialog is decoded in the browser;
// no request carries the image, only the link in it; the imported tokens' codes are oathtool's.
// Then the page's own export as Google Authenticator QR codes is read back the same way.
import { afterAll, beforeAll, expect } from 'bun:test'
import type { Page } from 'playwright-core'
import { renderSVG } from 'uqr'
import { CHROMIUM, hasChromium, openBrowser, type BrowserSession } from '../support/browser'
import { PASSWORD, signUp, type Client } from '../support/client'
import { openTab, signInBrowser } from '../support/page-session'
import { missingCommand, testNeeding } from '../support/requirements'
import { removeDir, startTestServer, type TestServer } from '../support/server'
import { googleLink, HOTP, oathtool, TOTP_A, TOTP_B, type Known } from '../support/two-factor-formats'
import { seriousViolations } from '../support/axe'

const NOW_SECONDS = 1_767_225_610
const TOKENS: Known[] = [TOTP_A, TOTP_B, HOTP]
const needs = testNeeding(hasChromium() ? missingCommand('oathtool') : `Chromium is not at ${CHROMIUM}`)

let server: TestServer
let browser: BrowserSession

beforeAll(async () => {
  if (!hasChromium()) return
  server = await startTestServer({ now: () => NOW_SECONDS * 1000 })
  browser = await openBrowser(server.url)
}, 30_000)
afterAll(async () => {
  await browser?.close()
  await server?.stop()
  if (server) removeDir(server.dataDir)
})

/** A PNG of the QR code of `text`, drawn by Chromium from uqr's SVG. */
async function qrPng(text: string): Promise<Buffer> {
  const page = await browser.context.newPage()
  const svg = renderSVG(text, { border: 4 })
  await page.setContent(`<img id="qr" width="360" height="360" src="data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}">`)
  await page.locator('#qr').waitFor()
  const png = await page.locator('#qr').screenshot({ type: 'png' })
  await page.close()
  return png
}

/** Every request body the page sends from now on. */
function recordBodies(page: Page): { url: string; body: Buffer }[] {
  const bodies: { url: string; body: Buffer }[] = []
  page.on('request', (request) => {
    const body = request.postDataBuffer()
    if (body) bodies.push({ url: request.url(), body })
  })
  return bodies
}

async function expectCodes(client: Client, expected: Known[]) {
  const stored = (await client.get('/api/2fa')).body as any[]
  expect(stored.map((t) => t.service).sort()).toEqual(expected.map((t) => t.issuer).sort())
  for (const known of expected) {
    const token = stored.find((t) => t.service === known.issuer)
    const revealed = await client.post(`/api/2fa/${token.id}/reveal`)
    expect(revealed.body.code).toBe(oathtool(known, NOW_SECONDS, known.counter))
  }
}

/** Opens the import dialog on /2fa, chooses the PNG, previews and imports; answers the request bodies seen. */
async function importPng(page: Page, png: Buffer, count: number) {
  const bodies = recordBodies(page)
  await page.getByRole('button', { name: 'Import', exact: true }).click()
  const dialog = page.getByRole('dialog', { name: 'Import 2FA tokens' })
  await dialog.locator('input[name="file"]').setInputFiles({ name: 'export.png', mimeType: 'image/png', buffer: png })
  await page
    .waitForFunction(() => document.querySelector<HTMLTextAreaElement>('textarea[name="content"]')?.value.startsWith('otpauth-migration://offline?data='))
    .catch(async () => {
      throw new Error(`the QR code was not read: ${await dialog.textContent()}`)
    })
  await dialog.getByRole('button', { name: 'Preview' }).click()
  await dialog.getByText(`${count} new`).waitFor()
  // The dialog with its preview is usable with a screen reader.
  expect(await seriousViolations(page)).toEqual([])
  await dialog.getByRole('button', { name: `Import ${count} tokens` }).click()
  await dialog.waitFor({ state: 'detached' })
  return bodies
}

needs(
  'a QR code image is decoded in the browser: the import request carries its text, no request carries the image',
  async () => {
    const alice = await signUp(server.url)
    await signInBrowser(browser, server.url, alice.email)
    const link = googleLink(TOKENS, 0, 1)
    const png = await qrPng(link)
    const page = await openTab(browser, server.url, '/2fa')
    const bodies = await importPng(page, png, TOKENS.length)
    // Only the two import requests (preview, apply) sent a body, each holding the link's text.
    expect(bodies.map((b) => new URL(b.url).pathname)).toEqual(['/api/2fa/import', '/api/2fa/import'])
    for (const { body } of bodies) {
      expect(JSON.parse(body.toString()).content.trim()).toBe(link)
      // Not the image: no PNG signature, nor anything near its size.
      expect(body.includes(Buffer.from([0x89, 0x50, 0x4e, 0x47]))).toBe(false)
      expect(body.includes(png.subarray(0, 64).toString('base64').slice(0, 40))).toBe(false)
      expect(body.length).toBeLessThan(png.length)
    }
    await expectCodes(alice, TOKENS)
    // The HOTP token shows a code only when asked.
    const card = page.locator('article.token[data-token="VPN"]')
    await card.getByRole('button', { name: 'Show code for VPN' }).click()
    await card.getByRole('button', { name: 'Next code for VPN' }).waitFor()
    expect(await card.locator('.token-digits').textContent()).toBe(oathtool(HOTP, NOW_SECONDS, HOTP.counter + 1).replace(/^(...)(...)$/, '$1 $2'))
    await page.close()
  },
  60_000,
)

needs(
  "the page's Google Authenticator QR codes scan back into the same tokens",
  async () => {
    const alice = await signUp(server.url)
    for (const known of TOKENS) {
      const created = await alice.post('/api/2fa', { service: known.issuer, accountName: known.account, secret: otpauthOf(known) })
      expect(created.status).toBe(201)
    }
    await signInBrowser(browser, server.url, alice.email)
    const page = await openTab(browser, server.url, '/2fa')
    await page.getByRole('button', { name: 'Export', exact: true }).click()
    const dialog = page.getByRole('dialog', { name: 'Export 2FA tokens' })
    await dialog.getByLabel(/Google Authenticator QR codes/).check()
    await dialog.locator('input[name="password"]').fill(PASSWORD)
    expect(await seriousViolations(page)).toEqual([])
    await dialog.getByRole('button', { name: 'Export', exact: true }).click()
    const codes = page.getByRole('dialog', { name: 'Scan with Google Authenticator' })
    const image = codes.getByRole('img', { name: 'Google Authenticator QR code 1 of 1' })
    await image.waitFor()
    expect(await seriousViolations(page)).toEqual([])
    const png = await image.screenshot({ type: 'png' })
    await codes.getByRole('button', { name: 'Done' }).click()
    await page.close()

    const bob = await signUp(server.url)
    await signInBrowser(browser, server.url, bob.email)
    const bobPage = await openTab(browser, server.url, '/2fa')
    await importPng(bobPage, png, TOKENS.length)
    await expectCodes(bob, TOKENS)
    await bobPage.close()
  },
  60_000,
)

function otpauthOf(known: Known): string {
  const extra = known.type === 'hotp' ? `&counter=${known.counter}` : `&period=${known.period}`
  return `otpauth://${known.type}/${encodeURIComponent(known.issuer)}:${encodeURIComponent(known.account)}?secret=${known.secret}&issuer=${encodeURIComponent(known.issuer)}&algorithm=${known.algorithm}&digits=${known.digits}${extra}`
}
