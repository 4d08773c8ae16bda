// Issue 32: each source file reads on its own (web/pages/keys.tsx had grown to 731 lines), and the
// screenshots the README and docs show are the ones a test run makes, so they cannot drift.
import { expect, test } from 'bun:test'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { ROOT } from '../support/server'

const MAX_LINES = 600

function filesUnder(dir: string, pattern: RegExp): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return filesUnder(path, pattern)
    return pattern.test(name) ? [path] : []
  })
}

test(`no source file in src/ or web/ is over ${MAX_LINES} lines`, () => {
  const files = [...filesUnder(join(ROOT, 'src'), /\.(ts|tsx)$/), ...filesUnder(join(ROOT, 'web'), /\.(ts|tsx|css|html)$/)]
  expect(files.length).toBeGreaterThan(50)
  const long = files
    .map((file) => ({ file: relative(ROOT, file), lines: readFileSync(file, 'utf8').split('\n').length }))
    .filter(({ lines }) => lines > MAX_LINES)
  expect(long).toEqual([])
})

test('every screenshot the README and docs show is written by a test', () => {
  const documents = [join(ROOT, 'README.md'), ...filesUnder(join(ROOT, 'docs'), /\.md$/)]
  const shown = new Set(documents.flatMap((file) => [...readFileSync(file, 'utf8').matchAll(/screenshots\/([a-z0-9-]+\.png)/g)].map((match) => match[1])))
  expect(shown.size).toBeGreaterThan(3)
  const tests = filesUnder(join(ROOT, 'test', 'e2e'), /\.test\.ts$/).map((file) => readFileSync(file, 'utf8'))
  // Written by name into SCREENSHOTS, which is docs/screenshots unless SVC_SCREENSHOTS=0.
  const written = (name: string) => tests.some((text) => text.includes("process.env.SVC_SCREENSHOTS === '0'") && text.includes(`'${name}'`))
  expect([...shown].filter((name) => !written(name))).toEqual([])
})
