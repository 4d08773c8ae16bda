// Lookup by id in a document's record list without scanning it, and the journal of what changed
// in a list since its last commit (changes.ts reads it).
//
// Records are only ever pushed, replaced through replaceRecord, removed through removeRecord or
// by filtering into a new list; ids never change. The index of a list follows pushes by adding
// the records past the length it last saw, and replaceRecord/removeRecord update it in place:
// it is never rebuilt whole after a write (only for a new list). A null-prototype object rather
// than a Map: ids parsed from JSON are separate string copies, and a property lookup with one is
// about three times faster than Map#get (stats and the list look up a category per entry).
type Index = Record<string, { id: string } | undefined>
const indexes = new WeakMap<readonly { id: string }[], { length: number; byId: Index }>()

/** Ids replaced or removed in a list since its last commit, and how many were removed in place. */
export interface Journal {
  ids: Set<string>
  removed: number
}
const journals = new WeakMap<readonly { id: string }[], Journal>()

function journalOf(records: readonly { id: string }[]): Journal {
  let journal = journals.get(records)
  if (!journal) journals.set(records, (journal = { ids: new Set(), removed: 0 }))
  return journal
}

/** The list's journal since the last call (changes.ts, at a commit), emptied. */
export function takeJournal(records: readonly { id: string }[]): Journal | undefined {
  const journal = journals.get(records)
  if (journal) journals.delete(records)
  return journal
}

/** The records of this list by id (kept up to date as records are pushed, replaced or removed). */
export function indexById<T extends { id: string }>(records: readonly T[]): Readonly<Record<string, T | undefined>> {
  let index = indexes.get(records)
  if (!index || index.length > records.length) {
    index = { length: 0, byId: Object.create(null) }
    indexes.set(records, index)
  }
  // Records pushed since the index last looked.
  for (let i = index.length; i < records.length; i++) index.byId[records[i].id] = records[i]
  index.length = records.length
  return index.byId as Readonly<Record<string, T | undefined>>
}

export function byId<T extends { id: string }>(records: readonly T[], id: string): T | undefined {
  return indexById(records)[id]
}

/** Puts `next` in the place of `current` (committed records are frozen: this is how one changes). */
export function replaceRecord<T extends { id: string }>(records: T[], current: T, next: T): T {
  const position = records.indexOf(current)
  if (position < 0 || next.id !== current.id) throw new Error('replaceRecord: not a record of this list')
  indexById(records)
  records[position] = next
  ;(indexes.get(records)!.byId as Record<string, T>)[next.id] = next
  journalOf(records).ids.add(next.id)
  return next
}

/** Removes `record` from the list in place (no new list: a commit then costs what changed). */
export function removeRecord<T extends { id: string }>(records: T[], record: T): void {
  const position = records.lastIndexOf(record)
  if (position < 0) return
  const index = indexById(records) as Index
  records.splice(position, 1)
  delete index[record.id]
  indexes.get(records)!.length = records.length
  const journal = journalOf(records)
  journal.ids.add(record.id)
  journal.removed++
}
