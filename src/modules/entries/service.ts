// Key entries: per-project values of a category, sealed at once; only reveal opens them.
import { byId, indexById, recordsWithKey } from '../../store/by-id'
import { conflict, NotFound, validationError } from '../../http/errors'
import type { CategoryRecord, Environment, EntryRecord, VaultDocument, Draft } from '../../store/records'
import { findCategory } from '../categories/service'
import type { Vaults } from '../vault-access'
import { dueStatus, dueWithin, nextDue, type DueStatus } from '../lifecycle/due'
import { DEFAULT_POLICY, moveToTrash, type LifecyclePolicy } from '../lifecycle/trash'
import { prepareVersion } from '../lifecycle/versions'
import type { CreateEntryInput, UpdateEntryInput } from './model'
import { checkValueSize, fieldNamesOf, openEntryValue, parseGroupValue, sealEntryValue } from './values'

export const publicEntry = (e: EntryRecord, now: number) => ({
  id: e.id,
  categoryId: e.categoryId,
  name: e.name,
  environment: e.environment,
  notes: e.notes,
  createdAt: e.createdAt,
  updatedAt: e.updatedAt,
  expiresAt: e.expiresAt ?? null,
  rotateEveryDays: e.rotateEveryDays ?? null,
  rotatedAt: e.rotatedAt ?? null,
  dueStatus: dueStatus(e, now) as DueStatus,
})

export type PublicEntry = ReturnType<typeof publicEntry>

const DAY_MS = 86_400_000
/** The next moment after `now` at which the entry's dueStatus changes (Infinity: never). */
function statusChangesAt(e: EntryRecord, now: number): number {
  const next = nextDue(e)
  if (!next) return Infinity
  const moments = [next.at - 14 * DAY_MS, next.at, e.expiresAt ? Date.parse(e.expiresAt) : Infinity]
  return Math.min(...moments.filter((m) => m > now), Infinity)
}

type CategorySummary = Pick<CategoryRecord, 'name' | 'keyType' | 'envVarName' | 'icon'>
export type ListedEntry = PublicEntry & { category: CategorySummary; fields?: string[] }

export interface EntryFilters {
  /** Only what expires or is due for rotation within this many days. */
  due?: number
  categoryId?: string
  environment?: Environment
  name?: string
  q?: string
}

export interface RevealedEntry {
  id: string
  name: string
  value: string | Record<string, string>
  environment: Environment | null
}

/**
 * How a person tells an entry apart: its variable (a simple category's env var name, a
 * group's category name), its project and its environment: "OPENAI_API_KEY of blog (production)".
 * The entry's name alone is only the project's.
 */
export function entryLabel(category: Pick<CategoryRecord, 'envVarName' | 'name'> | undefined, entry: { name: string; environment: string | null }): string {
  const variable = category ? category.envVarName || category.name : null
  return `${variable ? `${variable} of ` : ''}${entry.name}${entry.environment ? ` (${entry.environment})` : ''}`
}

/** The entry with this id in the vault, or ENTRY_NOT_FOUND (missing and foreign alike). */
export function findEntry(data: VaultDocument, id: string): EntryRecord {
  const entry = byId(data.entries, id)
  if (!entry) throw NotFound.entry()
  return entry
}

/**
 * The last list answered per vault, answered again while the vault holds the very same entry and
 * category records: records are frozen and replaced when they change, so comparing references
 * is enough, and costs a tenth of building the list again.
 */
interface LastList {
  entries: readonly EntryRecord[]
  categories: readonly CategoryRecord[]
  items: ListedEntry[]
  /** The answer holds due statuses: it is good until the first of them changes. */
  validUntil: number
}

const sameRecords = <R>(a: readonly R[], b: readonly R[]) => a.length === b.length && a.every((record, i) => record === b[i])

