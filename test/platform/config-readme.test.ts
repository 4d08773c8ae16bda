// The README's settings table is the settings table of src/settings.ts, printed: a setting added to
// the code but not to the README, or described differently there, fails here.
import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SETTINGS, settingsMarkdown } from '../../src/settings'
import { ROOT } from '../support/server'

function readmeTable(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const start = readme.indexOf('\n', readme.indexOf('<!-- settings table:'))
  const end = readme.indexOf('<!-- end of settings table -->')
  expect(start).toBeGreaterThan(0)
  expect(end).toBeGreaterThan(start)
  return readme.slice(start, end).trim()
}

test('every setting has a README row, in the table order, with its default and description', () => {
  const rows = readmeTable().split('\n').slice(2)
  expect(rows.map((row) => /^\| `([A-Z_]+)` \|/.exec(row)?.[1])).toEqual(Object.keys(SETTINGS))
  // Whole rows: a default or a description changed on one side only is a difference too.
  expect(readmeTable(), 'README.md differs from src/settings.ts: paste the output of `bun src/settings.ts` between the markers').toBe(settingsMarkdown())
})
