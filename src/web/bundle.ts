// The web interface's files: the ones embedded at build time (prebuilt.ts), or, run from the
// sources, the same builder's output made once on first use. Asset names carry a content hash,
// so they can be cached for good while index.html is always fetched fresh.
import { IconPack } from './icons'
import { prebuiltWeb } from './prebuilt'

export type Encoding = 'br' | 'gzip' | 'identity'

export interface Asset {
  body: Uint8Array<ArrayBuffer>
  type: string
}

export interface WebBundle {
  html: string
  /** The asset served at this path (e.g. /assets/app.1a2b3c4d5e6f.js) in this encoding, or undefined. */
  asset(path: string, encoding?: Encoding): Promise<Asset | undefined>
  icons: IconPack
}

const prebuiltIcons = (file: string) => new IconPack((start, end) => Bun.file(file).slice(start, end).bytes())

function fromPrebuilt(prebuilt: NonNullable<typeof prebuiltWeb>): WebBundle {
  const files = new Map(prebuilt.files.map((file) => [file.path, file]))
  const read = new Map<string, Promise<Asset>>()
  return {
    html: prebuilt.html,
    asset(path, encoding = 'identity') {
      const file = files.get(path)
      if (!file) return Promise.resolve(undefined)
      const key = `${encoding} ${path}`
      let asset = read.get(key)
      if (!asset) {
        asset = Bun.file(encoding === 'br' ? file.br : encoding === 'gzip' ? file.gzip : file.file)
          .bytes()
          .then((body) => ({ body, type: file.type }))
        read.set(key, asset)
        asset.catch(() => read.delete(key))
      }
      return asset
    },
    icons: prebuiltIcons(prebuilt.icons),
  }
}

async function fromSources(): Promise<WebBundle> {
  const { buildIconPack, buildWeb } = await import('./build')
  const built = await buildWeb('fast')
  const assets = new Map(built.files.map((file) => [file.path, file]))
  let pack: Uint8Array<ArrayBuffer> | undefined
  return {
    html: built.html,
    asset: (path, encoding = 'identity') => {
      const file = assets.get(path)
      return Promise.resolve(file && { body: encoding === 'br' ? file.br : encoding === 'gzip' ? file.gzip : file.bytes, type: file.type })
    },
    // Packed on the first icon asked for: most test servers never show one.
    icons: new IconPack(async (start, end) => (pack ??= buildIconPack()).subarray(start, end)),
  }
}

let pending: Promise<WebBundle> | undefined

/** The bundle, once per process; a failed build from the sources is retried on the next request. */
export function webBundle(): Promise<WebBundle> {
  if (!pending) {
    pending = prebuiltWeb ? Promise.resolve(fromPrebuilt(prebuiltWeb)) : fromSources()
    pending.catch(() => {
      pending = undefined
    })
  }
  return pending
}
