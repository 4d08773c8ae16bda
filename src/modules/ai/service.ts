// AI extraction and import. The model (or, without it, the built-in classifier) sees names only;
// values are parsed, sealed, opened and rendered here on the server. Whatever the model answers is
// checked against the user's own data: unknown entry ids and key names are dropped.
import { AppError, validationError } from '../../http/errors'
import { indexById, replaceRecord } from '../../store/by-id'
import type { CategoryRecord, EntryRecord, Environment, VaultDocument } from '../../store/records'
import { ICON_PATTERN } from '../categories/model'
import { MAX_VALUE_BYTES, openEntryValue, sealEntryValue } from '../entries/values'
import { renderEnvExport } from '../export/render'
import type { Vaults } from '../vault-access'
import { classifyKeys, pickEntries, type EntryMetadata, type ImportKey } from './classifier'
import type { ImportInput } from './model'
import type { ExtractionModel } from './model-client'
import type { ParsedKey } from './parse-config'

// The parser brings dotenv; it loads with the first import request.
let parserModule: Promise<typeof import('./parse-config')> | undefined
const loadParser = () => (parserModule ??= import('./parse-config'))

export type ExtractionSource = 'ai' | 'builtin'

export interface ImportResult {
  source: ExtractionSource
  keys: ImportKey[]
  created?: { categories: string[]; entries: string[] }
}

const ICON = new RegExp(ICON_PATTERN)
const MAX_CATEGORY_NAME = 200

/** Names of an entry for the model: the variable, or the field names of a group (names, not values). */
function entryMetadata(data: VaultDocument, cipher: Parameters<typeof openEntryValue>[0]): EntryMetadata[] {
  const categories = indexById(data.categories)
  const out: EntryMetadata[] = []
  for (const entry of data.entries) {
    const category = categories[entry.categoryId]
    if (!category) continue
    let fields: string[] = []
    if (category.keyType === 'group') {
      if (category.fieldDefinitions?.length) fields = [...category.fieldDefinitions]
      else {
        const value = openEntryValue(cipher, category, entry)
        if (value && typeof value === 'object') fields = Object.keys(value)
      }
    }
    out.push({
      id: entry.id,
      name: entry.name,
      category: category.name,
      keyType: category.keyType,
      envVarName: category.keyType === 'simple' ? category.envVarName : null,
      fields,
      environment: entry.environment,
    })
  }
  return out
}

/** The model's choice of entries, restricted to the user's own ids; null when it is not a valid answer. */
export function validEntryChoice(answer: unknown, ownIds: Set<string>): string[] | null {
  if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) return null
  const ids = (answer as { entryIds?: unknown }).entryIds
  if (!Array.isArray(ids)) return null
  return [...new Set(ids.filter((id): id is string => typeof id === 'string' && ownIds.has(id)))]
}

/**
 * The model's filing of keys, restricted to the parsed names; keys it left out or mangled are
 * filed by the built-in classifier. Null when nothing valid came back.
 */
export function validKeyFiling(answer: unknown, parsed: { name: string }[]): ImportKey[] | null {
  if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) return null
  const items = (answer as { keys?: unknown }).keys
  if (!Array.isArray(items)) return null
  const known = new Set(parsed.map((k) => k.name))
  const filed = new Map<string, { categoryName: string; keyType: 'simple' | 'group'; icon?: string }>()
  for (const item of items) {
    if (item === null || typeof item !== 'object') continue
    const { name, categoryName, keyType, icon } = item as Record<string, unknown>
    if (typeof name !== 'string' || !known.has(name) || filed.has(name)) continue
    if (typeof categoryName !== 'string') continue
    const cleanName = cleanModelName(categoryName)
    if (!cleanName || cleanName.length > MAX_CATEGORY_NAME) continue
    if (keyType !== 'simple' && keyType !== 'group') continue
    filed.set(name, { categoryName: cleanName, keyType, ...(typeof icon === 'string' && ICON.test(icon) ? { icon } : {}) })
  }
  if (filed.size === 0) return null
  const fallback = new Map(classifyKeys(parsed.filter((k) => !filed.has(k.name))).map((k) => [k.name, k]))
  // A category name holding several keys is a group, whatever the model said of each key.
  const countByCategory = new Map<string, number>()
  for (const { categoryName } of filed.values()) countByCategory.set(categoryName, (countByCategory.get(categoryName) ?? 0) + 1)
  return parsed.map(({ name }) => {
    const choice = filed.get(name)
    if (!choice) return fallback.get(name)!
    const isGroup = choice.keyType === 'group' || (countByCategory.get(choice.categoryName) ?? 0) > 1
    return {
      name,
      categoryName: choice.categoryName,
      keyType: isGroup ? 'group' : 'simple',
      envVarName: name,
      ...(isGroup ? { field: name } : {}),
      ...(choice.icon ? { icon: choice.icon } : {}),
    }
  })
}

/**
 * Bidirectional controls (ALM, LRM, RLM, the embeddings and overrides U+202A-U+202E, the isolates
 * U+2066-U+2069): a name from the model holding them could show as other text than it is.
 */
const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g

/** A category name from the model: without bidi controls, control characters as spaces, trimmed. */
export function cleanModelName(name: string): string {
  return name.replace(BIDI_CONTROLS, '').replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, ' ').trim()
}

const sameName = (a: string, b: string) => a.trim().toLowerCase() === b.trim().toLowerCase()

export class AiService {
  constructor(
    private readonly vaults: Vaults,
    private readonly model: ExtractionModel,
    private readonly now: () => number = Date.now,
  ) {}

