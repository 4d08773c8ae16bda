// Entry values: validated per the category's keyType, sealed under the entry's id, opened back.
// A simple value is the plain string; a group value is stored as the JSON text of an object of
// string values (the request sends it as that string, reveal answers the object).
import type { VaultCipher } from '../../crypto/keyring'
import { isVariableName, VARIABLE_NAME_PATTERN } from '../../domain/rules'
import { AppError, badRequest } from '../../http/errors'
import type { CategoryRecord, EntryRecord } from '../../store/records'

/** docs/api.md, "Limits": an entry value is at most 64 KiB (UTF-8 bytes). */
export const MAX_VALUE_BYTES = 64 * 1024

const invalidValue = (problem: string) => badRequest('INVALID_VALUE', `value: ${problem}`)

export function checkValueSize(value: string): void {
  if (Buffer.byteLength(value, 'utf8') > MAX_VALUE_BYTES) {
    throw new AppError(400, 'VALIDATION_ERROR', `value: must be at most ${MAX_VALUE_BYTES} bytes (64 KiB)`)
  }
}

/** The object of a group value, in its own field order; throws 400 INVALID_VALUE naming the problem. */
export function parseGroupValue(category: CategoryRecord, value: string): Record<string, string> {
  let parsed: unknown
  try {
    parsed = JSON.parse(value)
  } catch {
    throw invalidValue('a group value must be a string holding a JSON object of string values')
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw invalidValue('a group value must be a string holding a JSON object of string values')
  }
  const declared = category.fieldDefinitions && category.fieldDefinitions.length > 0 ? new Set(category.fieldDefinitions) : null
  const fields: Record<string, string> = {}
  for (const [field, fieldValue] of Object.entries(parsed)) {
    if (declared && !declared.has(field)) {
      throw invalidValue(`field "${field}" is not one of the category's fields (${[...declared].join(', ')})`)
    }
    // Group field names become environment variable names in the export.
    if (!declared && !isVariableName(field)) {
      throw invalidValue(`field "${field}" must match ${VARIABLE_NAME_PATTERN}`)
    }
    if (typeof fieldValue !== 'string') throw invalidValue(`field "${field}" must be a string`)
    // defineProperty: a field named __proto__ stays an ordinary field.
    Object.defineProperty(fields, field, { value: fieldValue, enumerable: true, writable: true, configurable: true })
  }
  return fields
}

/** Checks a value against the category and seals it for this entry (AAD: user, kind, entry id). */
export function sealEntryValue(cipher: VaultCipher, category: CategoryRecord, entryId: string, value: string): string {
  checkValueSize(value)
  const plaintext = category.keyType === 'group' ? JSON.stringify(parseGroupValue(category, value)) : value
  return cipher.seal('entry', entryId, plaintext)
}

/** The plaintext value: a string, or an object for a group; null when it does not decrypt. */
export function openEntryValue(cipher: VaultCipher, category: CategoryRecord, entry: EntryRecord): string | Record<string, string> | null {
  return entryValue(category, cipher.open('entry', entry.id, entry.encryptedValue))
}

/** The value of an entry of this category from its opened plaintext (null: did not decrypt). */
export function entryValue(category: CategoryRecord, plaintext: string | null): string | Record<string, string> | null {
  if (plaintext === null) return null
  if (category.keyType !== 'group') return plaintext
  try {
    // JSON.parse makes every key an own data property (__proto__ included), so the parsed
    // object is answered as it is once every value is checked to be a string.
    const parsed: unknown = JSON.parse(plaintext)
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return null
    const fields = parsed as Record<string, unknown>
    for (const field in fields) if (typeof fields[field] !== 'string') return null
    return fields as Record<string, string>
  } catch {
    return null
  }
}

/**
 * A group value's field names, kept beside the sealed value (names are not secret: they are
 * what the export and the model see), so that a page counts variables as pasted without a
 * reveal. Undefined for a simple value.
 */
export function fieldNamesOf(category: Pick<CategoryRecord, 'keyType'>, value: string): { fieldNames?: string[] } {
  if (category.keyType !== 'group') return {}
  try {
    return { fieldNames: Object.keys(JSON.parse(value) as Record<string, string>) }
  } catch {
    return {}
  }
}
