// Reading what `bun test` printed, and naming its tests in a -t pattern (scripts/mutants.ts,
// scripts/tests-alone.ts).

/** Text matched as it is inside a -t pattern (a regular expression). */
export const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** The names of the tests bun marked with one of `marks` ("(pass) describe > test [12ms]"), once each, in order. */
export function testNames(output: string, marks: readonly ('pass' | 'fail')[] = ['pass', 'fail']): string[] {
  const names = [...output.matchAll(/^\((pass|fail)\) (.+?)(?: \[[\d.]+m?s\])?$/gm)].filter((m) => marks.includes(m[1] as 'pass' | 'fail')).map((m) => m[2])
  return [...new Set(names)]
}
