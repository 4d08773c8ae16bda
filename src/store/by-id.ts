// Lookup by id in a document's record list without scanning it: an index per list, rebuilt
// whenever the list's length changes (records are only ever pushed, or removed by filtering into
// a new list; ids never change), so it cannot go stale.
const indexes = new WeakMap<readonly { id: string }[], { length: number; byId: Map<string, { id: string }> }>()

export function byId<T extends { id: string }>(records: readonly T[], id: string): T | undefined {
  let index = indexes.get(records)
  if (!index || index.length !== records.length) {
    index = { length: records.length, byId: new Map(records.map((record) => [record.id, record])) }
    indexes.set(records, index)
  }
  return index.byId.get(id) as T | undefined
}
