// A test that drives Chromium does not use `expect(promise).resolves` / `.rejects`. Bun (1.4.5)
// waits for such a promise by running the event loop inside the current setImmediate batch; the
// rest of that batch runs only after newer immediates. playwright-core's in-process connection
// posts each protocol message with setImmediate, so a response was delivered before its request
// ("Cannot find parent object request@… to create response@…"), the page's later calls failed and
// test/e2e/activity.test.ts failed about 1 run in 4. `expect(await promise)` waits plainly.
import { expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { ROOT } from '../support/server'

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? testFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  )
}

test('no test or helper that drives Chromium waits through expect(…) resolves or rejects', () => {
  const offenders: string[] = []
  for (const file of testFiles(join(ROOT, 'test'))) {
    const text = readFileSync(file, 'utf8')
    if (!/playwright-core|support\/browser|support\/page-session|\.\/browser'/.test(text)) continue
    text.split('\n').forEach((line, index) => {
      if (/\.(resolves|rejects)\b/.test(line) && !line.trimStart().startsWith('//')) offenders.push(`${relative(ROOT, file)}:${index + 1}`)
    })
  }
  expect(offenders).toEqual([])
})
