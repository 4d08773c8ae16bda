// axe-core in the page, evaluated through the DevTools protocol (the page's CSP, script-src
// 'self', does not apply to it): the serious and critical violations, described.
import { readFileSync } from 'node:fs'
import type { Page } from 'playwright-core'
import { DESKTOP } from './page-session'

const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8')

export const PHONE = { width: 390, height: 844 }

interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: { target: string[] }[]
}

/** The serious and critical violations on the page as it is now (each prefixed by `where`, if given). */
export async function seriousViolations(page: Page, where?: string): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE)
  const violations = (await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<{ violations: unknown[] }> } }).axe
    return (await axe.run(document, { resultTypes: ['violations'] })).violations
  })) as AxeViolation[]
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(
      (violation) =>
        `${where ? `${where}: ` : ''}${violation.impact} ${violation.id} (${violation.help}): ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`,
    )
}

/** The same page in light and dark, at desktop and phone width, once `ready` has waited for it. */
export async function axeEveryWay(page: Page, where: string, ready: () => Promise<unknown>): Promise<string[]> {
  const found: string[] = []
  for (const colorScheme of ['light', 'dark'] as const) {
    for (const viewport of [DESKTOP, PHONE]) {
      await page.emulateMedia({ colorScheme })
      await page.setViewportSize(viewport)
      await ready()
      for (const violation of await seriousViolations(page)) found.push(`${where} [${colorScheme}, ${viewport.width}px] ${violation}`)
    }
  }
  await page.emulateMedia({ colorScheme: 'light' })
  await page.setViewportSize(DESKTOP)
  return found
}
