// `bun run build`: bundles the server into dist/, which `bun run start` runs. One file plus a chunk
// per lazily loaded library instead of some 340 modules: the server starts about 40 ms sooner and
// holds about 6 MB less memory. `bun src/index.ts` runs the same code unbundled.
import { rmSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dir, '..')
const outdir = join(root, 'dist')
rmSync(outdir, { recursive: true, force: true })
const result = await Bun.build({
  entrypoints: [join(root, 'src', 'index.ts')],
  outdir,
  target: 'bun',
  // Dynamic imports (the AI SDK, the OIDC client, TOTP, the OpenAPI generator) stay lazy.
  splitting: true,
})
if (!result.success) {
  for (const log of result.logs) console.error(log)
  process.exit(1)
}
