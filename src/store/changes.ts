// What changed in a document since it was last committed, as a list of changes small enough to
// append to its change log (change-log.ts), and how to apply such a list to a document read
// from disk.
//
// The document's record lists are compared with copies taken at the last commit, record by
// record reference: a record that is new or replaced is "put", one that is gone is "del". For
// that to see every change, committed records are frozen (deeply): changing one in place throws,
// so code changes a record by replacing it (by-id.ts replaceRecord). Other top-level fields are
// compared by value and "set". Comparing references costs a pass over each list per commit,
// far less than serializing the document.

export type StoredRecord = { readonly id: string }

export type Change =
  | readonly ['put', list: string, record: StoredRecord]
  | readonly ['del', list: string, id: string]
  | readonly ['set', field: string, value: unknown]

/** The lists and fields of a document as of its last commit. */
export interface Committed {
  readonly lists: ReadonlyMap<string, readonly StoredRecord[]>
  readonly fields: ReadonlyMap<string, unknown>
}

type DocumentData = Record<string, unknown>

/** Freezes an object and every object inside it. Recurses only into objects: most fields are text. */
function deepFreeze(value: object): void {
  Object.freeze(value)
  for (const key in value) {
    const inner: unknown = (value as Record<string, unknown>)[key]
    if (typeof inner === 'object' && inner !== null && !Object.isFrozen(inner)) deepFreeze(inner)
  }
}

function listOf(data: DocumentData, name: string): StoredRecord[] {
  const list = data[name]
  if (!Array.isArray(list)) throw new TypeError(`document list ${name} is not an array`)
  return list as StoredRecord[]
}

const NOTHING_COMMITTED: Committed = { lists: new Map(), fields: new Map() }

/** Freezes every record of `lists` and notes the document's state as committed. */
export function commitState(data: DocumentData, lists: readonly string[]): Committed {
  // Every record is new against nothing: changesSince freezes them all and copies the lists.
  return changesSince(NOTHING_COMMITTED, data, lists).next
}

/** The changes from `committed` to `data`, and the state to note once they are durable. */
export function changesSince(committed: Committed, data: DocumentData, lists: readonly string[]): { changes: Change[]; next: Committed } {
  const changes: Change[] = []
  const nextLists = new Map<string, readonly StoredRecord[]>()
  for (const name of lists) {
    const before = committed.lists.get(name) ?? []
    const after = listOf(data, name)
    const unchanged = listChanges(name, before, after, changes)
    // An unchanged list keeps its copy: no allocation.
    nextLists.set(name, unchanged ? before : after.slice())
  }
  const fields = new Map<string, unknown>()
  for (const [name, value] of Object.entries(data)) {
    if (nextLists.has(name)) continue
    fields.set(name, value)
    if (!committed.fields.has(name) || committed.fields.get(name) !== value) changes.push(['set', name, value])
  }
  return { changes, next: { lists: nextLists, fields } }
}

/** Adds the changes of one list; true when it holds the same records in the same order. */
function listChanges(name: string, before: readonly StoredRecord[], after: readonly StoredRecord[], changes: Change[]): boolean {
  let same = 0
  const shorter = Math.min(before.length, after.length)
  while (same < shorter && before[same] === after[same]) same++
  if (same === before.length) {
    // The common case: records only appended.
    for (let i = same; i < after.length; i++) put(name, after[i], changes)
    return same === after.length
  }
  const kept = new Set<StoredRecord>(before.slice(same))
  const ids = new Set<string>()
  for (let i = same; i < after.length; i++) {
    const record = after[i]
    ids.add(record.id)
    if (!kept.has(record)) put(name, record, changes)
  }
  for (let i = same; i < before.length; i++) {
    if (!ids.has(before[i].id)) changes.push(['del', name, before[i].id])
  }
  return false
}

function put(name: string, record: StoredRecord, changes: Change[]): void {
  deepFreeze(record)
  changes.push(['put', name, record])
}

export class MalformedChangeError extends Error {}

/**
 * Applies logged changes to a document read from disk. Applying a change that the document
 * already holds changes nothing, so a log may be replayed over a document written after it.
 */
export function applyChanges(data: DocumentData, lists: readonly string[], batches: readonly (readonly Change[])[]): void {
  const byList = new Map<string, Map<string, StoredRecord>>()
  const recordsOf = (name: string) => {
    let records = byList.get(name)
    if (!records) {
      if (!lists.includes(name)) throw new MalformedChangeError(`a change names an unknown list ${JSON.stringify(name)}`)
      // A Map keeps insertion order: a replaced record keeps its place, a new one goes last.
      // A list the file does not hold yet (one added to the format later) starts empty.
      records = new Map((data[name] === undefined ? [] : listOf(data, name)).map((record) => [record.id, record]))
      byList.set(name, records)
    }
    return records
  }
  for (const batch of batches) {
    if (!Array.isArray(batch)) throw new MalformedChangeError('a logged commit is not a list of changes')
    for (const change of batch) {
      const [kind, name, value] = Array.isArray(change) ? change : []
      if (kind === 'put' && isRecord(value)) recordsOf(name).set(value.id, value)
      else if (kind === 'del' && typeof value === 'string') recordsOf(name).delete(value)
      else if (kind === 'set' && typeof name === 'string' && !lists.includes(name)) data[name] = value
      else throw new MalformedChangeError(`a logged change is malformed: ${JSON.stringify(kind)}`)
    }
  }
  for (const [name, records] of byList) data[name] = [...records.values()]
}

function isRecord(value: unknown): value is StoredRecord {
  return typeof value === 'object' && value !== null && typeof (value as StoredRecord).id === 'string'
}
