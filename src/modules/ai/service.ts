// AI extraction and import. The model (or, without it, the built-in classifier) sees names only;
// values are parsed, sealed, opened and rendered here on the server. Whatever the model answers is
// checked against the user's own data: unknown entry ids and key names are dropped.
import { isIconSlug, MAX_NAME_LENGTH, sameName } from '../../domain/rules'
import { AppError, validationError } from '../../http/errors'
import { indexById } from '../../store/by-id'
import type { VaultCipher } from '../../crypto/keyring'
import type { CategoryRecord, EntryRecord, Environment, VaultDocument } from '../../store/records'
import { findCategoryTwin } from '../categories/service'
import { findEntryTwin } from '../entries/service'
import { DEFAULT_POLICY, type LifecyclePolicy } from '../lifecycle/trash'
import { prepareVersion } from '../lifecycle/versions'
import { fieldNamesOf, MAX_VALUE_BYTES, openEntryValue, sealEntryValue } from '../entries/values'
import { exportRows, renderDotenv } from '../export/render'
import type { Vaults } from '../vault-access'
import { classifyKeys, pickEntries, PLAIN_VARIABLES, type EntryMetadata, type ImportKey } from './classifier'
import type { ImportInput } from './model'
import type { ExtractionModel } from './model-client'
import type { ParsedKey } from './parse-config'
import { lazy } from '../../http/lazy'

// The parser brings dotenv; it loads with the first import request.
const loadParser = lazy('Config parsing', () => import('./parse-config'))

export type ExtractionSource = 'ai' | 'builtin'

/** A filed key and where it goes: an existing category of the user (`reuse: true`, with its id) or a new one. */
export type PlacedKey = ImportKey & { reuse: boolean; categoryId?: string; same?: boolean }

export interface ImportResult {
  source: ExtractionSource
  keys: PlacedKey[]
  created?: { categories: string[]; entries: string[] }
  /** With apply: existing entries (same category, name and environment) given the new values, and categories given new fields. */
  updated?: { categories: string[]; entries: string[] }
  /** With apply: existing entries that already held every value imported into them, left as they were. */
  unchanged?: { entries: string[] }
}

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
/** `knownIcon`: whether the vault can show this icon (a model's unknown slug is dropped). */
export function validKeyFiling(answer: unknown, parsed: { name: string }[], knownIcon: (slug: string) => boolean): ImportKey[] | null {
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
    if (!cleanName || cleanName.length > MAX_NAME_LENGTH) continue
    if (keyType !== 'simple' && keyType !== 'group') continue
    filed.set(name, { categoryName: cleanName, keyType, ...(typeof icon === 'string' && isIconSlug(icon) && knownIcon(icon) ? { icon } : {}) })
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
  return name
    .replace(BIDI_CONTROLS, '')
    .replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, ' ')
    .trim()
}

/** One category an import fills: an existing one (reused) or one to create, and the keys it takes. */
interface CategoryPlan {
  existing: CategoryRecord | null
  /** For a new category: its name (unique among the user's categories of its key type). */
  categoryName: string
  keyType: 'simple' | 'group'
  icon: string | null
  keys: string[]
  /** A new group that takes any field (the plain variables' group): no declared fields. */
  anyFields?: boolean
}

/**
 * The field names a group category has: its declared fields, or else the fields its entries
 * hold (names only; the values are opened here on the server and go nowhere).
 */
function groupFieldSets(data: VaultDocument, cipher: VaultCipher): Map<string, Set<string>> {
  const sets = new Map<string, Set<string>>()
  const groupList = data.categories.filter((c) => c.keyType === 'group')
  const groups = indexById(groupList)
  for (const category of groupList) {
    if (category.fieldDefinitions?.length) sets.set(category.id, new Set(category.fieldDefinitions))
  }
  for (const entry of data.entries) {
    const category = groups[entry.categoryId]
    if (!category || category.fieldDefinitions?.length) continue
    const value = openEntryValue(cipher, category, entry)
    if (!value || typeof value !== 'object') continue
    let set = sets.get(category.id)
    if (!set) sets.set(category.id, (set = new Set()))
    for (const field of Object.keys(value)) set.add(field)
  }
  return sets
}

