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
// first zero byte or the last newline is cut off at open. Lines are never changed once durable;
// compaction replaces the whole file.
import { closeSync, constants, existsSync, fdatasync, fstatSync, fsyncSync, ftruncateSync, openSync, read as readInPool, readdirSync, readFileSync, readSync, unlinkSync, writeSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fsyncDirSync, writeFileAtomic } from './atomic-file'

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

/** The server's own log (failed sign-ins of unknown e-mails) and its chain's anchor, in the data folder. */
export const SERVER_AUDIT_LOG = 'audit.log'
export const SERVER_AUDIT_ANCHOR = 'audit.chain.json'

/** Syncs a file's data (fs.fdatasync in the thread pool; tests hold it to look in between). */
export type DataSync = (fd: number, done: (error: Error | null) => void) => void

/** Lines as a log file holds them: each followed by a newline. */
export function joinAuditLines(lines: string[]): string {
  return lines.length > 0 ? `${lines.join('\n')}\n` : ''
}

/** How much of a log the partial reads take at a time (growing when a line is longer). */
const CHUNK_BYTES = 64 * 1024

/** A log file opened for reading; null when there is none. */
function openForReading(path: string): number | null {
  try {
    return openSync(path, 'r')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
}

/** `length` bytes of a file from `start`; a file cut shorter meanwhile is an error, not a wait. */
function readAt(fd: number, start: number, length: number): Buffer {
  const bytes = Buffer.alloc(length)
  for (let filled = 0; filled < length; ) {
    const read = readSync(fd, bytes, filled, length - filled, start + filled)
    if (read === 0) throw new Error('an audit log was cut shorter while it was read')
    filled += read
  }
  return bytes
}

/**
 * The complete lines of a log file as bytes, each with its newline: a torn last line and anything
 * after a zero byte (a batch a crash left half on disk) are left out. `limit`: read no further
 * than this many bytes (the last durable line of a log being written).
 */
export function readAuditBytes(path: string, limit = Infinity): Buffer {
  let bytes: Buffer
  try {
    bytes = readFileSync(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0)
    throw error
  }
  const zero = bytes.indexOf(0)
  const cut = Math.min(limit, zero < 0 ? bytes.length : zero, bytes.length)
  return bytes.subarray(0, cut === 0 ? 0 : bytes.lastIndexOf(0x0a, cut - 1) + 1)
}

/** The complete lines of a log file (as readAuditBytes), and their length in bytes. */
export function readAuditLines(path: string, limit = Infinity): { lines: string[]; bytes: number } {
  const bytes = readAuditBytes(path, limit)
  const text = bytes.toString('utf8')
  return { lines: text === '' ? [] : text.slice(0, -1).split('\n'), bytes: bytes.length }
}

/**
 * Where the complete lines of a log file end, and its last line, read from the file's tail (a log
 * opened again after its vault was idle should not cost a read of the whole file). A torn last
 * line and zero bytes at the end (crash debris, as readAuditLines) are left out; the tail read
 * grows until it holds a whole line.
 */
function tailOf(fd: number): { bytes: number; size: number; last: string | null } {
  const size = fstatSync(fd).size
  for (let chunk = CHUNK_BYTES; ; chunk *= 4) {
    const start = Math.max(0, size - chunk)
    const tail = readAt(fd, start, size - start)
    const zero = tail.indexOf(0)
    const cut = zero < 0 ? tail.length : zero
    const end = cut === 0 ? -1 : tail.lastIndexOf(0x0a, cut - 1)
    const before = end <= 0 ? -1 : tail.lastIndexOf(0x0a, end - 1)
    // The last line is whole once the newline before it is in the tail (or the file starts there).
    if (end >= 0 && (before >= 0 || start === 0)) return { bytes: start + end + 1, size, last: tail.subarray(before + 1, end).toString('utf8') }
    if (start === 0) return { bytes: 0, size, last: null }
  }
}

/**
 * The complete lines of a log file, newest first, read backwards in chunks: a page of recent
 * events costs the same however long the log is. Ends where opening the log would cut it (tailOf), or at `limit` bytes
 * (the last durable line of a log being written). The chunks are read in the thread pool, so a
 * search far back (a filter that matches little) lets the server answer others in between.
 */
export async function* readAuditLinesBackwards(path: string, limit = Infinity): AsyncGenerator<string> {
  const fd = openForReading(path)
  if (fd === null) return
  try {
    let pos = Math.min(tailOf(fd).bytes, limit)
    // The bytes not yet given out: they start inside a line whose beginning is further back.
    let pending: Buffer = Buffer.alloc(0)
    while (pos > 0) {
      const start = Math.max(0, pos - CHUNK_BYTES)
      const chunk = Buffer.allocUnsafe(pos - start)
      for (let filled = 0; filled < chunk.length; ) {
        const bytes = await readChunk(fd, chunk.subarray(filled), start + filled)
        if (bytes === 0) throw new Error(`${path} is shorter than its durable lines`)
        filled += bytes
      }
      const data = pending.length > 0 ? Buffer.concat([chunk, pending]) : chunk
      // data ends with a newline: the end of the next line to give out.
      let lineEnd = data.length
      for (;;) {
        const newline = lineEnd < 2 ? -1 : data.lastIndexOf(0x0a, lineEnd - 2)
        if (newline < 0) break
        yield data.subarray(newline + 1, lineEnd - 1).toString('utf8')
        lineEnd = newline + 1
      }
      pending = data.subarray(0, lineEnd)
      pos = start
    }
    // The file's first line.
    if (pending.length > 0) yield pending.subarray(0, pending.length - 1).toString('utf8')
  } finally {
    closeSync(fd)
  }
}

/**
 * The complete lines of a log file, oldest first, as a stream read a chunk at a time when the
 * reader asks for more: an export of a long log holds a chunk in memory, not the log, and the
 * server answers other requests between chunks. Ends where readAuditLines would (a torn last line
 * and anything after a zero byte are left out), or at `limit` bytes. `keep` leaves lines out. The
 * file is opened at once, so a compaction that replaces it meanwhile does not change what is given.
 */
export function streamAuditLines(path: string, limit = Infinity, keep?: (line: string) => boolean): ReadableStream<Uint8Array> {
  const fd = openForReading(path)
  if (fd === null) return new ReadableStream({ start: (controller) => controller.close() })
  let open = true
  const close = () => {
    if (open) closeSync(fd)
    open = false
  }
  let pos = 0
  let end: number
  try {
    end = Math.min(limit, fstatSync(fd).size)
  } catch (error) {
    close()
    throw error
  }
  // The start of a line whose end is in a later chunk.
  let pending: Buffer = Buffer.alloc(0)
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          while (pos < end) {
            // The chunk is read in after the pending bytes: one buffer for both.
            const buffer = Buffer.allocUnsafe(pending.length + Math.min(CHUNK_BYTES, end - pos))
            pending.copy(buffer)
            // In the thread pool: other requests are answered between chunks.
            const bytes = await readChunk(fd, buffer.subarray(pending.length), pos)
            // Shorter than it was at open: what is missing was never a durable line.
            if (bytes === 0) break
            const zero = buffer.subarray(pending.length, pending.length + bytes).indexOf(0)
            const data = buffer.subarray(0, pending.length + (zero < 0 ? bytes : zero))
            pos = zero < 0 ? pos + bytes : end
            const newline = data.lastIndexOf(0x0a)
            pending = data.subarray(newline + 1)
            if (newline < 0) continue
            const whole = data.subarray(0, newline + 1)
            const out = keep ? Buffer.from(joinAuditLines(whole.toString('utf8').slice(0, -1).split('\n').filter(keep))) : whole
            if (out.length > 0) {
              controller.enqueue(out)
              return
            }
          }
          close()
          controller.close()
        } catch (error) {
          close()
          controller.error(error)
        }
      },
      cancel: close,
    },
    { highWaterMark: 0 },
  )
}

