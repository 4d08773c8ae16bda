// What changed in a document since it was last committed, as a list of changes small enough to
// append to its change log (change-log.ts), and how to apply such a list to a document read
// from disk.
//
// A commit costs what changed, not the size of the lists: records are only ever pushed,
// replaced (by-id.ts replaceRecord), removed in place (by-id.ts removeRecord) or dropped by
// filtering into a new list. Replacing and removing note the id in the list's journal; pushed
// records are the ones past the list's committed length. Only a list filtered into a new one is
// compared with the committed one, record by record reference (deleting is the rare write). For
// that to see every change, committed records are frozen (deeply): changing one in place throws.
// Other top-level fields are compared by value and "set".
import { indexById, takeJournal, type Journal } from './by-id'

export type StoredRecord = { readonly id: string }

export type Change =
  | readonly ['put', list: string, record: StoredRecord]
  | readonly ['del', list: string, id: string]
  | readonly ['set', field: string, value: unknown]

/** A list as of its last commit: the array itself and its length then (nothing is copied). */
interface CommittedList {
  readonly records: readonly StoredRecord[]
  readonly length: number
}

/** The lists and fields of a document as of its last commit. */
export interface Committed {
  readonly lists: ReadonlyMap<string, CommittedList>
  readonly fields: ReadonlyMap<string, unknown>
}

type DocumentData = Record<string, unknown>

/**
 * One frozen empty list for every empty list inside a record: a frozen array costs the engine a
 * separate storage object each (50,000 users' empty `identities` were megabytes).
 */
const FROZEN_EMPTY: readonly unknown[] = Object.freeze([])

/** Freezes an object and every object inside it. Recurses only into objects: most fields are text. */
function deepFreeze(value: object): void {
  const keys = Object.keys(value)
  for (let i = 0; i < keys.length; i++) {
    const inner: unknown = (value as Record<string, unknown>)[keys[i]]
    if (typeof inner !== 'object' || inner === null || Object.isFrozen(inner)) continue
    if (Array.isArray(inner) && inner.length === 0 && !Array.isArray(value)) (value as Record<string, unknown>)[keys[i]] = FROZEN_EMPTY
    else deepFreeze(inner)
  }
  Object.freeze(value)
}

function listOf(data: DocumentData, name: string): StoredRecord[] {
  const list = data[name]
  if (!Array.isArray(list)) throw new TypeError(`document list ${name} is not an array`)
  return list as StoredRecord[]
}

const NOTHING_COMMITTED: Committed = { lists: new Map(), fields: new Map() }
const EMPTY: readonly StoredRecord[] = []

/** Freezes every record of `lists` and notes the document's state as committed (at open, after a reload). */
export function commitState(data: DocumentData, lists: readonly string[]): Committed {
  const committedLists = new Map<string, CommittedList>()
  for (const name of lists) {
    const records = listOf(data, name)
    for (let i = 0; i < records.length; i++) deepFreeze(records[i])
    // Whatever was noted on these arrays before is in this state already.
    takeJournal(records)
    committedLists.set(name, { records, length: records.length })
  }
  const fields = new Map<string, unknown>()
  for (const [name, value] of Object.entries(data)) if (!committedLists.has(name)) fields.set(name, value)
  return { lists: committedLists, fields }
}

/** The changes from `committed` to `data`, and the state to note once they are durable. */
export function changesSince(committed: Committed, data: DocumentData, lists: readonly string[]): { changes: Change[]; next: Committed } {
  const changes: Change[] = []
  const nextLists = new Map<string, CommittedList>()
  for (const name of lists) {
    const before = committed.lists.get(name) ?? { records: EMPTY, length: 0 }
    const after = listOf(data, name)
    // Taken now: whatever changes after this instant belongs to the next commit.
    const journal = takeJournal(before.records)
    if (after === before.records) sameListChanges(name, after, before.length, journal, changes)
    else {
      // Records replaced or pushed into the new array are new references: found without its journal.
      takeJournal(after)
      newListChanges(name, before, journal, after, changes)
    }
    nextLists.set(name, { records: after, length: after.length })
  }
  const fields = new Map<string, unknown>()
  for (const [name, value] of Object.entries(data)) {
    if (nextLists.has(name)) continue
    fields.set(name, value)
    if (!committed.fields.has(name) || committed.fields.get(name) !== value) changes.push(['set', name, value])
  }
  return { changes, next: { lists: nextLists, fields } }
}

/** The same array as at the last commit: its journal, and what was pushed past its committed records. */
function sameListChanges(name: string, records: readonly StoredRecord[], committedLength: number, journal: Journal | undefined, changes: Change[]): void {
  // Removing in place moves later records forward: the committed ones left are the first
  // `committedLength - removed` (an over-count only puts a record again, which changes nothing).
  const firstPushed = Math.max(0, committedLength - (journal?.removed ?? 0))
  if (journal) {
    const current = indexById(records)
    for (const id of journal.ids) {
      const record = current[id]
      if (record === undefined) changes.push(['del', name, id])
      // A record pushed since the commit is put below.
      else if (records.indexOf(record, firstPushed) < 0) put(name, record, changes)
    }
  }
  for (let i = firstPushed; i < records.length; i++) put(name, records[i], changes)
}

/** A list filtered into a new array: compared with the committed records by reference. */
function newListChanges(name: string, before: CommittedList, journal: Journal | undefined, after: readonly StoredRecord[], changes: Change[]): void {
  const survivors = Math.max(0, before.length - (journal?.removed ?? 0))
  const kept = new Set<StoredRecord>()
  const candidates = new Set<string>(journal?.ids)
  for (let i = 0; i < survivors && i < before.records.length; i++) {
    const record = before.records[i]
    candidates.add(record.id)
    // A record replaced in the old array since the commit is new even though it is there.
    if (!journal?.ids.has(record.id)) kept.add(record)
  }
  const ids = new Set<string>()
  for (const record of after) {
    ids.add(record.id)
    if (!kept.has(record)) put(name, record, changes)
  }
  for (const id of candidates) if (!ids.has(id)) changes.push(['del', name, id])
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
