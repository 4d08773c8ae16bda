// One JSON document on disk, held in memory as plain data. Mutations are synchronous on
// the in-memory data, then committed: concurrent commits share one write and one fsync (group
// commit). When a write fails, the in-memory data goes back to what is on disk and every commit
// waiting on it fails, so no answer claims a write that is not durable.
//
// A document either rewrites its file atomically on every commit, or (with `loggedLists`)
// appends each commit's changes to a change log beside it and rewrites the file only once the
// log has grown as long as the file. Replaying at start then reads at most about twice the
// document, and a write costs what changed, not the size of the document.
import { readFileSync, statSync } from 'node:fs'
import { writeFileAtomic } from './atomic-file'
import { ChangeLog, readLogSync } from './change-log'
import type { StoredDocument } from './data-store'
import { CorruptDocumentError } from './errors'
import { applyChanges, freezeLists, type Change } from './changes'
import { GroupCommit } from './group-commit'
import type { Writer } from './writer'

/** The log is folded into the file once it is this long at least (and as long as the file). */
const MIN_LOG_BYTES_TO_FOLD = 64 * 1024

export { CorruptDocumentError }

/** The document's file, parsed; null when there is none. */
function readDocumentSync<T>(path: string): { data: T; length: number } | null {
  // Read synchronously, as JSON.parse (the larger cost) runs after it anyway, and only once per
  // document and process: the asynchronous read's thread-pool path costs idle memory (docs/performance.md).
  try {
    const text = readFileSync(path, 'utf8')
    return { data: parseDocument<T>(path, text), length: text.length }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
}

function parseDocument<T>(path: string, text: string): T {
  try {
    return JSON.parse(text) as T
  } catch {
    throw new CorruptDocumentError(`${path} is not valid JSON; restore it from a backup`)
  }
}

/**
 * Which file is at `path`, as far as a reader beside a writer needs: another one renamed in, or
 * this one written to, changes it. Undefined when there is none.
 */
export function fileIdentity(path: string): string | undefined {
  const stats = statSync(path, { throwIfNoEntry: false })
  return stats && `${stats.ino}:${stats.ctimeMs}:${stats.size}`
}

/**
 * A logged document's current text, read beside a running server (backups): its file with its
 * change log applied. The file is replaced only by rename, and its log removed only after that:
 * when the file is the same one before and after the log was read, the log holds every commit
 * since (replaying ones the file already holds changes nothing). Null when there is no file.
 */
export function readLoggedDocumentSync(path: string, lists: readonly string[]): string | null {
  for (let attempt = 0; attempt < 10; attempt++) {
    const before = fileIdentity(path)
    if (!before) return null
    const text = readFileSync(path, 'utf8')
    const { batches } = readLogSync(`${path}.log`)
    if (fileIdentity(path) !== before) continue
    if (batches.length === 0) return text
    const data = parseDocument<Record<string, unknown>>(path, text)
    applyLog(path, data, lists, batches)
    return JSON.stringify(data)
  }
  throw new Error(`${path} kept changing while it was read`)
}

function applyLog(path: string, data: unknown, lists: readonly string[], batches: Change[][]): void {
  try {
    applyChanges(data as Record<string, unknown>, lists, batches)
  } catch (error) {
    throw new CorruptDocumentError(`${path}.log does not fit ${path} (${(error as Error).message}); restore the data folder from a backup`)
  }
}

export interface DocumentOptions<T> {
  /** Data for a file that does not exist yet; it is written at once. */
  create: () => T
  /** Brings data of an older format up to the current one (after its change log is applied: the log is in the file's format). */
  migrate?: (data: T) => T
  /**
   * With `loggedLists`: readies the file's data for its log before the log is applied (records
   * stored before they had an id get one, so the log's changes, keyed by id, find them).
   */
  beforeLog?: (data: T) => T
  /** Writes a document that `migrate` brought to a new version back at once (not for read-only tools). */
  persistMigration?: boolean
  onWriteError?: (path: string, error: unknown) => void
  /** Called after a failed write put the in-memory data back to what is on disk. */
  onReload?: (data: T) => void
  /**
   * Top-level lists of records with ids whose changes go to a change log beside the file
   * (`<file>.log`) instead of rewriting the file each commit. Their records are frozen as
   * stored (changes.ts): the writer (writer.ts) replaces a record to change it.
   */
  loggedLists?: readonly string[]
}

export class Document<T> extends GroupCommit<T> implements StoredDocument<T> {
  /** Length of the file's text when last read or written; 0 when there is no file. */
  private fileLength = 0
  private log: ChangeLog | null = null
  /** The changes of the write under way (put back when it fails and the file cannot be read again). */
  private writing: Change[] = []
  private fileExists = false
  private foldWanted = false

  private constructor(
    readonly path: string,
    private readonly options: DocumentOptions<T>,
  ) {
    super(options.loggedLists ?? [])
  }

  private takePending(): Change[] {
    return this.pending.take()
  }

  static async open<T>(path: string, options: DocumentOptions<T>): Promise<Document<T>> {
    const document = new Document<T>(path, options)
    const file = readDocumentSync<T>(path)
    if (file) {
      document.current = file.data
      document.fileLength = file.length
    }
    document.fileExists = file !== null && file.data !== null && file.data !== undefined
    const lists = options.loggedLists
    // Whether opening upgraded the stored format (the upgraded document is then written back).
    let migrated = false
    const migrate = (data: T): T => {
      const before = (data as Record<string, unknown>).version
      const after = options.migrate!(data)
      if ((after as Record<string, unknown>).version !== before) migrated = true
      return after
    }
    if (lists) {
      const { log, batches } = ChangeLog.open(`${path}.log`)
      if (!document.fileExists && batches.length > 0) {
        throw new CorruptDocumentError(`${path} is missing but its change log is there; restore the data folder from a backup`)
      }
      document.log = log
      // The log was written beside the file in the file's format: applied first, then both are
      // brought up to the current format together.
      if (document.fileExists && options.beforeLog) document.current = options.beforeLog(document.current)
      if (document.fileExists) applyLog(path, document.current, lists, batches)
    }
    if (!document.fileExists) document.current = options.create()
    else if (options.migrate) document.current = migrate(document.current)
    if (lists) freezeLists(document.untyped(), lists)
    if (!document.fileExists) await document.commit()
    else if (migrated && options.persistMigration) {
      // The whole document in its new format (with a change log: folded into it).
      document.foldWanted = true
      await document.commit()
    }
    return document
  }

  private untyped(): Record<string, unknown> {
    return this.current as Record<string, unknown>
  }

  /** Applies a synchronous mutation, made through `write`, and resolves once it is on disk. */
  async update<R>(mutate: (data: T, write: Writer<T>) => R): Promise<R> {
    const result = mutate(this.current, this.writer)
    await this.commit()
    return result
  }

  /** Folds the change log into the file, so the file alone holds the document (a clean stop). */
  async fold(): Promise<void> {
    await this.settle()
    if (!this.log || this.log.bytes === 0) return
    this.foldWanted = true
    await this.commit()
  }

  /** Starts the write of everything committed so far (synchronously: it sees one instant). */
  protected write(): Promise<void> {
    // Taken now: whatever changes after this instant belongs to the next write.
    const changes = this.takePending()
    this.writing = changes
    const log = this.log
    if (!log) return writeFileAtomic(this.path, JSON.stringify(this.current))
    const fold = !this.fileExists || this.foldWanted || log.bytes >= Math.max(this.fileLength, MIN_LOG_BYTES_TO_FOLD)
    this.foldWanted = false
    // Taken with the changes: the file must hold exactly the state the log ends at.
    const text = fold ? JSON.stringify(this.current) : null
    return this.persist(log, changes, text)
  }

  private async persist(log: ChangeLog, changes: Change[], text: string | null): Promise<void> {
    const onDisk = this.fileExists
    // Logged first even when the file is rewritten next: the log must hold every change up to
    // the file's state, so that replaying it over that file (a crash before the log is removed)
    // ends in the same state instead of bringing back older versions of records.
    if (onDisk && changes.length > 0) await log.append(changes)
    if (text === null) return
    try {
      await writeFileAtomic(this.path, text)
      this.fileExists = true
      this.fileLength = text.length
      await log.clear()
    } catch (error) {
      // The commit is durable in the log already; the fold is tried again on the next commit.
      if (!onDisk) throw error
      this.options.onWriteError?.(this.path, error)
    }
  }

  /** The file and its log read again (the data as on disk); unreadable: the failed changes go with the next write. */
  protected recover(error: unknown): void {
    try {
      const file = readDocumentSync<T>(this.path)
      if (file !== null && file.data !== null && file.data !== undefined) {
        this.fileLength = file.length
        let current = this.log && this.options.beforeLog ? this.options.beforeLog(file.data) : file.data
        if (this.log) applyLog(this.path, current, this.options.loggedLists!, readLogSync(this.log.path, this.log.bytes).batches)
        if (this.options.migrate) current = this.options.migrate(current)
        this.current = current
        if (this.log) freezeLists(this.untyped(), this.options.loggedLists!)
        // Changed since the failed write began: not durable either, and gone with the reload.
        this.takePending()
        this.options.onReload?.(this.current)
      }
    } catch {
      // The file cannot be read either; keep serving what we have and let the next write retry
      // the failed changes too.
      this.pending.restore(this.writing)
    }
    this.options.onWriteError?.(this.path, error)
  }
}
