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

/** Checks every asset of the page in each encoding; answers the first load's total sizes. */
export async function checkCompressedAssets(base: string): Promise<AssetSizes> {
  const html = await (await fetch(`${base}/`)).text()
  const paths = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((match) => match[1])
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
