// Key categories: the type of a key (simple: one variable; group: named fields).
import { byId, replaceRecord } from '../../store/by-id'
import { badRequest, conflict, NotFound, validationError } from '../../http/errors'
import type { CategoryRecord, VaultDocument } from '../../store/records'
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

const simpleNeedsEnvVar = () =>
  badRequest('CATEGORY_SIMPLE_REQUIRES_ENV_VAR', 'A simple category needs an envVarName (the environment variable it fills)')

function checkFieldDefinitions(fields: string[] | null | undefined): string[] | null {
  if (!fields || fields.length === 0) return null
  if (new Set(fields).size !== fields.length) throw validationError('fieldDefinitions', 'field names must be distinct')
  return [...fields]
}

/** Category names compare as a person reads them: trimmed, case-insensitive. */
export const sameCategoryName = (a: string, b: string) => a.trim().toLowerCase() === b.trim().toLowerCase()

/** 409 CATEGORY_EXISTS when another category has this name and key type (issue 23). */
function assertNoTwin(data: VaultDocument, category: Pick<CategoryRecord, 'id' | 'name' | 'keyType'>): void {
  const twin = data.categories.find((c) => c.id !== category.id && c.keyType === category.keyType && sameCategoryName(c.name, category.name))
  if (twin) throw conflict('CATEGORY_EXISTS', `A ${category.keyType} category named "${twin.name}" exists already`)
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
    await doc.update((data) => {
      assertNoTwin(data, category)
      data.categories.push(category)
    })
    return publicCategory(category)
  }

  async update(userId: string, id: string, input: UpdateCategoryInput): Promise<PublicCategory> {
    const { doc } = await this.vaults.open(userId)
    const updated = await doc.update((data) => {
      const category = findCategory(data, id)
      const next: CategoryRecord = { ...category }
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
      if (!sameCategoryName(next.name, category.name) || next.keyType !== category.keyType) assertNoTwin(data, next)
      next.updatedAt = new Date(this.now()).toISOString()
      // Checked before anything changes; now applied in one step.
      return replaceRecord(data.categories, category, next)
    })
    return publicCategory(updated)
  }

  /** Moves the category and all of its entries to the trash, as one item (issue 20). */
  async remove(userId: string, id: string, actor = 'unknown'): Promise<void> {
    const { doc } = await this.vaults.open(userId)
    await doc.update((data) => {
      const category = findCategory(data, id)
      const entries = data.entries.filter((e) => e.categoryId === id)
      moveToTrash(data, { kind: 'category', name: category.name, actor, at: this.now(), policy: this.policy, records: { categories: [category], entries } })
    })
  }
}

