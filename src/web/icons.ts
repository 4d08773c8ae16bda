// Brand icons from the simple-icons package (CC0), served by the vault itself so the page never
// fetches anything from the internet. They travel in one pack made at build time (build.ts): the
// sorted slugs, then the SVGs (already filled with their brand colour) gzipped in small chunks,
// so answering an icon reads and inflates one chunk, not the 5 MB of all of them. A slug is
// looked up in the pack's list, never joined into a path.
import { isIconSlug } from '../domain/rules'

/** Icons per chunk: about 80 KB of SVG each, inflated in well under a millisecond. */
const CHUNK_ICONS = 64

interface PackHeader {
  slugs: string[]
  /** [offset, length] of each chunk after the header; chunk i holds slugs[i * CHUNK_ICONS ...]. */
  chunks: [number, number][]
}

/** Pack layout: header length (4 bytes, little-endian), header JSON, gzipped JSON chunks. */
export function packIcons(icons: { slug: string; svg: string }[], gzip: (bytes: Uint8Array<ArrayBuffer>) => Uint8Array): Uint8Array<ArrayBuffer> {
  const sorted = [...icons].sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0))
  const bodies: Uint8Array[] = []
  const chunks: [number, number][] = []
  let offset = 0
  for (let start = 0; start < sorted.length; start += CHUNK_ICONS) {
    const body = gzip(new TextEncoder().encode(JSON.stringify(sorted.slice(start, start + CHUNK_ICONS).map((icon) => icon.svg))))
    chunks.push([offset, body.length])
    bodies.push(body)
    offset += body.length
  }
  const header = new TextEncoder().encode(JSON.stringify({ slugs: sorted.map((icon) => icon.slug), chunks } satisfies PackHeader))
  const pack = new Uint8Array(4 + header.length + offset)
  new DataView(pack.buffer).setUint32(0, header.length, true)
  pack.set(header, 4)
  let at = 4 + header.length
  for (const body of bodies) {
    pack.set(body, at)
    at += body.length
  }
  return pack
}

/** Reads bytes [start, end) of the pack, from memory or from a file. */
export type PackReader = (start: number, end: number) => Promise<Uint8Array<ArrayBuffer>>

export class IconPack {
  private header: Promise<{ data: PackHeader; index: Map<string, number>; base: number }> | undefined
  private slugsText: string | undefined
  private readonly svgs = new Map<string, string>()

  constructor(private readonly read: PackReader) {}

  private open() {
    this.header ??= (async () => {
      const length = new DataView((await this.read(0, 4)).slice().buffer).getUint32(0, true)
      const data = JSON.parse(new TextDecoder().decode(await this.read(4, 4 + length))) as PackHeader
      return { data, index: new Map(data.slugs.map((slug, i) => [slug, i])), base: 4 + length }
    })()
    return this.header
  }

  /** Every known slug as a JSON array: the page shows an icon only for these, and suggests them. */
  async slugsJson(): Promise<string> {
    this.slugsText ??= JSON.stringify((await this.open()).data.slugs)
    return this.slugsText
  }

  /** The set of known slugs: a suggested icon is kept only when the pack has it. */
  async slugs(): Promise<ReadonlySet<string>> {
    return new Set((await this.open()).index.keys())
  }

  /** The icon's SVG, or undefined for an unknown slug. */
  async svg(slug: string): Promise<string | undefined> {
    if (!isIconSlug(slug)) return undefined
    const known = this.svgs.get(slug)
    if (known) return known
    const { data, index, base } = await this.open()
    const position = index.get(slug)
    if (position === undefined) return undefined
    const chunk = Math.floor(position / CHUNK_ICONS)
    const [offset, length] = data.chunks[chunk]
    const svgs = JSON.parse(new TextDecoder().decode(Bun.gunzipSync(await this.read(base + offset, base + offset + length)))) as string[]
    const svg = svgs[position - chunk * CHUNK_ICONS]
    this.svgs.set(slug, svg)
    return svg
  }
}