  /** The `.env` text of the entries a prompt asks for, and who chose them. */
  async extract(userId: string, prompt: string): Promise<{ source: ExtractionSource; text: string }> {
    const { data, cipher } = await this.vaults.open(userId)
    const metadata = entryMetadata(data, cipher)
    let source: ExtractionSource = 'builtin'
    let ids: string[] | null = null
    if (this.model.available) {
      ids = validEntryChoice(await this.model.pickEntries(prompt, metadata), new Set(metadata.map((m) => m.id)))
      if (ids) source = 'ai'
    }
    ids ??= pickEntries(prompt, metadata)
    // Read the vault again: the model call took time, and an entry may have gone meanwhile.
    const current = (await this.vaults.open(userId)).data
    const chosen = new Set(ids)
    const entries = current.entries.filter((e) => chosen.has(e.id))
    return { source, text: renderEnvExport(current, cipher, entries) }
  }

  /** Parses a pasted config, files its keys, and with `apply` stores them in one write. */
  async import(userId: string, input: ImportInput): Promise<ImportResult> {
    if (input.apply && !input.name) throw validationError('name', 'is required when apply is true')
    const { keys: parsed } = (await loadParser()).parseConfig(input.text)
    if (parsed.length === 0) {
      throw validationError('text', 'no keys found: paste KEY=value lines, `export` lines, a JSON object or `key: value` lines')
    }
    // Names only, for the model and for the built-in classifier alike.
    const named = parsed.map((k) => ({ name: k.name }))
    let source: ExtractionSource = 'builtin'
    let keys: ImportKey[] | null = null
    if (this.model.available) {
      keys = validKeyFiling(await this.model.fileKeys(parsed.map((k) => k.name)), named)
      if (keys) source = 'ai'
    }
    keys ??= classifyKeys(named)
    if (!input.apply) return { source, keys }
    const created = await this.apply(userId, keys, parsed, input.name!, input.environment ?? null)
    return { source, keys, created }
  }

  private async apply(
    userId: string,
    keys: ImportKey[],
    parsed: ParsedKey[],
    entryName: string,
    environment: Environment | null,
  ): Promise<{ categories: string[]; entries: string[] }> {
    const values = new Map(parsed.map((k) => [k.name, k.value]))
    // One planned category per suggestion: simple keys one each, group keys by category name.
    const plans: { categoryName: string; keyType: 'simple' | 'group'; icon: string | null; keys: string[] }[] = []
    for (const key of keys) {
      const existing = key.keyType === 'group' ? plans.find((p) => p.keyType === 'group' && sameName(p.categoryName, key.categoryName)) : undefined
      if (existing) existing.keys.push(key.name)
      else plans.push({ categoryName: key.categoryName, keyType: key.keyType, icon: key.icon ?? null, keys: [key.name] })
    }
    // Sizes first: nothing is written when one value is too large.
    const planValues = plans.map((plan) =>
      plan.keyType === 'simple' ? values.get(plan.keys[0])! : JSON.stringify(Object.fromEntries(plan.keys.map((k) => [k, values.get(k)!]))),
    )
    planValues.forEach((value, index) => {
      if (Buffer.byteLength(value, 'utf8') > MAX_VALUE_BYTES) {
        throw new AppError(400, 'INVALID_VALUE', `text: the value of ${plans[index].keys.join(', ')} is larger than 64 KiB`)
      }
    })

    const { doc, cipher } = await this.vaults.open(userId)
    const at = new Date(this.now()).toISOString()
    return doc.update((data) => {
      // Everything is prepared (and sealed) before the vault changes; then applied in one step.
      const newCategories: CategoryRecord[] = []
      const widened = new Map<CategoryRecord, string[]>()
      const newEntries: EntryRecord[] = []
      plans.forEach((plan, index) => {
        let category =
          plan.keyType === 'simple'
            ? data.categories.find((c) => c.keyType === 'simple' && c.envVarName === plan.keys[0])
            : data.categories.find((c) => c.keyType === 'group' && sameName(c.name, plan.categoryName))
        let sealAs = category
        if (category?.fieldDefinitions?.length) {
          // A reused group with declared fields learns the new ones, so the value fits it.
          const missing = plan.keys.filter((k) => !category!.fieldDefinitions!.includes(k))
          if (missing.length) {
            const fields = [...category.fieldDefinitions, ...missing]
            widened.set(category, fields)
            sealAs = { ...category, fieldDefinitions: fields }
          }
        }
        if (!category) {
          category = {
            id: crypto.randomUUID(),
            userId,
            name: plan.categoryName,
            keyType: plan.keyType,
            envVarName: plan.keyType === 'simple' ? plan.keys[0] : null,
            icon: plan.icon,
            description: null,
            fieldDefinitions: plan.keyType === 'group' ? [...plan.keys] : null,
            createdAt: at,
            updatedAt: at,
          }
          newCategories.push(category)
          sealAs = category
        }
        const id = crypto.randomUUID()
        newEntries.push({
          id,
          categoryId: category.id,
          name: entryName,
          environment,
          notes: null,
          encryptedValue: sealEntryValue(cipher, sealAs!, id, planValues[index]),
          createdAt: at,
          updatedAt: at,
        })
      })
      for (const [category, fields] of widened) {
        replaceRecord(data.categories, category, { ...category, fieldDefinitions: fields, updatedAt: at })
      }
      data.categories.push(...newCategories)
      data.entries.push(...newEntries)
      return { categories: newCategories.map((c) => c.id), entries: newEntries.map((e) => e.id) }
    })
  }
}
