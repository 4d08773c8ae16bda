// An append-only audit log file (JSON Lines). Events queued while the previous batch syncs share
// one write and one fdatasync (group commit), and each caller's promise resolves only once its
// line is on disk. What a line holds, and the hash chain, is the caller's business (`seal`): the
// writer seals the queued events in order at write time, from the hash of the last line written,
// and a failed batch is cut off again, so that nothing chains from a line that is not on disk.
//
// The write goes to the page cache from the main thread (microseconds); the fdatasync runs in the
// thread pool, so the server goes on answering while the disk syncs (docs/performance.md, "The
// audit log's cost"). The server's own readers stop at the last durable line.
//
// A crash in the middle of an append leaves a last line without its newline (never acknowledged),
// or, on filesystems that extend a file before its data lands, zero bytes: whatever follows the
// first zero byte or the last newline is cut off at open (the rule and the readers:
// audit-log-reader.ts). Lines are never changed once durable;
// compaction replaces the whole file.
import { closeSync, constants, fdatasync, fsyncSync, ftruncateSync, openSync, unlinkSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'
import { fsyncDirSync, writeFileAtomic } from './atomic-file'
import { completeEnd, countLines, firstKept, joinAuditLines, lastLineBefore, openForReading, readAt } from './audit-log-reader'

export {
  joinAuditLines,
  readAuditBytes,
  readAuditChains,
  readAuditLines,
  readAuditLinesBackwards,
  readAuditLineEndingAt,
  readAuditLog,
  readFirstAuditLine,
  readJsonFile,
  SERVER_AUDIT_ANCHOR,
  SERVER_AUDIT_LOG,
  streamAuditLines,
  type StoredAuditChain,
} from './audit-log-reader'

export interface SealedLine {
  /** The line's text, without its newline. */
  text: string
  /** What the next line chains from. */
  hash: string
}

interface Pending<E> {
  event: E
  resolve: () => void
  reject: (error: unknown) => void
}

/** Syncs a file's data (fs.fdatasync in the thread pool; tests hold it to look in between). */
export type DataSync = (fd: number, done: (error: Error | null) => void) => void

export class AuditLogFile<E> {
  private queue: Pending<E>[] = []
  private fd: number | null = null
  private scheduled = false
  private paused = false
  /** A write failed and its bytes could not be cut: the next write cuts them first. */
  private dirty = false
  /** A batch's sync is in flight. */
  private syncing = false
  /** Waiting for the batch in flight (compaction, close). */
  private drained: (() => void)[] = []
  /** Whole lines of the chain up to the durable head (the opener sets it; appends count on). */
  durableLines = 0

  private constructor(
    readonly path: string,
    /** Length of the durable lines: where the next line goes. */
    private bytes: number,
    /** Hash of the last durable line (or the chain's start). */
    private head: string,
    private readonly seal: (event: E, prev: string) => SealedLine,
    private exists: boolean,
    private readonly dataSync: DataSync,
  ) {}

  /**
   * Opens a log; `headOf` gives the hash the next line chains from, given the last whole line (null:
   * none). A torn last line is cut off.
   */
  static open<E>(
    path: string,
    headOf: (lastLine: string | null) => string,
    seal: (event: E, prev: string) => SealedLine,
    dataSync: DataSync = fdatasync,
  ): AuditLogFile<E> {
    const fd = openForReading(path)
    if (fd === null) return new AuditLogFile(path, 0, headOf(null), seal, false, dataSync)
    let tail: { bytes: number; size: number; last: string | null }
    try {
      const end = completeEnd(fd)
      tail = { ...end, last: lastLineBefore(fd, end.bytes) }
    } finally {
      closeSync(fd)
    }
    if (tail.bytes < tail.size) {
      // A torn last line (a crash mid-append) was never acknowledged.
      const writable = openSync(path, 'r+')
      try {
        ftruncateSync(writable, tail.bytes)
        fsyncSync(writable)
      } finally {
        closeSync(writable)
      }
    }
    return new AuditLogFile(path, tail.bytes, headOf(tail.last), seal, true, dataSync)
  }

  /** The hash of the last durable line (or the chain's start). */
  get durableHead(): string {
    return this.head
  }

  /** Length of the durable lines: readers look no further (a batch in flight may still fail). */
  get durableBytes(): number {
    return this.bytes
  }

  /** Resolves once the event's line is durable; rejects when it could not be written. */
  append(event: E): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ event, resolve, reject })
      if (!this.scheduled && !this.paused) {
        this.scheduled = true
        setImmediate(() => this.flush())
      }
    })
  }

  /** Waits for every queued line. */
  async settle(): Promise<void> {
    while ((this.queue.length > 0 || this.syncing) && !this.paused) {
      this.flush()
      await this.idle()
    }
  }

  /**
   * Writes every event queued meanwhile as one write (on the main thread: it only reaches the page
   * cache) and syncs it in the thread pool. One batch is in flight at a time: what is queued while
   * it syncs goes in the next one, started as soon as it is done.
   */
  private flush(): void {
    this.scheduled = false
    if (this.paused || this.syncing || this.queue.length === 0) return
    const batch = this.queue
    this.queue = []
    let head = this.head
    const texts: string[] = []
    for (const pending of batch) {
      const sealed = this.seal(pending.event, head)
      texts.push(sealed.text)
      head = sealed.hash
    }
    const bytes = Buffer.from(joinAuditLines(texts))
    const end = this.bytes + bytes.length
    let fd: number
    try {
      fd = this.fd ??= openSync(this.path, constants.O_WRONLY | constants.O_CREAT, 0o600)
      if (this.dirty) {
        ftruncateSync(fd, this.bytes)
        this.dirty = false
      }
      writeAll(fd, bytes, this.bytes)
    } catch (error) {
      this.failed(batch, error)
      return
    }
    this.syncing = true
    this.dataSync(fd, (error) => {
      this.syncing = false
      try {
        if (error) throw error
        // A new file is durable only once its folder entry is.
        if (!this.exists) {
          fsyncDirSync(dirname(this.path))
          this.exists = true
        }
      } catch (error) {
        this.failed(batch, error)
        this.afterBatch()
        return
      }
      this.bytes = end
      this.head = head
      this.durableLines += batch.length
      for (const pending of batch) pending.resolve()
      this.afterBatch()
    })
  }

  /** Starts the next batch, or tells those waiting that nothing is in flight. */
  private afterBatch(): void {
    this.flush()
    if (!this.syncing) for (const resolve of this.drained.splice(0)) resolve()
  }

  /**
   * A write or its sync failed: cut what it left (a reader sees no unacknowledged line; if even
   * that fails, the next write cuts it first), and fail the batch.
   */
  private failed(batch: Pending<E>[], error: unknown): void {
    this.dirty = true
    try {
      if (this.fd !== null) {
        ftruncateSync(this.fd, this.bytes)
        this.dirty = false
      }
    } catch {}
    this.closeFd()
    for (const pending of batch) pending.reject(error)
  }

  /** Resolves once no batch is in flight. */
  private idle(): Promise<void> {
    if (!this.syncing) return Promise.resolve()
    return new Promise((resolve) => this.drained.push(resolve))
  }

  private closeFd(): void {
    if (this.fd === null) return
    try {
      closeSync(this.fd)
    } catch {}
    this.fd = null
  }

  /**
   * Compaction: drops the lines before the first one `keep` accepts. Lines are read from the start
   * only as far as that one; the rest is copied as it is, never split, parsed or joined. `dropping`
   * gets the last dropped line first (the caller records its checkpoint). Appends wait meanwhile,
   * so no line is written to the file being replaced after it was read. What the next line chains
   * from does not change.
   */
  async dropBefore(keep: (line: string) => boolean, dropping: (lastDropped: string, kept: { lines: number; bytes: number }) => Promise<void>): Promise<void> {
    this.paused = true
    try {
      await this.idle()
      const fd = openForReading(this.path)
      if (fd === null) return
      let kept: Buffer
      try {
        const cut = firstKept(fd, this.bytes, keep)
        if (cut.lastDropped === null) return
        kept = readAt(fd, cut.offset, this.bytes - cut.offset)
        await dropping(cut.lastDropped, { lines: countLines(kept), bytes: kept.length })
      } finally {
        closeSync(fd)
      }
      this.closeFd()
      await writeFileAtomic(this.path, kept)
      this.durableLines = countLines(kept)
      this.bytes = kept.length
      this.exists = true
      this.dirty = false
    } finally {
      this.paused = false
      if (this.queue.length > 0) this.flush()
    }
  }

  /** Writes what is queued and closes the file. */
  async close(): Promise<void> {
    await this.settle()
    this.closeFd()
  }
}

function writeAll(fd: number, bytes: Uint8Array, at: number): void {
  let written = 0
  while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written, at + written)
}

/** Deletes a log file for good (a deleted account's), durably; a missing file is fine. */
export function deleteAuditLogFile(path: string): void {
  try {
    unlinkSync(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  fsyncDirSync(dirname(path))
}

/** A small JSON file written atomically (the server log's chain start). */
export async function writeJsonFile(path: string, value: unknown): Promise<void> {
  await writeFileAtomic(path, JSON.stringify(value))
}