/** `name`, or `name (VAR)`, `name (VAR) 2`, ... : the first no category of this key type has. */
function freeCategoryName(
  taken: readonly Pick<CategoryRecord, 'name' | 'keyType'>[],
  keyType: CategoryRecord['keyType'],
  name: string,
  variable: string,
): string {
  const clash = (candidate: string) => findCategoryTwin(taken, { name: candidate, keyType }) !== undefined
  if (!clash(name)) return name
  const base = `${name} (${variable})`.slice(0, MAX_NAME_LENGTH)
  let candidate = base
  for (let n = 2; clash(candidate); n++) candidate = `${base.slice(0, MAX_NAME_LENGTH - 1 - String(n).length)} ${n}`
  return candidate
}

/**
 * Where each filed key goes (CONTRACT.md "AI extraction"): a key some simple category
 * of the user already holds goes there; the keys of a suggestion go to a group category that has
 * all of them as fields (the one of the suggested name first), else, for a suggested group, to
 * the group of that name (which learns the missing fields), else to a new category. Nothing
 * here changes the vault.
 */
export function placeKeys(keys: ImportKey[], data: VaultDocument, cipher: VaultCipher): { plans: CategoryPlan[]; placed: PlacedKey[] } {
  const plans: CategoryPlan[] = []
  const planOf = new Map<string, CategoryPlan>()
  const simpleByVariable = new Map<string, CategoryRecord>()
  for (const c of data.categories) if (c.keyType === 'simple' && c.envVarName && !simpleByVariable.has(c.envVarName)) simpleByVariable.set(c.envVarName, c)
  const remaining: ImportKey[] = []
  for (const key of keys) {
    const existing = simpleByVariable.get(key.name)
    if (!existing) {
      remaining.push(key)
      continue
    }
    let plan = plans.find((p) => p.existing === existing)
    if (!plan) plans.push((plan = { existing, categoryName: existing.name, keyType: 'simple', icon: existing.icon, keys: [] }))
    // Two keys of one variable cannot happen: parsed names are distinct.
    plan.keys.push(key.name)
    planOf.set(key.name, plan)
  }
  // The suggestion's own grouping of the rest: simple keys one each, group keys by category name.
  const suggested: { categoryName: string; keyType: 'simple' | 'group'; icon: string | null; keys: string[] }[] = []
  for (const key of remaining) {
    const same = key.keyType === 'group' ? suggested.find((p) => p.keyType === 'group' && sameName(p.categoryName, key.categoryName)) : undefined
    if (same) same.keys.push(key.name)
    else suggested.push({ categoryName: key.categoryName, keyType: key.keyType, icon: key.icon ?? null, keys: [key.name] })
  }
  const groups = data.categories.filter((c) => c.keyType === 'group')
  const fieldSets = groups.length > 0 ? groupFieldSets(data, cipher) : new Map<string, Set<string>>()
  const newNames: Pick<CategoryRecord, 'name' | 'keyType'>[] = []
  for (const suggestion of suggested) {
    // A group holding every key of the suggestion (a lone key suggested as simple included), the
    // one of the suggested name first; for a suggested group, else the group of that name.
    const holdsAll = groups.filter((c) => suggestion.keys.every((k) => fieldSets.get(c.id)?.has(k)))
    let existing: CategoryRecord | undefined = holdsAll.find((c) => sameName(c.name, suggestion.categoryName)) ?? holdsAll[0]
    if (!existing && suggestion.keyType === 'group') existing = findCategoryTwin(groups, { name: suggestion.categoryName, keyType: 'group' })
    const joined = existing && plans.find((p) => p.existing === existing)
    if (joined) {
      // Several suggestions land in one existing group: one entry holds them all.
      joined.keys.push(...suggestion.keys)
      for (const name of suggestion.keys) planOf.set(name, joined)
      continue
    }
    const plan: CategoryPlan = existing
      ? { existing, categoryName: existing.name, keyType: 'group', icon: existing.icon, keys: suggestion.keys }
      : {
          existing: null,
          categoryName: freeCategoryName([...data.categories, ...newNames], suggestion.keyType, suggestion.categoryName, suggestion.keys[0]),
          keyType: suggestion.keyType,
          icon: suggestion.icon,
          keys: suggestion.keys,
          // The plain variables' group takes any field: each project's entry holds its own.
          anyFields: suggestion.keyType === 'group' && sameName(suggestion.categoryName, PLAIN_VARIABLES),
        }
    if (!existing) newNames.push({ name: plan.categoryName, keyType: plan.keyType })
    plans.push(plan)
    for (const name of suggestion.keys) planOf.set(name, plan)
  }
  const placed = keys.map((key): PlacedKey => {
    const plan = planOf.get(key.name)!
    const { field: _field, icon: _icon, ...rest } = key
    // A reused category answers its own icon; a new one keeps what the suggestion said per key.
    const icon = plan.existing ? plan.existing.icon : key.icon
    return {
      ...rest,
      categoryName: plan.categoryName,
      keyType: plan.keyType,
      ...(plan.keyType === 'group' ? { field: key.name } : {}),
      ...(icon ? { icon } : {}),
      reuse: plan.existing !== null,
      ...(plan.existing ? { categoryId: plan.existing.id } : {}),
    }
  })
  return { plans, placed }
}

