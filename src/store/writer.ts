// The only way to change a stored document: `update((data, write) => ...)` hands this writer
// beside the data, which is typed readonly all the way down (records.ts). Each method changes
// the data in memory (keeping the id index of by-id.ts in step) and records the change it made
// (changes.ts), which the next commit appends to the change log. A PostgreSQL store would
// implement the same writer as row upserts and deletes in one transaction.
import { removeRecord, replaceRecord, replaceRecords, indexById } from './by-id'
import { deepFreeze, listOf, type Change, type StoredRecord } from './changes'

/** The fields of `T` that hold lists of records (the logged lists). */
export type ListKey<T> = { [K in keyof T]-?: NonNullable<T[K]> extends readonly StoredRecord[] ? K : never }[keyof T] & string
/** The other top-level fields, written whole with `set`. */
export type FieldKey<T> = Exclude<keyof T & string, ListKey<T>>
type RecordOf<L> = L extends readonly (infer R extends StoredRecord)[] ? R : never

export interface ListWriter<R extends StoredRecord> {
  /** Adds the records at the end of the list. */
  push(...records: R[]): void
  /** Puts the record in the place of the stored one with its id, and answers it; throws when there is none. */
  replace(record: R): R
  /** replace for many records in one pass over the list (instead of a search each). */
  replaceMany(records: readonly R[]): void
  /** Removes the record with this id in place; answers it, or undefined when there is none. */
  remove(id: string): R | undefined
  /** Removes every record that `drop` picks, in one pass (into a new list); answers them. */
  removeWhere(drop: (record: R) => boolean): R[]
}

export type Writer<T> = { readonly [K in ListKey<T>]: ListWriter<RecordOf<NonNullable<T[K]>>> } & {
  /** Sets a top-level field that is not a list (replaced whole: its value is written as it is now). */
  set<K extends FieldKey<T>>(field: K, value: T[K]): void
}

/**
 * A writer over `data` (read each call: a list dropped into a new array is the new one), which
 * hands every change it makes to `record`.
 */
export function createWriter<T>(data: () => T, lists: readonly string[], record: (change: Change) => void): Writer<T> {
  const current = () => data() as Record<string, unknown>
  const writer: Record<string, unknown> = {
    set(field: string, value: unknown) {
      if (lists.includes(field)) throw new Error(`writer: ${field} is a list; change its records`)
      current()[field] = value
      record(['set', field, value])
    },
  }
  for (const name of lists)
    writer[name] = listWriter(
      name,
      () => listOf(current(), name),
      (next) => (current()[name] = next),
      record,
    )
  return writer as Writer<T>
}

function listWriter(
  name: string,
  records: () => StoredRecord[],
  setList: (next: StoredRecord[]) => void,
  record: (change: Change) => void,
): ListWriter<StoredRecord> {
  const stored = (id: string) => {
    const found = indexById(records())[id]
    if (!found) throw new Error(`writer: ${name} holds no record ${id}`)
    return found
  }
  return {
    push(...added) {
      const list = records()
      for (const pushed of added) {
        deepFreeze(pushed)
        list.push(pushed)
        record(['put', name, pushed])
      }
    },
    replace(next) {
      deepFreeze(next)
      replaceRecord(records(), stored(next.id), next)
      record(['put', name, next])
      return next
    },
    replaceMany(replacements) {
      for (const each of replacements) deepFreeze(each)
      replaceRecords(records(), new Map(replacements.map((each) => [stored(each.id), each])))
      for (const each of replacements) record(['put', name, each])
    },
    remove(id) {
      const found = indexById(records())[id]
      if (!found) return undefined
      removeRecord(records(), found)
      record(['del', name, id])
      return found
    },
    removeWhere(drop) {
      const removed: StoredRecord[] = []
      const kept = records().filter((candidate) => {
        if (!drop(candidate)) return true
        removed.push(candidate)
        return false
      })
      if (removed.length === 0) return removed
      setList(kept)
      for (const gone of removed) record(['del', name, gone.id])
      return removed
    },
  }
}
