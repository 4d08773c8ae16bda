// An append-only audit log file (JSON Lines). Events queued in one turn of the event loop share
// one write and one fdatasync (group commit), and each caller's promise resolves only once its
// line is on disk. What a line holds, and the hash chain, is the caller's business (`seal`): the
// writer seals the queued events in order at write time, from the hash of the last durable line,
// so that a failed write leaves nothing for later lines to chain from.
//
// A crash in the middle of an append leaves a last line without its newline (never acknowledged):
// it is cut off at open. Lines are never changed in place; compaction replaces the whole file.
import { closeSync, constants, existsSync, fdatasyncSync, fsyncSync, ftruncateSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
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

export class AuditLogFile<E> {
  private queue: Pending<E>[] = []
  private fd: number | null = null
  private scheduled = false
  private paused = false
  /** A write failed and its bytes could not be cut: the next write cuts them first. */
  private dirty = false

  private constructor(
    readonly path: string,
    /** Length of the durable lines: where the next line goes. */
    private bytes: number,
    /** Hash of the last durable line (or the chain's start). */
    private head: string,
    private readonly seal: (event: E, prev: string) => SealedLine,
    private exists: boolean,
  ) {}

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

  /** The hash of the last durable line (or the chain's start). */
  get durableHead(): string {
    return this.head
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
    while (this.queue.length > 0 && !this.paused) await new Promise((resolve) => setImmediate(resolve))
  }

  /**
   * Writes every event queued in this turn of the event loop as one write and one fdatasync, on
   * the main thread: under load, two trips through the thread pool (write, then sync) cost more
   * than the sync itself, and everything queued meanwhile waits for the next batch anyway.
   */
  private flush(): void {
    this.scheduled = false
    if (this.paused || this.queue.length === 0) return
    const batch = this.queue
    this.queue = []
    let head = this.head
    const texts: string[] = []
    for (const pending of batch) {
      const sealed = this.seal(pending.event, head)
      texts.push(sealed.text)
      head = sealed.hash
    }
    const bytes = Buffer.from(`${texts.join('\n')}\n`)
    try {
      this.fd ??= openSync(this.path, constants.O_WRONLY | constants.O_CREAT, 0o600)
      if (this.dirty) {
        ftruncateSync(this.fd, this.bytes)
        this.dirty = false
      }
      let written = 0
      while (written < bytes.length) written += writeSync(this.fd, bytes, written, bytes.length - written, this.bytes + written)
      fdatasyncSync(this.fd)
      // A new file is durable only once its folder entry is.
      if (!this.exists) {
        fsyncDirSync(dirname(this.path))
        this.exists = true
      }
    } catch (error) {
      // Cut what the failed write left (a reader sees no unacknowledged line); if even that
      // fails, the next write cuts it first.
      this.dirty = true
      try {
        if (this.fd !== null) {
          ftruncateSync(this.fd, this.bytes)
          this.dirty = false
        }
      } catch {}
      this.closeFd()
      for (const pending of batch) pending.reject(error)
      return
    }
    this.bytes += bytes.length
    this.head = head
    for (const pending of batch) pending.resolve()
  }

  private closeFd(): void {
    if (this.fd === null) return
    try {
      closeSync(this.fd)
    } catch {}
    this.fd = null
  }

  /** Replaces the file with these lines (compaction); appends wait meanwhile. */
  async replace(lines: string[], head: string): Promise<void> {
    this.flush()
    this.paused = true
    try {
      this.closeFd()
      const text = lines.length > 0 ? `${lines.join('\n')}\n` : ''
      await writeFileAtomic(this.path, text)
      this.bytes = Buffer.byteLength(text)
      this.head = head
      this.exists = true
      this.dirty = false
    } finally {
      this.paused = false
      if (this.queue.length > 0) this.flush()
    }
  }

  async close(): Promise<void> {
    this.flush()
    this.closeFd()
  }
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

/** A log on disk and where its chain starts (null: nothing recorded), for the verifier. */
export interface StoredAuditChain {
  /** Relative to the data folder. */
  file: string
  lines: string[]
  anchor: { start: string; checkpoint: string | null; head?: string | null } | null
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