function listEntries(data: VaultDocument, now: number): { items: ListedEntry[]; validUntil: number } {
  let validUntil = Infinity
  const categories = indexById(data.categories)
  // One summary per category, shared by its entries, and no spread copy per entry (docs/performance.md).
  const summaries: Record<string, CategorySummary> = Object.create(null)
  const items: ListedEntry[] = []
  for (const entry of data.entries) {
    const category = categories[entry.categoryId]
    if (!category) continue
    const item = publicEntry(entry, now) as ListedEntry
    if (entry.expiresAt || entry.rotateEveryDays) validUntil = Math.min(validUntil, statusChangesAt(entry, now))
    // The stored (frozen) array itself, not a copy per entry: the answer only reads it.
    if (entry.fieldNames) item.fields = entry.fieldNames as string[]
    item.category = summaries[category.id] ??= Object.freeze({
      name: category.name,
      keyType: category.keyType,
      envVarName: category.envVarName,
      icon: category.icon,
    })
    items.push(Object.freeze(item))
  }
  // Later answers share the items, hence frozen; not the array: JSON.stringify takes a much
  // slower path for a frozen array (docs/performance.md).
  return { items, validUntil }
}

type EntryName = Pick<EntryRecord, 'categoryId' | 'name' | 'environment'> & { id?: string }

const twinKey = (e: EntryName) => `${e.categoryId}\u0000${e.name}\u0000${e.environment ?? ''}`

/**
 * The twin rule: no two entries share category, name and environment (the export could not tell
 * them apart). Names compare exactly, as the export's `name` filter does. The entry of `entries`
 * that `entry` would twin, other than itself; through a grouping kept up to date with the list,
 * so a write does not scan every entry.
 */
export function findEntryTwin(entries: readonly EntryRecord[], entry: EntryName): EntryRecord | undefined {
  const twins = recordsWithKey(entries, 'twin', twinKey, twinKey(entry))
  // Data stored before the rule may hold several: the first in the list, as a scan finds it.
  if (twins.length > 1) return entries.find((e) => e.id !== entry.id && twins.includes(e))
  return twins.length === 1 && twins[0].id !== entry.id ? twins[0] : undefined
}

/** 409 ENTRY_EXISTS; `advice` ends the message ("in this category; update it instead"). */
export function entryExists(entry: EntryName, advice: string) {
  const where = entry.environment ? ` for ${entry.environment}` : ' without an environment'
  return conflict('ENTRY_EXISTS', `An entry named "${entry.name}"${where} exists already ${advice}`)
}

/** 409 ENTRY_EXISTS when another entry has this category, name and environment. */
function assertNoTwinEntry(data: VaultDocument, entry: EntryName): void {
  if (findEntryTwin(data.entries, entry)) throw entryExists(entry, 'in this category; update it instead')
}

export class EntryService {
  private readonly lastLists = new WeakMap<VaultDocument, LastList>()

  constructor(
    private readonly vaults: Vaults,
    private readonly now: () => number = Date.now,
    private readonly policy: LifecyclePolicy = DEFAULT_POLICY,
  ) {}

  /** `due`: only the entries that expire or are due for rotation within that many days. */
  async list(userId: string, due?: number): Promise<ListedEntry[]> {
    const { data } = await this.vaults.open(userId)
    const now = this.now()
    const last = this.lastLists.get(data)
    let items: ListedEntry[]
    if (last && now < last.validUntil && sameRecords(last.entries, data.entries) && sameRecords(last.categories, data.categories)) items = last.items
    else {
      const listed = listEntries(data, now)
      items = listed.items
      this.lastLists.set(data, { entries: [...data.entries], categories: [...data.categories], items, validUntil: listed.validUntil })
    }
    if (due === undefined) return items
    return items.filter((item) => dueWithin(item, now, due))
  }

  /** The list narrowed by the filters (each optional): a category, an environment, a name, text. */
  async find(userId: string, filters: EntryFilters): Promise<ListedEntry[]> {
    const items = await this.list(userId, filters.due)
    const { categoryId, environment, name } = filters
    const q = filters.q?.trim().toLowerCase()
    if (categoryId === undefined && environment === undefined && name === undefined && !q) return items
    return items.filter(
      (item) =>
        (categoryId === undefined || item.categoryId === categoryId) &&
        (environment === undefined || item.environment === environment) &&
        (name === undefined || item.name === name) &&
        (!q ||
          item.name.toLowerCase().includes(q) ||
          item.category.name.toLowerCase().includes(q) ||
          (item.category.envVarName?.toLowerCase().includes(q) ?? false)),
    )
  }

  async get(userId: string, id: string): Promise<PublicEntry> {
    const { data } = await this.vaults.open(userId)
    return publicEntry(findEntry(data, id), this.now())
  }

