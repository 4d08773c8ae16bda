// `bun run build`: bundles the server into dist/, which `bun run start` runs. One file plus a chunk
// per lazily loaded library instead of some 340 modules: the server starts about 40 ms sooner and
// holds about 6 MB less memory. `bun src/index.ts` runs the same code unbundled.
//
// A server may be running from dist/ while this runs (a second `bun run start`, which then stops
// at the data folder's lock; an upgrade before a restart). Its lazily loaded chunks must stay
// readable, so nothing is deleted and a file is replaced only when its content changed, by an
// atomic rename. Chunk names carry a content hash, so an unchanged chunk is never rewritten.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dir, '..')
const outdir = join(root, 'dist')
const result = await Bun.build({
  entrypoints: [join(root, 'src', 'index.ts')],
  target: 'bun',
  // Dynamic imports (the AI SDK, the OIDC client, TOTP, the OpenAPI generator) stay lazy.
  splitting: true,
})
if (!result.success) {
  for (const log of result.logs) console.error(log)
  process.exit(1)
}
mkdirSync(outdir, { recursive: true })
for (const output of result.outputs) {
  const path = join(outdir, output.path)
  const bytes = new Uint8Array(await output.arrayBuffer())
  if (existsSync(path) && Buffer.from(readFileSync(path)).equals(bytes)) continue
  const temp = `${path}.${process.pid}.tmp`
  writeFileSync(temp, bytes)
  renameSync(temp, path)
}
