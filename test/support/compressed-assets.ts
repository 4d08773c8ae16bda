// Issue 32: the web interface's assets are sent compressed (br, else gzip, by Accept-Encoding),
// precompressed at build, with `Vary: Accept-Encoding`. One check for a server run from the
// sources and for the executable. Bun's fetch is told not to inflate, so the bytes are as sent.
import { expect } from 'bun:test'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'

export interface AssetSizes {
  raw: number
  br: number
  gzip: number
}

/** The chunks a script imports statically (`import … from "./chunk-….js"`): loaded with it, before it runs. */
export function staticImports(script: string): string[] {
  return [...script.matchAll(/(?:^|[;}\s])(?:import|export)\s*(?:[\w*{}\s,$]*?from\s*)?"\.\/(chunk-[\w-]+\.js)"/g)].map((match) => `/assets/${match[1]}`)
}

/**
 * The first load: what index.html names and, transitively, the chunks those scripts import
 * statically (code shared with a lazily loaded page goes to such a chunk). Lazily imported chunks
 * (`import("./chunk-….js")`) come only when a page asks for them.
 */
export async function firstLoadPaths(html: string, read: (path: string) => Promise<string>): Promise<string[]> {
  const paths: string[] = []
  const visit = async (path: string) => {
    if (paths.includes(path)) return
    paths.push(path)
    if (path.endsWith('.js')) for (const imported of staticImports(await read(path))) await visit(imported)
  }
  for (const match of html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)) await visit(match[1])
  return paths
}

/** Checks every asset of the first load in each encoding; answers their total sizes. */
export async function checkCompressedAssets(base: string): Promise<AssetSizes> {
  const html = await (await fetch(`${base}/`)).text()
  const paths = await firstLoadPaths(html, async (path) => (await fetch(base + path)).text())
  expect(paths.length).toBeGreaterThanOrEqual(2)
  const sizes: AssetSizes = { raw: 0, br: 0, gzip: 0 }
  const get = async (path: string, acceptEncoding: string | null) => {
    const response = await fetch(base + path, {
      headers: acceptEncoding === null ? { 'accept-encoding': '' } : { 'accept-encoding': acceptEncoding },
      decompress: false,
    } as RequestInit)
    expect(response.status).toBe(200)
    expect(response.headers.get('vary')).toBe('Accept-Encoding')
    return { encoding: response.headers.get('content-encoding'), body: Buffer.from(await response.arrayBuffer()) }
  }
  for (const path of paths) {
    const plain = await get(path, null)
    expect(plain.encoding).toBeNull()
    const br = await get(path, 'gzip, deflate, br, zstd')
    expect(br.encoding).toBe('br')
    expect(brotliDecompressSync(br.body).equals(plain.body)).toBe(true)
    const gzip = await get(path, 'gzip, deflate')
    expect(gzip.encoding).toBe('gzip')
    expect(gunzipSync(gzip.body).equals(plain.body)).toBe(true)
    // A refused coding is not sent.
    expect((await get(path, 'br;q=0, gzip')).encoding).toBe('gzip')
    expect((await get(path, 'identity')).encoding).toBeNull()
    sizes.raw += plain.body.length
    sizes.br += br.body.length
    sizes.gzip += gzip.body.length
  }
  expect(sizes.br).toBeLessThan(sizes.raw / 2)
  return sizes
}