  async create(userId: string, input: CreateEntryInput, actor = 'unknown'): Promise<PublicEntry> {
    checkValueSize(input.value)
    const { doc, cipher } = await this.vaults.open(userId)
    const at = new Date(this.now()).toISOString()
    const id = crypto.randomUUID()
    const entry = await doc.update((data, write) => {
      const category = findCategory(data, input.categoryId)
      const record: EntryRecord = {
        id,
        categoryId: category.id,
        name: input.name,
        environment: input.environment ?? null,
        notes: input.notes ?? null,
        encryptedValue: sealEntryValue(cipher, category, id, input.value),
        ...fieldNamesOf(category, input.value),
        createdAt: at,
        updatedAt: at,
        expiresAt: input.expiresAt ? new Date(input.expiresAt).toISOString() : null,
        rotateEveryDays: input.rotateEveryDays ?? null,
        valueVersion: 1,
        valueSetBy: actor,
      }
      assertNoTwinEntry(data, record)
      write.entries.push(record)
      return record
    })
    return publicEntry(entry, this.now())
  }

  async update(userId: string, id: string, input: UpdateEntryInput, actor = 'unknown'): Promise<PublicEntry> {
    if (input.value !== undefined) checkValueSize(input.value)
    const { doc, cipher } = await this.vaults.open(userId)
    const updated = await doc.update((data, write) => {
      const entry = findEntry(data, id)
      const current = findCategory(data, entry.categoryId)
      const next: Draft<EntryRecord> = { ...entry }
      let category: CategoryRecord = current
      if (input.categoryId !== undefined && input.categoryId !== entry.categoryId) {
        category = findCategory(data, input.categoryId)
        if (category.keyType !== current.keyType) {
          throw validationError('categoryId', `must name a category of the same keyType (${current.keyType})`)
        }
        next.categoryId = category.id
        // The stored value must fit the new category's declared fields too.
        if (input.value === undefined && category.keyType === 'group') {
          const plaintext = cipher.open('entry', entry.id, entry.encryptedValue)
          if (plaintext !== null) parseGroupValue(category, plaintext)
        }
      }
      if (input.name !== undefined) next.name = input.name
      if (input.environment !== undefined) next.environment = input.environment
      if (input.notes !== undefined) next.notes = input.notes
      if (next.categoryId !== entry.categoryId || next.name !== entry.name || next.environment !== entry.environment) assertNoTwinEntry(data, next)
      if (input.expiresAt !== undefined) next.expiresAt = input.expiresAt === null ? null : new Date(input.expiresAt).toISOString()
      if (input.rotateEveryDays !== undefined) next.rotateEveryDays = input.rotateEveryDays
      next.updatedAt = new Date(this.now()).toISOString()
      let keepVersion = () => {}
      if (input.value !== undefined) {
        next.encryptedValue = sealEntryValue(cipher, category, entry.id, input.value)
        Object.assign(next, fieldNamesOf(category, input.value))
        // The value it had becomes a version.
        const version = prepareVersion(data, write, cipher, 'entry', entry, { actor, at: next.updatedAt, limit: this.policy.historyVersions })
        Object.assign(next, version.fields)
        keepVersion = version.apply
      }
      // Everything is checked and sealed; now applied in one step.
      keepVersion()
      return write.entries.replace(next)
    })
    return publicEntry(updated, this.now())
  }

  /** Moves the entry to the trash. */
  async remove(userId: string, id: string, actor = 'unknown'): Promise<void> {
    const { doc } = await this.vaults.open(userId)
    await doc.update((data, write) => {
      const entry = findEntry(data, id)
      moveToTrash(write, { kind: 'entry', name: entry.name, actor, at: this.now(), policy: this.policy, records: { entries: [entry] } })
    })
  }

  /** The plaintext value; ENTRY_NOT_FOUND when missing, foreign or not decryptable. */
  reveal(userId: string, id: string): RevealedEntry | Promise<RevealedEntry> {
    return this.vaults.withVault(userId, ({ data, cipher }) => {
      const entry = findEntry(data, id)
      const category = byId(data.categories, entry.categoryId)
      const value = category ? openEntryValue(cipher, category, entry) : null
      if (value === null) throw NotFound.entry()
      return { id: entry.id, name: entry.name, value, environment: entry.environment }
    })
  }
}
