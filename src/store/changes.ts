// What a commit changed, as a list of changes small enough to append to a document's change log
// (change-log.ts), and how to apply such a list to a document read from disk.
//
// The changes are recorded as they are made, by the document's writer (writer.ts: the only way
// to change stored data), so a commit costs what changed, not the size of the lists. Stored
// records are frozen (deeply) as they are written: one changed in place would never reach the
// log, so trying throws (the types say readonly too).

export type StoredRecord = { readonly id: string }

export type Change =
  | readonly ['put', list: string, record: StoredRecord]
  | readonly ['del', list: string, id: string]
  | readonly ['set', field: string, value: unknown]

type DocumentData = Record<string, unknown>

/**
 * One frozen empty list for every empty list inside a record: a frozen array costs the engine a
 * separate storage object each (50,000 users' empty `identities` were megabytes).
 */
const FROZEN_EMPTY: readonly unknown[] = Object.freeze([])

/** Freezes an object and every object inside it. Recurses only into objects: most fields are text. */
export function deepFreeze(value: object): void {
  const keys = Object.keys(value)
  for (let i = 0; i < keys.length; i++) {
    const inner: unknown = (value as Record<string, unknown>)[keys[i]]
    if (typeof inner !== 'object' || inner === null || Object.isFrozen(inner)) continue
    if (Array.isArray(inner) && inner.length === 0 && !Array.isArray(value)) (value as Record<string, unknown>)[keys[i]] = FROZEN_EMPTY
    else deepFreeze(inner)
  }
  Object.freeze(value)
}

export function listOf(data: DocumentData, name: string): StoredRecord[] {
  const list = data[name]
  if (!Array.isArray(list)) throw new TypeError(`document list ${name} is not an array`)
  return list as StoredRecord[]
}

/** Freezes every record of `lists` (at open, after a reload): from then on only the writer changes them. */
export function freezeLists(data: DocumentData, lists: readonly string[]): void {
  for (const name of lists) {
    const records = listOf(data, name)
    for (let i = 0; i < records.length; i++) deepFreeze(records[i])
  }
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

/**
 * The changes made since the last write began, for the next write. A record put again (pushed,
 * then replaced) or a field set again before it is written takes the earlier one's place: the
 * write holds its last state once, at the place where the record first went (the order a replay
 * puts records in).
 */
export class PendingChanges {
  private changes: Change[] = []
  /** Where in `changes` the latest put of each record (and set of each field) is. */
  private at = new Map<string, number>()

  get size(): number {
    return this.changes.length
  }

  record(change: Change): void {
    const key = change[0] === 'set' ? `\0${change[1]}` : `${change[1]}\0${change[0] === 'put' ? change[2].id : change[2]}`
    if (change[0] === 'del') {
      this.at.delete(key)
      this.changes.push(change)
      return
    }
    const at = this.at.get(key)
    if (at !== undefined) this.changes[at] = change
    else {
      this.at.set(key, this.changes.length)
      this.changes.push(change)
    }
  }

  /** The changes so far; from now on the list starts empty. */
  take(): Change[] {
    const changes = this.changes
    this.changes = []
    this.at = new Map()
    return changes
  }

  /** Puts changes that could not be written back in front of the ones made since. */
  restore(changes: readonly Change[]): void {
    const later = this.take()
    for (const change of [...changes, ...later]) this.record(change)
  }
}
