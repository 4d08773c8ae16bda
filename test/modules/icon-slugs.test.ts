// Issue 23: every icon slug the import can suggest exists in the installed Simple Icons (16),
// so the page can show it; `openai` and a few others left the set.
import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { classifyKeys, SERVICES } from '../../src/modules/ai/classifier'
import { validKeyFiling } from '../../src/modules/ai/service'
import { buildIconPack, simpleIconsData } from '../../src/web/build'
import { iconSlugs } from '../../src/domain/icons'
import { IconPack } from '../../src/web/icons'

const packageDir = dirname(createRequire(import.meta.url).resolve('simple-icons/package.json'))
const known = new Set((JSON.parse(readFileSync(join(packageDir, 'data', 'simple-icons.json'), 'utf8')) as { slug: string }[]).map((icon) => icon.slug))
const exists = (slug: string) => known.has(slug) && existsSync(join(packageDir, 'icons', `${slug}.svg`))

describe('icon slugs', () => {
  test('the installed simple-icons is version 16 and lacks openai', () => {
    const version = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')).version as string
    expect(version.split('.')[0]).toBe('16')
    expect(exists('openai')).toBe(false)
    expect(exists('github')).toBe(true)
  })

  test('every service of the built-in classifier names an existing slug, or none', () => {
    const missing = SERVICES.filter((service) => service.icon !== undefined && !exists(service.icon)).map((s) => `${s.name}: ${s.icon}`)
    expect(missing).toEqual([])
  })

  test('every slug the classifier suggests, for every service prefix and name, exists', () => {
    const names = SERVICES.flatMap((service) => [...service.prefixes.map((prefix) => `${prefix}_API_KEY`), ...(service.names ?? [])])
    // One at a time (simple suggestions) and all together (groups).
    const suggestions = [...names.flatMap((name) => classifyKeys([{ name }])), ...classifyKeys(names.map((name) => ({ name })))]
    const slugs = new Set(suggestions.map((key) => key.icon).filter((icon): icon is string => icon !== undefined))
    expect(slugs.size).toBeGreaterThan(20)
    expect([...slugs].filter((slug) => !exists(slug))).toEqual([])
  })

  test("a model's icon that simple-icons does not have is dropped", () => {
    const filed = validKeyFiling(
      {
        keys: [
          { name: 'OPENAI_API_KEY', categoryName: 'OpenAI', keyType: 'simple', icon: 'openai' },
          { name: 'STRIPE_KEY', categoryName: 'Stripe', keyType: 'simple', icon: 'stripe' },
        ],
      },
      [{ name: 'OPENAI_API_KEY' }, { name: 'STRIPE_KEY' }],
      exists,
    )!
    expect(filed[0].icon).toBeUndefined()
    expect(filed[1].icon).toBe('stripe')
  })
})

describe('icon slugs the page suggests', () => {
  test('the slugs named in the page sources (hints, examples, placeholders) exist', () => {
    const { Glob } = require('bun') as typeof import('bun')
    const root = join(import.meta.dir, '..', '..', 'web')
    const named: string[] = []
    for (const file of new Glob('**/*.{ts,tsx}').scanSync(root)) {
      const text = readFileSync(join(root, file), 'utf8')
      for (const match of text.matchAll(/Simple Icons slug: ([a-z0-9-, ]+)/g))
        named.push(
          ...match[1]
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
        )
      for (const match of text.matchAll(/slug such as “([a-z0-9-]+)” or “([a-z0-9-]+)”/g)) named.push(match[1], match[2])
      for (const match of text.matchAll(/name="icon"[^>]*placeholder="([a-z0-9-]+)"/g)) named.push(match[1])
    }
    expect(named.length).toBeGreaterThan(0)
    expect(named.filter((slug) => !exists(slug))).toEqual([])
  })
})

describe('icon slugs the import keeps', () => {
  test('src/domain/icon-slugs.json, the one list, is every icon of the installed simple-icons a category can show (bun scripts/icon-slugs.ts writes it)', () => {
    const listed = JSON.parse(readFileSync(join(import.meta.dir, '..', '..', 'src', 'domain', 'icon-slugs.json'), 'utf8')) as string[]
    const installed = simpleIconsData()
      .icons.map((icon) => icon.slug)
      .sort()
    expect(listed.length).toBeGreaterThan(3000)
    expect(listed).toEqual(installed)
  })

  test('are the slugs the vault serves icons for (the import reads them without building the page)', async () => {
    const pack = buildIconPack()
    const served = await new IconPack(async (start, end) => pack.subarray(start, end)).slugs()
    const kept = await iconSlugs()
    expect(kept.size).toBe(served.size)
    expect([...kept].filter((slug) => !served.has(slug))).toEqual([])
    expect(kept.has('github') && !kept.has('openai')).toBe(true)
  })
})