/** Reads into `into` from `at` in the thread pool; resolves with the bytes read. */
function readChunk(fd: number, into: Buffer, at: number): Promise<number> {
  return new Promise((resolve, reject) => readInPool(fd, into, 0, into.length, at, (error, bytes) => (error ? reject(error) : resolve(bytes))))
}

/** The first line of a log file (null: none whole), without reading the rest. */
export function readFirstAuditLine(path: string): string | null {
  const fd = openForReading(path)
  if (fd === null) return null
  try {
    const size = fstatSync(fd).size
    for (let chunk = CHUNK_BYTES; ; chunk *= 4) {
      const head = readAt(fd, 0, Math.min(size, chunk))
      const zero = head.indexOf(0)
      const newline = head.indexOf(0x0a)
      if (newline >= 0 && (zero < 0 || newline < zero)) return head.subarray(0, newline).toString('utf8')
      if (head.length === size || zero >= 0) return null
    }
  } finally {
    closeSync(fd)
  }
}

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
  static open<E>(path: string, headOf: (lastLine: string | null) => string, seal: (event: E, prev: string) => SealedLine, dataSync: DataSync = fdatasync): AuditLogFile<E> {
    const fd = openForReading(path)
    if (fd === null) return new AuditLogFile(path, 0, headOf(null), seal, false, dataSync)
    let tail: ReturnType<typeof tailOf>
    try {
      tail = tailOf(fd)
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

/** Where the first line `keep` accepts starts (the end, when none does), and the line before it. */
function firstKept(fd: number, limit: number, keep: (line: string) => boolean): { offset: number; lastDropped: string | null } {
  let lastDropped: string | null = null
  let pos = 0
  let pending: Buffer = Buffer.alloc(0)
  while (pos < limit) {
    const chunk = readAt(fd, pos, Math.min(CHUNK_BYTES, limit - pos))
    const data = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk
    const dataStart = pos - pending.length
    let lineStart = 0
    for (let newline = data.indexOf(0x0a); newline >= 0; newline = data.indexOf(0x0a, lineStart)) {
      const line = data.subarray(lineStart, newline).toString('utf8')
      if (keep(line)) return { offset: dataStart + lineStart, lastDropped }
      lastDropped = line
      lineStart = newline + 1
    }
    pending = data.subarray(lineStart)
    pos += chunk.length
  }
  return { offset: pos - pending.length, lastDropped }
}

function countLines(bytes: Buffer): number {
  let count = 0
  for (let at = bytes.indexOf(0x0a); at >= 0; at = bytes.indexOf(0x0a, at + 1)) count++
  return count
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

export function readJsonFile<T>(path: string): T | null {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
}

/**
 * The server's quick check of a log it opens again (issue 29): the line that ends at `offset` (the
 * anchor's `bytes`; null when none ends there or the file is shorter) and how many whole lines
 * follow it, read from `offset` on only. null: no file.
 */
export function readAuditLineEndingAt(path: string, offset: number): { line: string | null; after: number } | null {
  const fd = openForReading(path)
  if (fd === null) return null
  try {
    const size = fstatSync(fd).size
    if (offset > size || (offset > 0 && readAt(fd, offset - 1, 1)[0] !== 0x0a)) return { line: null, after: 0 }
    let line: string | null = null
    for (let chunk = CHUNK_BYTES; offset > 0; chunk *= 4) {
      const start = Math.max(0, offset - 1 - chunk)
      const bytes = readAt(fd, start, offset - 1 - start)
      const newline = bytes.lastIndexOf(0x0a)
      if (newline >= 0 || start === 0) {
        line = bytes.subarray(newline + 1).toString('utf8')
        break
      }
    }
    const rest = readAt(fd, offset, size - offset)
    const zero = rest.indexOf(0)
    return { line, after: countLines(zero < 0 ? rest : rest.subarray(0, zero)) }
  } finally {
    closeSync(fd)
  }
}

/** A log on disk and where its chain starts (null: nothing recorded), for the verifier. */
export interface StoredAuditChain {
  /** Relative to the data folder. */
  file: string
  lines: string[]
  /** Bytes after the last whole line: a line cut short (or a crash's debris). */
  torn: number
  /** The log file does not exist (its anchor may say it had lines). */
  missing: boolean
  anchor: { start: string; checkpoint: string | null; head?: string | null; lines?: number; bytes?: number; keyedSince?: string | null } | null
}

/** A log file as the verifier reads it: its whole lines, and what follows the last one. */
export function readAuditLog(path: string): { lines: string[]; bytes: number; torn: number; missing: boolean } {
  let all: Buffer
  try {
    all = readFileSync(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { lines: [], bytes: 0, torn: 0, missing: true }
    throw error
  }
  const zero = all.indexOf(0)
  const end = zero < 0 ? all.length : zero
  const whole = end === 0 ? 0 : all.lastIndexOf(0x0a, end - 1) + 1
  const text = all.subarray(0, whole).toString('utf8')
  return { lines: text === '' ? [] : text.slice(0, -1).split('\n'), bytes: whole, torn: end - whole, missing: false }
}

/**
 * Every audit log of a data folder with its chain's anchor: the server's `audit.log` (anchor in
 * `audit.chain.json`) and each `vaults/<user>.audit.log` (anchor in the vault document, its change
 * log applied), and every vault whose anchor names a log, whether its file is there or not.
 * Read-only; safe beside a running server.
 */
export function readAuditChains(dataDir: string, readVault: (path: string) => string | null): StoredAuditChain[] {
  const chains: StoredAuditChain[] = []
  const server = join(dataDir, SERVER_AUDIT_LOG)
  if (existsSync(server) || existsSync(join(dataDir, SERVER_AUDIT_ANCHOR))) {
    chains.push({ file: SERVER_AUDIT_LOG, ...readAuditLog(server), anchor: readJsonFile(join(dataDir, SERVER_AUDIT_ANCHOR)) })
  }
  const vaults = join(dataDir, 'vaults')
  const names = existsSync(vaults) ? readdirSync(vaults) : []
  const ids = new Set<string>()
  for (const name of names) {
    const match = /^([0-9a-f-]{36})(\.audit\.log|\.json)$/.exec(name)
    if (match) ids.add(match[1])
  }
  for (const id of [...ids].sort()) {
    const text = existsSync(join(vaults, `${id}.json`)) ? readVault(join(vaults, `${id}.json`)) : null
    const anchor = text === null ? null : ((JSON.parse(text) as { auditChain?: StoredAuditChain['anchor'] }).auditChain ?? null)
    const log = readAuditLog(join(vaults, `${id}.audit.log`))
    // A vault that never had a log (no anchor, no file) is not a chain.
    if (log.missing && !anchor) continue
    chains.push({ file: `vaults/${id}.audit.log`, ...log, anchor })
  }
  return chains
}
