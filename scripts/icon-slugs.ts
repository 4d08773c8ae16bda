// Writes src/domain/icon-slugs.json, the one list of brand icons the vault has, from the installed
// simple-icons: run it after upgrading simple-icons (test/modules/icon-slugs.test.ts fails until then).
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { simpleIconsData } from '../src/web/build'

const slugs = simpleIconsData()
  .icons.map((icon) => icon.slug)
  .sort()
const file = join(import.meta.dir, '..', 'src', 'domain', 'icon-slugs.json')
// One slug a line: an upgrade's diff reads as the icons it adds and removes.
writeFileSync(file, `[\n${slugs.map((slug) => JSON.stringify(slug)).join(',\n')}\n]\n`)
console.log(`${slugs.length} slugs written to ${file}`)
