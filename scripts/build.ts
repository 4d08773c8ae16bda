// `bun run build`: bundles the server into dist/ (dist/index.js and a chunk per lazily loaded
// library), which `bun run start` runs. `bun run build:server` (this with --compile): the same
// bundle as one executable, dist/svc-vault, with Bun inside. Both embed the web interface, built
// here from web/, and the brand icons (src/web/prebuilt.ts is replaced by the built files), so
// neither needs web/ or node_modules beside it.
//
// A server may be running from dist/ while this runs (a second `bun run start`, which then stops
// at the data folder's lock; an upgrade before a restart). Its lazily loaded chunks must stay
// readable, so nothing is deleted and a file is replaced only when its content changed, by an
// atomic rename. Chunk names carry a content hash, so an unchanged chunk is never rewritten.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BunPlugin } from 'bun'
import { buildIconPack, buildWeb } from '../src/web/build'
import { buildCliScript } from '../src/web/cli-bundle'
import { scalarScriptPath } from '../src/http/openapi'

const root = join(import.meta.dir, '..')
// --outdir=<folder>: somewhere else than dist/ (bench/footprint.ts measures a fresh build).
const outdir = process.argv.find((arg) => arg.startsWith('--outdir='))?.slice('--outdir='.length) || join(root, 'dist')
const compile = process.argv.includes('--compile')

const web = await buildWeb()
const stage = mkdtempSync(join(tmpdir(), 'svc-vault-build-'))
const staged = (name: string, bytes: Uint8Array) => {
  const path = join(stage, name)
  writeFileSync(path, bytes)
  return path
}
// Each asset as it is and precompressed (br, gzip): the server picks one by Accept-Encoding.
const files = web.files.map((file) => {
  const name = `web-${file.path.split('/').pop()}`
  return { path: file.path, type: file.type, staged: staged(name, file.bytes), br: staged(`${name}.br`, file.br), gzip: staged(`${name}.gz`, file.gzip) }
})
const icons = staged('icons.pack', buildIconPack())
// The API reference's script: 4 MB as installed, about a quarter gzipped, and served gzipped.
const docsScript = staged('scalar.js.gz', Bun.gzipSync(readFileSync(scalarScriptPath())))
const cliScript = staged('svc.js', await buildCliScript())

// The built files are imported as files: copied beside dist/index.js under hashed names, or
// embedded in the executable. Bun gives their path relative to the bundle (or inside the
// executable, absolute), hence the resolve.
const prebuiltModule = [
  `import { resolve } from 'node:path'`,
  ...files.flatMap((file, i) => [
    `import file${i} from ${JSON.stringify(file.staged)} with { type: 'file' }`,
    `import file${i}br from ${JSON.stringify(file.br)} with { type: 'file' }`,
    `import file${i}gz from ${JSON.stringify(file.gzip)} with { type: 'file' }`,
  ]),
  `import icons from ${JSON.stringify(icons)} with { type: 'file' }`,
  `import docsScript from ${JSON.stringify(docsScript)} with { type: 'file' }`,
  `import cliScript from ${JSON.stringify(cliScript)} with { type: 'file' }`,
  `const at = (file) => resolve(import.meta.dir, file)`,
  `export const prebuiltWeb = {`,
  `  html: ${JSON.stringify(web.html)},`,
  `  files: [${files.map((file, i) => `{ path: ${JSON.stringify(file.path)}, type: ${JSON.stringify(file.type)}, file: at(file${i}), br: at(file${i}br), gzip: at(file${i}gz) }`).join(', ')}],`,
  `  icons: at(icons),`,
  `  docsScript: at(docsScript),`,
  `  cli: at(cliScript),`,
  `}`,
].join('\n')
const embedWeb: BunPlugin = {
  name: 'embed-web',
  setup(build) {
    build.onLoad({ filter: /[\\/]src[\\/]web[\\/]prebuilt\.ts$/ }, () => ({ loader: 'js', contents: prebuiltModule }))
  },
}

try {
  mkdirSync(outdir, { recursive: true })
  if (compile) {
    // Written beside and renamed over the old one, which may be running.
    const temp = join(outdir, `.svc-vault.${process.pid}.tmp`)
    const result = await Bun.build({
      entrypoints: [join(root, 'src', 'index.ts')],
      target: 'bun',
      plugins: [embedWeb],
      compile: { outfile: temp },
      // Lazy libraries stay lazy inside the executable too: about 3.5 MB less idle memory.
      splitting: true,
    })
    if (!result.success) fail(result.logs)
    renameSync(temp, join(outdir, 'svc-vault'))
  } else {
    const result = await Bun.build({
      entrypoints: [join(root, 'src', 'index.ts')],
      target: 'bun',
      plugins: [embedWeb],
      // Dynamic imports (the AI SDK, the OIDC client, TOTP, the OpenAPI generator) stay lazy.
      splitting: true,
    })
    if (!result.success) fail(result.logs)
    for (const output of result.outputs) {
      const path = join(outdir, output.path)
      const bytes = new Uint8Array(await output.arrayBuffer())
      if (existsSync(path) && Buffer.from(readFileSync(path)).equals(bytes)) continue
      const temp = `${path}.${process.pid}.tmp`
      writeFileSync(temp, bytes)
      renameSync(temp, path)
    }
  }
} finally {
  rmSync(stage, { recursive: true, force: true })
}

function fail(logs: unknown[]): never {
  for (const log of logs) console.error(log)
  process.exit(1)
}
