// The naming rules are written once (src/domain/rules.ts): what they accept, that every place
// asking the question agrees with them, and that no file restates them.
import { describe, expect, test } from 'bun:test'
import { Value } from '@sinclair/typebox/value'
import { readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { isIconSlug, isVariableName, nameKey, sameName, toVariableName } from '../../src/domain/rules'
import { CreateCategoryBody } from '../../src/modules/categories/model'
import { shellLine } from '../../src/modules/export/render'
import { parseGroupValue } from '../../src/modules/entries/values'
import type { CategoryRecord } from '../../src/store/records'

const NAMES = ['A', '_', 'a1', 'OPENAI_API_KEY', '_9', '', '1A', 'A-B', 'A.B', 'A B', ' A', 'Ä', 'A\n', 'a'.repeat(200)]
const SLUGS = ['github', 'a', '1password', 'c-plus-plus', '', 'GitHub', 'git hub', 'git_hub', '../x', 'a.svg', 'a'.repeat(64), 'a'.repeat(65)]

describe('the rules', () => {
  test('same name: trimmed, any case; inner spaces and other letters count', () => {
    expect(sameName('OpenAI', ' openai ')).toBe(true)
    expect(sameName('My Blog', 'my blog')).toBe(true)
    expect(sameName('My Blog', 'MyBlog')).toBe(false)
    expect(sameName('Stripe', 'Stripe 2')).toBe(false)
    expect(nameKey('\tÄrger ')).toBe('ärger')
  })

  test('variable names: a letter or _ first, then letters, digits and _', () => {
    expect(NAMES.filter(isVariableName)).toEqual(['A', '_', 'a1', 'OPENAI_API_KEY', '_9', 'a'.repeat(200)])
  })

  test('icon slugs: a-z, 0-9 and -, 1 to 64 characters', () => {
    expect(SLUGS.filter(isIconSlug)).toEqual(['github', 'a', '1password', 'c-plus-plus', 'a'.repeat(64)])
  })

  test('a pasted name made a variable name is one, or null', () => {
    for (const raw of ['openai.api-key', '1st', ' padded ', 'ünïcode', '---', '', '   ', 'a'.repeat(201), '_ok']) {
      const name = toVariableName(raw)
      if (name !== null) expect({ raw, valid: isVariableName(name) }).toEqual({ raw, valid: true })
    }
    expect(['openai.api-key', '1st', '---', ' padded '].map(toVariableName)).toEqual(['openai_api_key', '_1st', null, 'padded'])
  })
})

describe('every place asks the rules', () => {
  const category = (fields: Partial<Record<string, unknown>>) => ({ name: 'X', keyType: 'simple', ...fields })

  test("the category schema's envVarName, field names and icon", () => {
    for (const name of NAMES.filter((n) => n !== '')) {
      expect({ name, ok: Value.Check(CreateCategoryBody, category({ envVarName: name })) }).toEqual({ name, ok: isVariableName(name) })
      expect({ name, ok: Value.Check(CreateCategoryBody, category({ keyType: 'group', fieldDefinitions: [name] })) }).toEqual({
        name,
        ok: isVariableName(name),
      })
    }
    for (const slug of SLUGS) {
      expect({ slug, ok: Value.Check(CreateCategoryBody, category({ envVarName: 'A', icon: slug })) }).toEqual({ slug, ok: isIconSlug(slug) })
    }
  })

  test("a group value's field names (no declared fields) and the shell export's names", () => {
    const group = { keyType: 'group', fieldDefinitions: null } as unknown as CategoryRecord
    for (const name of NAMES) {
      let accepted = true
      try {
        parseGroupValue(group, JSON.stringify({ [name]: 'v' }))
      } catch {
        accepted = false
      }
      expect({ name, accepted }).toEqual({ name, accepted: isVariableName(name) })
      expect({ name, written: shellLine(name, 'v').startsWith('export ') }).toEqual({ name, written: isVariableName(name) })
    }
  })

  test('no file restates a rule', () => {
    const { Glob } = require('bun') as typeof import('bun')
    const root = join(import.meta.dir, '..', '..')
    const restated = [
      { rule: 'variable name', pattern: /\[A-Za-z_\]\[A-Za-z0-9_\]\*\$/ },
      { rule: 'icon slug', pattern: /\[a-z0-9-\]\{1,64\}/ },
      { rule: 'same name', pattern: /\.trim\(\)\.toLowerCase\(\) === [\w.!?]+\.trim\(\)\.toLowerCase\(\)/ },
    ]
    const found: string[] = []
    for (const dir of ['src', 'web']) {
      for (const file of new Glob('**/*.{ts,tsx}').scanSync(join(root, dir))) {
        const path = join(root, dir, file)
        if (path.endsWith(join('src', 'domain', 'rules.ts'))) continue
        const text = readFileSync(path, 'utf8')
        for (const { rule, pattern } of restated) if (pattern.test(text)) found.push(`${relative(root, path)}: ${rule}`)
      }
    }
    expect(found).toEqual([])
  })
})
