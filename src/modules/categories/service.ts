// Key categories: the type of a key (simple: one variable; group: named fields).
import { sameName } from '../../domain/rules'
import { byId } from '../../store/by-id'
import { badRequest, conflict, NotFound, validationError } from '../../http/errors'
import type { CategoryRecord, VaultDocument, Draft } from '../../store/records'
import type { Vaults } from '../vault-access'
import { DEFAULT_POLICY, moveToTrash, type LifecyclePolicy } from '../lifecycle/trash'
import type { CreateCategoryInput, UpdateCategoryInput } from './model'

export const publicCategory = (c: CategoryRecord) => ({
  id: c.id,
  userId: c.userId,
  name: c.name,
  keyType: c.keyType,
  envVarName: c.envVarName,
  icon: c.icon,
  description: c.description,
  fieldDefinitions: c.fieldDefinitions ? [...c.fieldDefinitions] : null,
  createdAt: c.createdAt,
  updatedAt: c.updatedAt,
})

export type PublicCategory = ReturnType<typeof publicCategory>

/** The category with this id in the vault, or CATEGORY_NOT_FOUND (missing and foreign alike). */
export function findCategory(data: VaultDocument, id: string): CategoryRecord {
  const category = byId(data.categories, id)
  if (!category) throw NotFound.category()
  return category
}

const simpleNeedsEnvVar = () => badRequest('CATEGORY_SIMPLE_REQUIRES_ENV_VAR', 'A simple category needs an envVarName (the environment variable it fills)')

function checkFieldDefinitions(fields: string[] | null | undefined): string[] | null {
  if (!fields || fields.length === 0) return null
  if (new Set(fields).size !== fields.length) throw validationError('fieldDefinitions', 'field names must be distinct')
  return [...fields]
}

type CategoryName = Pick<CategoryRecord, 'name' | 'keyType'> & { id?: string }

/**
 * The twin rule: no two categories of one key type share a name (sameName: trimmed, any case).
 * The one among `categories` that `category` would twin, other than itself.
 */
export function findCategoryTwin<C extends CategoryName>(categories: readonly C[], category: CategoryName): C | undefined {
  return categories.find((c) => (category.id === undefined || c.id !== category.id) && c.keyType === category.keyType && sameName(c.name, category.name))
}

/** 409 CATEGORY_EXISTS naming the twin; `advice` follows (a restore says what to do). */
export const categoryExists = (twin: Pick<CategoryRecord, 'name' | 'keyType'>, advice = '') =>
  conflict('CATEGORY_EXISTS', `A ${twin.keyType} category named "${twin.name}" exists already${advice}`)

function assertNoTwin(data: VaultDocument, category: CategoryName): void {
  const twin = findCategoryTwin(data.categories, category)
  if (twin) throw categoryExists(twin)
}

function checkShape(category: Pick<CategoryRecord, 'keyType' | 'envVarName' | 'fieldDefinitions'>): void {
  if (category.keyType === 'simple' && !category.envVarName) throw simpleNeedsEnvVar()
  if (category.keyType === 'simple' && category.fieldDefinitions) {
    throw validationError('fieldDefinitions', 'only a group category declares fields')
  }
}

export class CategoryService {
  constructor(
    private readonly vaults: Vaults,
    private readonly now: () => number = Date.now,
    private readonly policy: LifecyclePolicy = DEFAULT_POLICY,
  ) {}

  async list(userId: string): Promise<PublicCategory[]> {
    const { data } = await this.vaults.open(userId)
    return data.categories.map(publicCategory)
  }

  async get(userId: string, id: string): Promise<PublicCategory> {
    const { data } = await this.vaults.open(userId)
    return publicCategory(findCategory(data, id))
  }

  async create(userId: string, input: CreateCategoryInput): Promise<PublicCategory> {
    const at = new Date(this.now()).toISOString()
    const category: CategoryRecord = {
      id: crypto.randomUUID(),
      userId,
      name: input.name,
      keyType: input.keyType,
      envVarName: input.envVarName || null,
      icon: input.icon ?? null,
      description: input.description ?? null,
      fieldDefinitions: checkFieldDefinitions(input.fieldDefinitions),
      createdAt: at,
      updatedAt: at,
    }
    checkShape(category)
    const { doc } = await this.vaults.open(userId)
    await doc.update((data, write) => {
      assertNoTwin(data, category)
      write.categories.push(category)
    })
    return publicCategory(category)
  }

  async update(userId: string, id: string, input: UpdateCategoryInput): Promise<PublicCategory> {
    const { doc } = await this.vaults.open(userId)
    const updated = await doc.update((data, write) => {
      const category = findCategory(data, id)
      const next: Draft<CategoryRecord> = { ...category }
      if (input.name !== undefined) next.name = input.name
      if (input.description !== undefined) next.description = input.description
      if (input.icon !== undefined) next.icon = input.icon
      if (input.envVarName !== undefined) next.envVarName = input.envVarName || null
      if (input.fieldDefinitions !== undefined) next.fieldDefinitions = checkFieldDefinitions(input.fieldDefinitions)
      if (input.keyType !== undefined && input.keyType !== category.keyType) {
        if (data.entries.some((e) => e.categoryId === id)) {
          throw conflict('CATEGORY_NOT_EMPTY', 'The key type can change only while the category has no entries')
        }
        next.keyType = input.keyType
        if (next.keyType === 'simple' && input.fieldDefinitions === undefined) next.fieldDefinitions = null
      }
      checkShape(next)
      if (!sameName(next.name, category.name) || next.keyType !== category.keyType) assertNoTwin(data, next)
      next.updatedAt = new Date(this.now()).toISOString()
      // Checked before anything changes; now applied in one step.
      return write.categories.replace(next)
    })
    return publicCategory(updated)
  }

  /** Moves the category and all of its entries to the trash, as one item. */
  async remove(userId: string, id: string, actor = 'unknown'): Promise<void> {
    const { doc } = await this.vaults.open(userId)
    await doc.update((data, write) => {
      const category = findCategory(data, id)
      const entries = data.entries.filter((e) => e.categoryId === id)
      moveToTrash(write, { kind: 'category', name: category.name, actor, at: this.now(), policy: this.policy, records: { categories: [category], entries } })
    })
  }
}
