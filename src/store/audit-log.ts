// An append-only audit log file (JSON Lines): events queued while a write is under way share the
// next write and its fdatasync (group commit), and each caller's promise resolves only once its
// line is on disk. What a line holds, and the hash chain, is the caller's business (`seal`): the
// writer seals the queued events in order at write time, from the hash of the last durable line,
// so that a failed write leaves nothing for later lines to chain from.
//
// A crash in the middle of an append leaves a last line without its newline (never acknowledged):
// it is cut off at open. Lines are never changed in place; compaction replaces the whole file.
import { closeSync, existsSync, fsyncSync, ftruncateSync, openSync, readdirSync, readFileSync } from 'node:fs'
import { constants, open, type FileHandle } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fsyncDir, writeFileAtomic } from './atomic-file'

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

/** The complete lines of a log file (a torn last line left out), and their length in bytes. */
export function readAuditLines(path: string): { lines: string[]; bytes: number } {
  let bytes: Buffer
  try {
    bytes = readFileSync(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { lines: [], bytes: 0 }
    throw error
  }
  const end = bytes.lastIndexOf(0x0a) + 1
  const text = bytes.subarray(0, end).toString('utf8')
  return { lines: text === '' ? [] : text.slice(0, -1).split('\n'), bytes: end }
}

/**
 * Batches written at once, each with its own sync: the disk's sync latency (1 to 3 ms here) then
 * bounds each batch's wait, not the throughput, and concurrent syncs share the file system's
 * journal commits.
 */
const MAX_BATCHES_IN_FLIGHT = 4

interface Batch<E> {
  pendings: Pending<E>[]
  offset: number
  length: number
  head: string
  /** True once this batch and every batch before it are durable. */
  done: Promise<boolean>
  error?: unknown
}

export class AuditLogFile<E> {
  private queue: Pending<E>[] = []
  /** Batches written or being written, oldest first. */
  private inFlight: Batch<E>[] = []
  private handle: Promise<FileHandle> | null = null
  /** Where the next batch goes and what it chains from (past the batches in flight). */
  private nextOffset: number
  private nextHead: string
  /** A batch failed: no new batch starts until every one in flight has settled. */
  private failing = false
  private paused = false
  private gathering = false

  private constructor(
    readonly path: string,
    /** Length of the durable lines. */
    private bytes: number,
    /** Hash of the last durable line (or the chain's start). */
    private head: string,
    private readonly seal: (event: E, prev: string) => SealedLine,
    private exists: boolean,
  ) {
    this.nextOffset = bytes
    this.nextHead = head
  }

  /**
   * Opens a log whose last durable line hashes to `head` (the caller read and checked the lines
   * with readAuditLines); a torn last line is cut off.
   */
  static open<E>(path: string, head: string, seal: (event: E, prev: string) => SealedLine): AuditLogFile<E> {
    const { bytes } = readAuditLines(path)
    let exists = true
    try {
      const fd = openSync(path, 'r+')
      try {
        // A torn last line (a crash mid-append) was never acknowledged.
        ftruncateSync(fd, bytes)
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
      exists = false
    }
    return new AuditLogFile(path, bytes, head, seal, exists)
  }

  /** Resolves once the event's line (and every line before it) is durable; rejects when it could not be written. */
  append(event: E): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ event, resolve, reject })
      if (!this.gathering) {
        this.gathering = true
        // Requests answered in this turn of the event loop share the batch.
        setImmediate(() => {
          this.gathering = false
          this.pump()
        })
      }
    })
  }

  /** Waits for every queued line. */
  async settle(): Promise<void> {
    while (this.inFlight.length > 0 || this.queue.length > 0) await new Promise((resolve) => setTimeout(resolve, 1))
  }

  private pump(): void {
    while (this.queue.length > 0 && this.inFlight.length < MAX_BATCHES_IN_FLIGHT && !this.failing && !this.paused) this.startBatch()
  }

  private startBatch(): void {
    const pendings = this.queue
    this.queue = []
    let head = this.nextHead
    const texts: string[] = []
    for (const pending of pendings) {
      const sealed = this.seal(pending.event, head)
      texts.push(sealed.text)
      head = sealed.hash
    }
    const bytes = Buffer.from(`${texts.join('\n')}\n`)
    const previous = this.inFlight.at(-1)?.done ?? Promise.resolve(true)
    const batch: Batch<E> = { pendings, offset: this.nextOffset, length: bytes.length, head, done: previous }
    this.nextOffset += bytes.length
    this.nextHead = head
    this.inFlight.push(batch)
    const own = this.writeAt(bytes, batch.offset).then(
      () => true,
      (error) => {
        batch.error = error
        return false
      },
    )
    // A batch counts only once the ones before it are durable too (their syncs may end later).
    batch.done = Promise.all([previous, own]).then(([before, written]) => before && written)
    void batch.done.then((ok) => this.finish(batch, ok))
  }

  /** Runs for each batch in order (each `done` waits on the one before). */
  private finish(batch: Batch<E>, ok: boolean): void {
    this.inFlight.shift()
    if (ok) {
      this.bytes = batch.offset + batch.length
      this.head = batch.head
      for (const pending of batch.pendings) pending.resolve()
    } else {
      // This batch, or one before it, failed: later lines chain from lines that are not there.
      this.failing = true
      const error = batch.error ?? new Error('an earlier audit log write failed')
      for (const pending of batch.pendings) pending.reject(error)
      if (this.inFlight.length === 0) this.recover()
    }
    this.pump()
  }

  /**
   * After a failure, once nothing is in flight: cut what the failed writes left and go on from
   * the durable lines. No batch starts before the cut is done (it would cut the new lines too).
   */
  private recover(): void {
    const handle = this.handle
    this.handle = null
    void (async () => {
      try {
        const open = await handle
        await open?.truncate(this.bytes).catch(() => {})
        await open?.close()
      } catch {
        // The file could not even be opened: nothing to cut.
      }
      this.nextOffset = this.bytes
      this.nextHead = this.head
      // Should the cut have failed, the next write makes it first.
      this.cutBeforeNextWrite = true
      this.failing = false
      this.pump()
    })()
  }

  private cutBeforeNextWrite = false

  private async writeAt(bytes: Buffer, offset: number): Promise<void> {
    const fresh = this.handle === null
    const opening = (this.handle ??= open(this.path, constants.O_WRONLY | constants.O_CREAT, 0o600))
    const handle = await opening
    if (fresh && this.cutBeforeNextWrite) {
      this.cutBeforeNextWrite = false
      await handle.truncate(offset)
    }
    let written = 0
    while (written < bytes.length) {
      written += (await handle.write(bytes, written, bytes.length - written, offset + written)).bytesWritten
    }
    await handle.datasync()
    // A new file is durable only once its folder entry is.
    if (!this.exists) {
      await fsyncDir(dirname(this.path))
      this.exists = true
    }
  }

  /** Replaces the file with these lines (compaction); appends wait meanwhile. */
  async replace(lines: string[], head: string): Promise<void> {
    this.paused = true
    try {
      while (this.inFlight.length > 0) await new Promise((resolve) => setTimeout(resolve, 1))
      await this.closeHandle()
      const text = lines.length > 0 ? `${lines.join('\n')}\n` : ''
      await writeFileAtomic(this.path, text)
      this.bytes = this.nextOffset = Buffer.byteLength(text)
      this.head = this.nextHead = head
      this.exists = true
      this.cutBeforeNextWrite = false
    } finally {
      this.paused = false
      this.pump()
    }
  }

  private async closeHandle(): Promise<void> {
    const handle = this.handle
    this.handle = null
    await handle?.then((open) => open.close()).catch(() => {})
  }

  async close(): Promise<void> {
    await this.settle()
    await this.closeHandle()
  }
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

