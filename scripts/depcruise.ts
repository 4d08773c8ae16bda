// `bun run depcruise`: the layering rules of .dependency-cruiser.cjs checked over src/ and web/
// (dependency-cruiser; fails on any violation, run by .ci/run). dependency-cruiser drives the
// TypeScript 5 compiler API, which the project's TypeScript 7 (a native compiler) does not offer:
// its imports of `typescript` get the `typescript5` dev dependency instead (as
// test/support/openapi-typescript.ts does for openapi-typescript). Runs under `bun --bun`.
import { plugin } from 'bun'

plugin({
  name: 'dependency-cruiser on TypeScript 5',
  setup(build) {
    build.onLoad({ filter: /dependency-cruiser[\\/]src[\\/](utl[\\/]try-import|extract[\\/]transpile[\\/]try-import-available)\.mjs$/ }, async ({ path }) => {
      const text = await Bun.file(path).text()
      const patched = text.replace(
        /export default (async )?function (\w+)\(pModuleName, pSemanticVersion\) \{/,
        (line) => `${line}\n\tif (pModuleName === "typescript") pModuleName = "typescript5";`,
      )
      if (patched === text) throw new Error(`scripts/depcruise.ts: ${path} changed; update the TypeScript 5 patch`)
      return { contents: patched, loader: 'js' }
    })
  },
})

const args = process.argv.slice(2)
process.argv = [process.argv[0], 'depcruise', '--config', '.dependency-cruiser.cjs', ...(args.length ? args : ['src', 'web'])]
await import(require.resolve('dependency-cruiser/package.json').replace(/package\.json$/, 'bin/dependency-cruiser.mjs'))
