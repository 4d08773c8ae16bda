// Builds the web interface from web/ and packs the brand icons: what `bun run build` embeds in
// the server (scripts/build.ts), and what a server run from the sources (`bun src/index.ts`,
// tests) builds once on first use instead. One builder for both, so both serve the same bytes.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { basename, dirname, join } from 'node:path'
import { brotliCompressSync, constants as zlib } from 'node:zlib'
import ICON_SLUGS from '../domain/icon-slugs.json'
import { isIconSlug } from '../domain/rules'
import { packIcons } from './icons'

const WEB_DIR = join(import.meta.dir, '..', '..', 'web')

export interface BuiltFile {
  /** Where it is served, e.g. /assets/app.1a2b3c4d5e6f.js */
  path: string
  type: string
  bytes: Uint8Array<ArrayBuffer>
  /** The same bytes compressed once here, at build: served by Accept-Encoding. */
  br: Uint8Array<ArrayBuffer>
  gzip: Uint8Array<ArrayBuffer>
}

/**
 * Brotli and gzip (level 9), done once. `bun run build` takes brotli's best quality (11: about 2 s
 * for the script, paid once per build); a server run from the sources (tests, `bun run dev`)
 * builds on its first page and takes quality 5 (faster, a little larger), so that page
 * does not wait.
 */
export function precompress(bytes: Uint8Array<ArrayBuffer>, effort: 'best' | 'fast' = 'best'): { br: Uint8Array<ArrayBuffer>; gzip: Uint8Array<ArrayBuffer> } {
  const quality = effort === 'best' ? 11 : 5
  const br = brotliCompressSync(bytes, { params: { [zlib.BROTLI_PARAM_QUALITY]: quality, [zlib.BROTLI_PARAM_SIZE_HINT]: bytes.length } })
  return { br: new Uint8Array(br), gzip: new Uint8Array(Bun.gzipSync(bytes, { level: 9 })) }
}

export interface BuiltWeb {
  /** index.html with its asset paths filled in; %SESSION% is filled per request. */
  html: string
  files: BuiltFile[]
}

const shortHash = (bytes: Uint8Array) => new Bun.CryptoHasher('sha256').update(bytes).digest('hex').slice(0, 12)

export async function buildWeb(effort: 'best' | 'fast' = 'best'): Promise<BuiltWeb> {
  const result = await Bun.build({
    entrypoints: [join(WEB_DIR, 'main.tsx')],
    target: 'browser',
    format: 'esm',
    minify: true,
    // Libraries the page imports lazily (the 2FA import's QR decoder) become chunks of their own,
    // fetched only when used: the first load stays small.
    splitting: true,
    naming: { chunk: 'chunk-[hash].[ext]' },
    define: { 'process.env.NODE_ENV': '"production"' },
  })
  if (!result.success) throw new Error(`web bundle failed: ${result.logs.map(String).join('\n')}`)
  const script = result.outputs.find((output) => output.kind === 'entry-point')
  if (!script) throw new Error('web bundle failed: no entry point output')
  const js = new Uint8Array(await script.arrayBuffer())
  const css = new Uint8Array(readFileSync(join(WEB_DIR, 'styles.css')))
  const jsPath = `/assets/app.${shortHash(js)}.js`
  const cssPath = `/assets/app.${shortHash(css)}.css`
  // Chunks keep the names the entry imports them by (relative, so beside it under /assets/).
  const chunks: BuiltFile[] = []
  for (const output of result.outputs.filter((output) => output.kind === 'chunk')) {
    const bytes = new Uint8Array(await output.arrayBuffer())
    chunks.push({ path: `/assets/${basename(output.path)}`, type: 'text/javascript; charset=utf-8', bytes, ...precompress(bytes, effort) })
  }
  const html = readFileSync(join(WEB_DIR, 'index.html'), 'utf8').replace('%APP_JS%', jsPath).replace('%APP_CSS%', cssPath)
  return {
    html,
    files: [
      { path: jsPath, type: 'text/javascript; charset=utf-8', bytes: js, ...precompress(js, effort) },
      { path: cssPath, type: 'text/css; charset=utf-8', bytes: css, ...precompress(css, effort) },
      ...chunks,
    ],
  }
}

interface IconData {
  slug: string
  hex: string
}

/** Every simple-icons icon (CC0) whose slug a category's icon field can hold, and where they are. */
export function simpleIconsData(): { dir: string; icons: IconData[] } {
  const dir = dirname(createRequire(import.meta.url).resolve('simple-icons/package.json'))
  const data = JSON.parse(readFileSync(join(dir, 'data', 'simple-icons.json'), 'utf8')) as IconData[]
  return { dir, icons: data.filter((icon) => isIconSlug(icon.slug) && /^[0-9A-Fa-f]{6}$/.test(icon.hex)) }
}

/** The pack of the icons src/domain/icon-slugs.json lists: the import keeps the same ones (domain/icons.ts). */
export function buildIconPack(): Uint8Array<ArrayBuffer> {
  const { dir, icons: installed } = simpleIconsData()
  const bySlug = new Map(installed.map((icon) => [icon.slug, icon]))
  const data = ICON_SLUGS.map((slug) => {
    const icon = bySlug.get(slug)
    if (!icon) throw new Error(`simple-icons has no icon "${slug}": run bun scripts/icon-slugs.ts`)
    return icon
  })
  const icons = data.map((icon) => ({
    slug: icon.slug,
    svg: readFileSync(join(dir, 'icons', `${icon.slug}.svg`), 'utf8').replace('<svg ', `<svg fill="#${icon.hex}" `),
  }))
  return packIcons(icons, (bytes) => Bun.gzipSync(bytes, { level: 9 }))
}