export class AiService {
  constructor(
    private readonly vaults: Vaults,
    private readonly model: ExtractionModel,
    /** The slugs the vault has icons for: a model's icon outside them is dropped. */
    private readonly knownIcons: () => Promise<ReadonlySet<string>>,
    private readonly now: () => number = Date.now,
    private readonly policy: LifecyclePolicy = DEFAULT_POLICY,
  ) {}

  /** The `.env` text of the entries a prompt asks for, and who chose them. */
  async extract(
    userId: string,
    prompt: string,
  ): Promise<{ source: ExtractionSource; text: string; variables: string[]; entries: { id: string; name: string }[] }> {
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
    const rows = exportRows(current, cipher, entries)
    // The names (never the values) go to the audit log.
    return {
      source,
      text: renderDotenv(rows),
      variables: rows.flatMap((row) => row.variables.map(([name]) => name)),
      entries: rows.map((row) => ({ id: row.entry.id, name: row.entry.name })),
    }
  }

  /** Parses a pasted config, files its keys, and with `apply` stores them in one write. */
  async import(userId: string, input: ImportInput, actor = 'unknown'): Promise<ImportResult> {
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
      const knownIcons = await this.knownIcons()
      keys = validKeyFiling(await this.model.fileKeys(parsed.map((k) => k.name)), named, (slug) => knownIcons.has(slug))
      if (keys) source = 'ai'
    }
    keys ??= classifyKeys(named)
    if (!input.apply) {
      const { data, cipher } = await this.vaults.open(userId)
      return { source, keys: placeKeys(keys, data, cipher).placed }
    }
    return { source, ...(await this.apply(userId, keys, parsed, input.name!, input.environment ?? null, actor)) }
  }

  /**
   * Files the keys in one write: reused or new categories, and per category the entry of this
   * name and environment, updated when it exists (a group's other fields kept), else created.
   */
  private async apply(
    userId: string,
    keys: ImportKey[],
    parsed: ParsedKey[],
    entryName: string,
    environment: Environment | null,
    actor: string,
  ): Promise<Omit<ImportResult, 'source'>> {
    const values = new Map(parsed.map((k) => [k.name, k.value]))
    // Sizes first: nothing is written when one value is too large.
    for (const key of keys) {
      if (Buffer.byteLength(values.get(key.name)!, 'utf8') > MAX_VALUE_BYTES) {
        throw new AppError(400, 'INVALID_VALUE', `text: the value of ${key.name} is larger than 64 KiB`)
      }
    }

    const { doc, cipher } = await this.vaults.open(userId)
    const at = new Date(this.now()).toISOString()
    return doc.update((data, write) => {
      // Placed against the vault as it is now; everything is prepared (and sealed) before the
      // vault changes, then applied in one step.
      const { plans, placed } = placeKeys(keys, data, cipher)
      const newCategories: CategoryRecord[] = []
      const widened = new Map<CategoryRecord, string[]>()
      const newEntries: EntryRecord[] = []
      const updatedEntries = new Map<EntryRecord, EntryRecord>()
      // The values updated entries had, kept as versions once everything is prepared.
      const keepVersions: (() => void)[] = []
      // Keys whose entry already held this very value, and entries left as they were:
      // re-importing an unchanged .env rewrites nothing and pushes no real history out.
      const same = new Set<string>()
      const unchangedEntries: string[] = []
      for (const plan of plans) {
        let category = plan.existing
        let sealAs = category
        if (category?.keyType === 'group' && category.fieldDefinitions?.length) {
          // A group reused by its name learns the fields it lacks, so the value fits it.
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
            description: plan.anyFields ? 'Plain variables of your projects: one entry per project and environment holds them' : null,
            fieldDefinitions: plan.keyType === 'group' && !plan.anyFields ? [...plan.keys] : null,
            createdAt: at,
            updatedAt: at,
          }
          newCategories.push(category)
          sealAs = category
        }
        // The twin of the entry this import writes is updated rather than added beside it.
        const current = findEntryTwin(data.entries, { categoryId: category.id, name: entryName, environment })
        // A simple category takes one key; two keys in one simple plan cannot happen (one variable each).
        let value: string
        let unchanged = false
        if (category.keyType === 'simple') {
          value = values.get(plan.keys[0])!
          unchanged = current !== undefined && openEntryValue(cipher, category, current) === value
          if (unchanged) same.add(plan.keys[0])
        } else {
          const kept = current ? openEntryValue(cipher, category, current) : null
          const fields: Record<string, string> = kept && typeof kept === 'object' ? { ...kept } : {}
          for (const k of plan.keys) {
            if (Object.hasOwn(fields, k) && fields[k] === values.get(k)) same.add(k)
            Object.defineProperty(fields, k, { value: values.get(k)!, enumerable: true, writable: true, configurable: true })
          }
          value = JSON.stringify(fields)
          unchanged = current !== undefined && plan.keys.every((k) => same.has(k)) && !widened.has(category)
        }
        if (current && unchanged) unchangedEntries.push(current.id)
        else if (current) {
          const version = prepareVersion(data, write, cipher, 'entry', current, { actor, at, limit: this.policy.historyVersions })
          keepVersions.push(version.apply)
          updatedEntries.set(current, {
            ...current,
            encryptedValue: sealEntryValue(cipher, sealAs!, current.id, value),
            ...fieldNamesOf(category, value),
            updatedAt: at,
            ...version.fields,
          })
        } else {
          const id = crypto.randomUUID()
          newEntries.push({
            id,
            categoryId: category.id,
            name: entryName,
            environment,
            notes: null,
            encryptedValue: sealEntryValue(cipher, sealAs!, id, value),
            ...fieldNamesOf(category, value),
            createdAt: at,
            updatedAt: at,
            valueVersion: 1,
            valueSetBy: actor,
          })
        }
      }
      for (const keep of keepVersions) keep()
      for (const [category, fields] of widened) {
        write.categories.replace({ ...category, fieldDefinitions: fields, updatedAt: at })
      }
      write.entries.replaceMany([...updatedEntries.values()])
      write.categories.push(...newCategories)
      write.entries.push(...newEntries)
      return {
        keys: placed.map((key) => (same.has(key.name) ? { ...key, same: true } : key)),
        created: { categories: newCategories.map((c) => c.id), entries: newEntries.map((e) => e.id) },
        updated: { categories: [...widened.keys()].map((c) => c.id), entries: [...updatedEntries.values()].map((e) => e.id) },
        unchanged: { entries: unchangedEntries },
      }
    })
  }
}
