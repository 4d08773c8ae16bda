// The change log beside a document file: each group commit's changes (changes.ts) appended as one
// line and fsynced, so a durable write costs what changed rather than the whole document.
//
// Line: "<CRC-32 of the JSON, 8 hex digits> <JSON list of changes>\n". A crash in the middle of
// an append leaves a last line that fails its checksum; that commit was never acknowledged (its
// fsync had not returned), so the line is dropped. A bad line with good lines after it is damage.
import { closeSync, existsSync, fsyncSync, ftruncateSync, openSync, readFileSync } from 'node:fs'
import { constants, open, unlink } from 'node:fs/promises'
import { dirname } from 'node:path'
import { fsyncDir, timedSync } from './atomic-file'
import type { Change } from './changes'
import { CorruptDocumentError } from './errors'

export interface LogContents {
  batches: Change[][]
  /** Length of the log's intact part. */
  bytes: number
}

const NEWLINE = 0x0a
const PREFIX = 9 // 8 hex digits and a space
const text = new TextDecoder()

const checksum = (bytes: Uint8Array) => Bun.hash.crc32(bytes).toString(16).padStart(8, '0')

function parseLine(line: Uint8Array): Change[] | null {
  if (line.length <= PREFIX || line[PREFIX - 1] !== 0x20) return null
  const json = line.subarray(PREFIX)
  if (text.decode(line.subarray(0, PREFIX - 1)) !== checksum(json)) return null
  try {
    const batch = JSON.parse(text.decode(json))
    return Array.isArray(batch) ? batch : null
  } catch {
    return null
  }
}

/** The commits in a log's bytes; a torn last line is left out of them and of `bytes`. */
export function parseLog(path: string, bytes: Uint8Array): LogContents {
  const batches: Change[][] = []
  let start = 0
  while (start < bytes.length) {
    const end = bytes.indexOf(NEWLINE, start)
    const batch = end < 0 ? null : parseLine(bytes.subarray(start, end))
    if (batch === null) {
      if (hasIntactLineAfter(bytes, end)) throw new CorruptDocumentError(`${path} is damaged at byte ${start}; restore the data folder from a backup`)
      break
    }
    batches.push(batch)
    start = end + 1
  }
  return { batches, bytes: start }
}

function hasIntactLineAfter(bytes: Uint8Array, from: number): boolean {
  let start = from
  while (start >= 0 && start < bytes.length) {
    const end = bytes.indexOf(NEWLINE, start + 1)
    if (end < 0) return false
    if (parseLine(bytes.subarray(start + 1, end)) !== null) return true
    start = end
  }
  return false
}

function encodeLine(changes: readonly Change[]): Buffer {
  const json = Buffer.from(JSON.stringify(changes))
  const line = Buffer.allocUnsafe(PREFIX + json.length + 1)
  line.write(`${checksum(json)} `, 0, 'latin1')
  json.copy(line, PREFIX)
  line[line.length - 1] = NEWLINE
  return line
}

function readOrEmpty(path: string): Buffer {
  try {
    return readFileSync(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0)
    throw error
  }
}

/** Reads a log (none yet is an empty one), up to `limit` bytes when given. */
export function readLogSync(path: string, limit?: number): LogContents {
  const bytes = readOrEmpty(path)
  return parseLog(path, limit === undefined ? bytes : bytes.subarray(0, limit))
}

export class ChangeLog {
  private constructor(
    readonly path: string,
    /** Length of the intact part: where the next line goes. */
    public bytes: number,
    private exists: boolean,
  ) {}

  /** Opens the log and its commits; a torn last line is cut off so the next line follows good ones. */
  static open(path: string): { log: ChangeLog; batches: Change[][] } {
    // Read synchronously, like the document beside it (document.ts).
    const bytes = readOrEmpty(path)
    const exists = bytes.length > 0 || existsSync(path)
    const contents = parseLog(path, bytes)
    if (contents.bytes < bytes.length) {
      const fd = openSync(path, 'r+')
      try {
        ftruncateSync(fd, contents.bytes)
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
    }
    return { log: new ChangeLog(path, contents.bytes, exists), batches: contents.batches }
  }

  /** Appends one commit's changes; resolves once they are on disk. */
  async append(changes: readonly Change[]): Promise<void> {
    const line = encodeLine(changes)
    const handle = await open(this.path, constants.O_WRONLY | constants.O_CREAT, 0o600)
    try {
      // At the intact length, not O_APPEND: whatever a failed append left behind is overwritten.
      let written = 0
      while (written < line.length) {
        written += (await handle.write(line, written, line.length - written, this.bytes + written)).bytesWritten
      }
      await timedSync(() => handle.datasync())
    } finally {
      await handle.close()
    }
    // A new file is durable only once its folder entry is.
    if (!this.exists) await fsyncDir(dirname(this.path))
    this.exists = true
    this.bytes += line.length
  }

  /**
   * Removes the log once the document file holds everything in it. Should the removal not reach
   * disk before a crash, the log is replayed over a document that already holds it: harmless.
   */
  async clear(): Promise<void> {
    if (!this.exists) return
    await unlink(this.path).catch((error) => {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    })
    this.exists = false
    this.bytes = 0
  }
}
