// Lookup by id in a document's record list without scanning it: an index per list, rebuilt
// whenever the list's length changes (records are only ever pushed, replaced through
// replaceRecord, or removed by filtering into a new list; ids never change), so it cannot go
// stale. A null-prototype object rather than a Map: ids parsed from JSON are separate string
// copies, and a property lookup with one is about three times faster than Map#get (stats and the
// list look up a category per entry).
type Index = Readonly<Record<string, { id: string } | undefined>>
const indexes = new WeakMap<readonly { id: string }[], { length: number; byId: Index }>()

/** The records of this list by id (cached until the list's length changes). */
export function indexById<T extends { id: string }>(records: readonly T[]): Readonly<Record<string, T | undefined>> {
  let index = indexes.get(records)
  if (!index || index.length !== records.length) {
    const byId: Record<string, T> = Object.create(null)
    for (const record of records) byId[record.id] = record
    index = { length: records.length, byId }
    indexes.set(records, index)
  }
  return index.byId as Readonly<Record<string, T | undefined>>
}

export function byId<T extends { id: string }>(records: readonly T[], id: string): T | undefined {
  return indexById(records)[id]
}

/** Puts `next` in the place of `current` (committed records are frozen: this is how one changes). */
export function replaceRecord<T extends { id: string }>(records: T[], current: T, next: T): T {
  const position = records.indexOf(current)
  if (position < 0 || next.id !== current.id) throw new Error('replaceRecord: not a record of this list')
  records[position] = next
  const index = indexes.get(records)
  if (index && index.length === records.length) (index.byId as Record<string, T>)[next.id] = next
  return next
}
