// `bun scripts/tests-alone.ts [files...]`: runs every test on its own (`bun test FILE -t NAME`),
// to prove that no test relies on another having run before it. Slow (a process per test): run it
// after changing how tests share state, not in CI. Default: every *.test.ts under test/.
import { spawnSync } from 'node:child_process'
import { Glob } from 'bun'
import { join } from 'node:path'
import { escapeRegExp, testNames } from './bun-test'

const ROOT = join(import.meta.dir, '..')
const files = process.argv.slice(2).length ? process.argv.slice(2) : [...new Glob('test/**/*.test.ts').scanSync(ROOT)].sort()

const run = (args: string[]) => {
  const result = spawnSync('bun', ['test', '--timeout', '60000', ...args], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  return { code: result.status ?? 1, output: `${result.stdout}${result.stderr}` }
}

const failures: string[] = []
let count = 0
for (const file of files) {
  // Names from a run of the whole file.
  for (const name of testNames(run([file]).output)) {
    count++
    const alone = run([file, '-t', `^${escapeRegExp(name.split(' > ').join(' '))}$`])
    const passed = alone.code === 0 && /\b1 pass\b/.test(alone.output)
    console.log(`${passed ? 'ok  ' : 'FAIL'} ${file} :: ${name}`)
    if (!passed)
      failures.push(
        `${file} :: ${name}\n${alone.output
          .split('\n')
          .filter((line) => /error|expect|fail/i.test(line))
          .slice(0, 12)
          .join('\n')}`,
      )
  }
}
console.log(`${count - failures.length} of ${count} tests pass alone`)
if (failures.length) {
  console.error(failures.join('\n\n'))
  process.exit(1)
}
