// Tampering with stored records in tests, the way the services change them: committed records
// are frozen (src/store/changes.ts), so a change replaces the record.
import { replaceRecord } from '../../src/store/by-id'

/** Replaces the record `id` of `records` with a copy carrying `fields`. */
export function setStoredFields<T extends { id: string }>(records: T[], id: string, fields: Partial<T>): void {
  const current = records.find((record) => record.id === id)
  if (!current) throw new Error(`no stored record ${id}`)
  replaceRecord(records, current, { ...current, ...fields })
}
