// Brand icons from the simple-icons package (CC0), served by the vault itself so the page never
// fetches anything from the internet. Only slugs the package knows are read; the slug is checked
// against that list, never joined into a path unchecked.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

export const ICON_SLUG = /^[a-z0-9-]{1,64}$/

interface IconData {
  slug: string
  hex: string
  title: string
}

let packageDir: string | undefined
let colors: Map<string, string> | undefined
const cache = new Map<string, string>()

function iconColors(): Map<string, string> {
  if (!colors) {
    packageDir = dirname(createRequire(import.meta.url).resolve('simple-icons/package.json'))
    const data = JSON.parse(readFileSync(join(packageDir, 'data', 'simple-icons.json'), 'utf8')) as IconData[]
    // A few slugs hold `_`, which a category's icon field cannot: those are left out.
    colors = new Map(data.filter((icon) => ICON_SLUG.test(icon.slug) && /^[0-9A-Fa-f]{6}$/.test(icon.hex)).map((icon) => [icon.slug, icon.hex]))
  }
  return colors
}

/** Whether the installed simple-icons has this slug (suggested icons are kept only then). */
export function isKnownIconSlug(slug: string): boolean {
  return ICON_SLUG.test(slug) && iconColors().has(slug)
}

/** The icon's SVG filled with its brand colour, or undefined for an unknown slug. */
export function iconSvg(slug: string): string | undefined {
  if (!ICON_SLUG.test(slug)) return undefined
  const hit = cache.get(slug)
  if (hit) return hit
  const hex = iconColors().get(slug)
  if (!hex) return undefined
  const raw = readFileSync(join(packageDir!, 'icons', `${slug}.svg`), 'utf8')
  const svg = raw.replace('<svg ', `<svg fill="#${hex}" `)
  cache.set(slug, svg)
  return svg
}

let slugsJson: string | undefined

/** Every known slug as a JSON array: the page shows an icon only for these, and suggests them. */
export function iconSlugsJson(): string {
  slugsJson ??= JSON.stringify([...iconColors().keys()].sort())
  return slugsJson
}
