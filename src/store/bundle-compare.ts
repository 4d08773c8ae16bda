// A migration's check: the copy, read back from the target store as a bundle, against the bundle
// read from the source. Documents are compared record by record (each list by record id, the
// other fields as values); audit logs byte for byte, and the server log's anchor by where its
// chain starts (start, checkpoint, keying time: a database keeps its head, lines and bytes with
// the log, a folder's file may lag the log by a few lines), so every chain is the same chain (a
// vault's anchor is a field of its document).
import { MASTER_KEY_FILE } from '../crypto/master-key'
import type { BackupBundle } from './backup'
import { ACCOUNTS_LISTS, VAULT_LISTS } from './records'
import { ACCOUNTS_FILE } from './store'

export interface Comparison {
  documents: number
  /** Records in the documents' lists, compared one by one. */
  records: number
  auditLogs: number
  /** What differs, one line each (empty: the copy is equal). */
  differences: string[]
}

type Json = Record<string, unknown>

const parse = (data: string) => JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as Json

/** Compares two documents; returns how many list records were compared. */
function compareDocument(path: string, source: Json, copy: Json, differences: string[]): number {
  const lists: readonly string[] = path === ACCOUNTS_FILE ? ACCOUNTS_LISTS : VAULT_LISTS
  let records = 0
  for (const key of new Set([...Object.keys(source), ...Object.keys(copy)])) {
    if (!lists.includes(key)) {
      if (!Bun.deepEquals(source[key], copy[key])) differences.push(`${path}: field ${key} differs`)
      continue
    }
    const before = (Array.isArray(source[key]) ? source[key] : []) as { id?: unknown }[]
    const after = new Map(
      ((Array.isArray(copy[key]) ? copy[key] : []) as { id?: unknown }[]).map((record, index) => [String(record?.id ?? `#${index}`), record]),
    )
    if (before.length !== after.size) differences.push(`${path}: ${key} holds ${before.length} record(s), the copy ${after.size}`)
    before.forEach((record, index) => {
      records++
      const id = String(record?.id ?? `#${index}`)
      const copied = after.get(id)
      if (copied === undefined) differences.push(`${path}: ${key} record ${id} is missing from the copy`)
      else if (!Bun.deepEquals(record, copied)) differences.push(`${path}: ${key} record ${id} differs in the copy`)
    })
  }
  return records
}

export function compareBundles(source: BackupBundle, copy: BackupBundle): Comparison {
  const result: Comparison = { documents: 0, records: 0, auditLogs: 0, differences: [] }
  const copied = new Map(copy.files.filter((file) => file.path !== MASTER_KEY_FILE).map((file) => [file.path, file]))
  for (const file of source.files) {
    if (file.path === MASTER_KEY_FILE) continue
    const other = copied.get(file.path)
    copied.delete(file.path)
    // An empty audit log is the same as none (a database keeps no file form of a log without lines).
    if (!other && file.path.endsWith('.log') && file.data === '') continue
    if (!other) {
      result.differences.push(`${file.path} is missing from the copy`)
      continue
    }
    if (file.path === 'audit.chain.json') {
      const [a, b] = [parse(file.data), parse(other.data)]
      const where = (anchor: Json) => [anchor.start, anchor.checkpoint ?? null, anchor.keyedSince ?? null]
      if (!Bun.deepEquals(where(a), where(b))) result.differences.push(`${file.path} differs in the copy (where the chain starts)`)
    } else if (file.path.endsWith('.json')) {
      result.documents++
      result.records += compareDocument(file.path, parse(file.data), parse(other.data), result.differences)
    } else {
      if (file.path.endsWith('.log')) result.auditLogs++
      if (file.sha256 !== other.sha256) result.differences.push(`${file.path} differs in the copy`)
    }
  }
  for (const [path, file] of copied) if (!(path.endsWith('.log') && file.data === '')) result.differences.push(`${path} is in the copy but not in the source`)
  return result
}
