// Lookup by id in a document's record list without scanning it.
//
// Records are only ever pushed, replaced, removed in place or dropped by filtering into a new
// list, all through the document's writer (writer.ts, the only caller of the changing functions
// below); ids never change. The index of a list follows pushes by adding the records past the
// length it last saw, and replaceRecord/removeRecord update it in place: it is never rebuilt
// whole after a write (only for a new list). A null-prototype object rather
// than a Map: ids parsed from JSON are separate string copies, and a property lookup with one is
// about three times faster than Map#get (stats and the list look up a category per entry).
type Index = Record<string, { id: string } | undefined>
const indexes = new WeakMap<readonly { id: string }[], { length: number; byId: Index }>()

/** The records of this list by id (kept up to date as records are pushed, replaced or removed). */
export function indexById<T extends { id: string }>(records: readonly T[]): Readonly<Record<string, T | undefined>> {
  let index = indexes.get(records)
  if (!index || index.length > records.length) {
    index = { length: 0, byId: Object.create(null) }
    indexes.set(records, index)
  }
  if (index.length !== records.length) {
    // Records pushed since the index last looked.
    for (let i = index.length; i < records.length; i++) index.byId[records[i].id] = records[i]
    index.length = records.length
  }
  return index.byId as Readonly<Record<string, T | undefined>>
}

export function byId<T extends { id: string }>(records: readonly T[], id: string): T | undefined {
  return indexById(records)[id]
}

/**
 * Where each record of a list is, for the writer: replacing a record costs a lookup, not a scan
 * of the list (a session's lastSeenAt is replaced once a minute per session in use). Built on a
 * list's first replace or removal (reads never need it), then kept up to date like the index.
 */
const positions = new WeakMap<readonly { id: string }[], { length: number; at: Record<string, number | undefined> }>()

function positionOf(records: readonly { id: string }[], record: { id: string }): number {
  let known = positions.get(records)
  if (!known || known.length > records.length) {
    known = { length: 0, at: Object.create(null) }
    positions.set(records, known)
  }
  // Records pushed since it last looked.
  for (let i = known.length; i < records.length; i++) known.at[records[i].id] = i
  known.length = records.length
  const at = known.at[record.id]
  if (at !== undefined && records[at] === record) return at
  return records.lastIndexOf(record)
}

/**
 * Records of a list grouped by a derived key (say category, name and environment), kept up to
 * date like the id index: pushes are added when next asked, replaceRecord and removeRecord move
 * or drop the record. For uniqueness checks that would otherwise scan the whole list per write.
 */
interface Grouping {
  keyOf: (record: { id: string }) => string
  length: number
  groups: Map<string, { id: string }[]>
}
const groupings = new WeakMap<readonly { id: string }[], Map<string, Grouping>>()

function group(grouping: Grouping, record: { id: string }): void {
  const key = grouping.keyOf(record)
  const members = grouping.groups.get(key)
  if (members) members.push(record)
  else grouping.groups.set(key, [record])
}

function ungroup(grouping: Grouping, record: { id: string }): void {
  const key = grouping.keyOf(record)
  const members = grouping.groups.get(key)
  const at = members?.indexOf(record) ?? -1
  if (at >= 0) members!.splice(at, 1)
  if (members?.length === 0) grouping.groups.delete(key)
}

/** The records of the list whose `keyOf` is `key` (`name` tells groupings of one list apart). */
export function recordsWithKey<T extends { id: string }>(records: readonly T[], name: string, keyOf: (record: T) => string, key: string): readonly T[] {
  let byName = groupings.get(records)
  if (!byName) groupings.set(records, (byName = new Map()))
  let grouping = byName.get(name)
  if (!grouping || grouping.length > records.length) {
    grouping = { keyOf: keyOf as Grouping['keyOf'], length: 0, groups: new Map() }
    byName.set(name, grouping)
  }
  for (let i = grouping.length; i < records.length; i++) group(grouping, records[i])
  grouping.length = records.length
  return (grouping.groups.get(key) ?? []) as unknown as readonly T[]
}

/** Puts `next` in the place of `current` (writer.ts). */
export function replaceRecord<T extends { id: string }>(records: T[], current: T, next: T): T {
  const position = positionOf(records, current)
  if (position < 0 || next.id !== current.id) throw new Error('replaceRecord: not a record of this list')
  replaceAt(records, position, current, next)
  return next
}

/** replaceRecord for many records at once: one pass over the list instead of a search per record. */
export function replaceRecords<T extends { id: string }>(records: T[], replacements: ReadonlyMap<T, T>): void {
  if (replacements.size === 0) return
  for (let position = 0; position < records.length; position++) {
    const current = records[position]
    const next = replacements.get(current)
    if (next === undefined) continue
    if (next.id !== current.id) throw new Error('replaceRecords: a replacement has another id')
    replaceAt(records, position, current, next)
  }
}

function replaceAt<T extends { id: string }>(records: T[], position: number, current: T, next: T): void {
  indexById(records)
  records[position] = next
  ;(indexes.get(records)!.byId as Record<string, T>)[next.id] = next
  for (const grouping of groupings.get(records)?.values() ?? []) {
    // Only records it has seen: later ones are added when it is next asked.
    if (position >= grouping.length) continue
    ungroup(grouping, current)
    group(grouping, next)
  }
}

/** Removes `record` from the list in place (writer.ts). */
export function removeRecord<T extends { id: string }>(records: T[], record: T): void {
  const position = positionOf(records, record)
  if (position < 0) return
  const index = indexById(records) as Index
  for (const grouping of groupings.get(records)?.values() ?? []) {
    if (position < grouping.length) {
      ungroup(grouping, record)
      grouping.length--
    }
  }
  records.splice(position, 1)
  delete index[record.id]
  indexes.get(records)!.length = records.length
  // The records after it moved forward by one (as the splice did: the same cost).
  const known = positions.get(records)!
  delete known.at[record.id]
  for (let i = position; i < records.length; i++) known.at[records[i].id] = i
  known.length = records.length
}
