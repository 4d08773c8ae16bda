// Tampering with stored records in tests, the way the services change them: through the
// document's writer (src/store/writer.ts), which replaces the record.
import type { ListWriter } from '../../src/store/writer'

/** Replaces the record `id` of `records` with a copy carrying `fields` (`list`: the writer of that list). */
export function setStoredFields<T extends { readonly id: string }>(list: ListWriter<T>, records: readonly T[], id: string, fields: Partial<T>): void {
  const current = records.find((record) => record.id === id)
  if (!current) throw new Error(`no stored record ${id}`)
  list.replace({ ...current, ...fields })
}
