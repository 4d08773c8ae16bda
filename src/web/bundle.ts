// The browser bundle: built from web/ with Bun's bundler on first use and kept in memory, so users
// need no build step and start-up is not held up by it. Asset names carry a content hash, so
// they can be cached for good while index.html is always fetched fresh.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { PROJECT_DIR } from '../paths'

export const WEB_DIR = join(PROJECT_DIR, 'web')

export interface Asset {
  body: Uint8Array<ArrayBuffer>
  type: string
}

export interface WebBundle {
  html: string
  /** Keyed by path, e.g. /assets/app.1a2b3c4d.js */
  assets: Map<string, Asset>
}

const shortHash = (bytes: Uint8Array) => new Bun.CryptoHasher('sha256').update(bytes).digest('hex').slice(0, 12)

async function build(): Promise<WebBundle> {
  const result = await Bun.build({
    entrypoints: [join(WEB_DIR, 'main.tsx')],
    target: 'browser',
    format: 'esm',
    minify: true,
    define: { 'process.env.NODE_ENV': '"production"' },
  })
  if (!result.success) throw new Error(`web bundle failed: ${result.logs.map(String).join('\n')}`)
  const script = result.outputs.find((output) => output.kind === 'entry-point')
  if (!script) throw new Error('web bundle failed: no entry point output')
  const js = new Uint8Array(await script.arrayBuffer())
  const css = new Uint8Array(readFileSync(join(WEB_DIR, 'styles.css')))
  const jsPath = `/assets/app.${shortHash(js)}.js`
  const cssPath = `/assets/app.${shortHash(css)}.css`
  const template = readFileSync(join(WEB_DIR, 'index.html'), 'utf8')
  const html = template.replace('%APP_JS%', jsPath).replace('%APP_CSS%', cssPath)
  return {
    html,
    assets: new Map([
      [jsPath, { body: js, type: 'text/javascript; charset=utf-8' }],
      [cssPath, { body: css, type: 'text/css; charset=utf-8' }],
    ]),
  }
}

let pending: Promise<WebBundle> | undefined

/** The bundle, built once per process; a failed build is retried on the next request. */
export function webBundle(): Promise<WebBundle> {
  if (!pending) {
    pending = build().catch((error) => {
      pending = undefined
      throw error
    })
  }
  return pending
}