/** A log on disk and where its chain starts (null: nothing recorded), for the verifier. */
export interface StoredAuditChain {
  /** Relative to the data folder. */
  file: string
  lines: string[]
  anchor: { start: string; checkpoint: string | null } | null
}

/**
 * Every audit log of a data folder with its chain's anchor: the server's `audit.log` (anchor in
 * `audit.chain.json`) and each `vaults/<user>.audit.log` (anchor in the vault document, its change
 * log applied). Read-only; safe beside a running server.
 */
export function readAuditChains(dataDir: string, readVault: (path: string) => string | null): StoredAuditChain[] {
  const chains: StoredAuditChain[] = []
  const server = join(dataDir, 'audit.log')
  if (existsSync(server) || existsSync(join(dataDir, 'audit.chain.json'))) {
    chains.push({ file: 'audit.log', lines: readAuditLines(server).lines, anchor: readJsonFile(join(dataDir, 'audit.chain.json')) })
  }
  const vaults = join(dataDir, 'vaults')
  const names = existsSync(vaults) ? readdirSync(vaults) : []
  for (const name of names.filter((n) => /^[0-9a-f-]{36}\.audit\.log$/.test(n)).sort()) {
    const text = readVault(join(vaults, name.replace(/\.audit\.log$/, '.json')))
    const anchor = text === null ? null : ((JSON.parse(text) as { auditChain?: StoredAuditChain['anchor'] }).auditChain ?? null)
    chains.push({ file: `vaults/${name}`, lines: readAuditLines(join(vaults, name)).lines, anchor })
  }
  return chains
}
