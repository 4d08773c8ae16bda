// Reading audit log files (JSON Lines; the writer is audit-log.ts). Every reader stands on one rule
// and one scanner:
// - the crash-debris rule (`completeLines`): a crash in the middle of an append leaves a last line
//   without its newline (never acknowledged) or, on filesystems that extend a file before its data
//   lands, zero bytes; the complete lines end at the last newline before the first zero byte;
// - the scanner (`scan`): the complete lines between two offsets, as blocks of whole lines, a chunk
//   at a time, oldest first or newest first. It does no I/O itself: it asks for reads, answered
//   synchronously (`scanSync`) or in the thread pool (`scanAsync`), so the server goes on answering
//   while a long log is read.
import { closeSync, existsSync, fstatSync, openSync, read as readInPool, readdirSync, readFileSync, readSync } from 'node:fs'
import { join } from 'node:path'

/** The server's own log (failed sign-ins of unknown e-mails) and its chain's anchor, in the data folder. */
export const SERVER_AUDIT_LOG = 'audit.log'
export const SERVER_AUDIT_ANCHOR = 'audit.chain.json'

/** Lines as a log file holds them: each followed by a newline. */
export function joinAuditLines(lines: string[]): string {
  return lines.length > 0 ? `${lines.join('\n')}\n` : ''
}

/** How much of a log the partial reads take at a time (growing when a line is longer). */
const CHUNK_BYTES = 64 * 1024

/**
 * The crash-debris rule, the only place it is written: of `bytes`, what comes before the first zero
 * byte (`cut`), and of that, the complete lines (`whole`: the length up to the last newline).
 */
function completeLines(bytes: Buffer): { whole: number; cut: number } {
  const zero = bytes.indexOf(0)
  const cut = zero < 0 ? bytes.length : zero
  return { whole: cut === 0 ? 0 : bytes.lastIndexOf(0x0a, cut - 1) + 1, cut }
}

/** Complete lines, each with its newline, and where they start in the file. */
interface Block {
  bytes: Buffer
  at: number
}

/** A read the scanner asks for: fill `into` from `at`; answered with the bytes read (fewer: the file ends there). */
interface ReadRequest {
  into: Buffer
  at: number
}

/**
 * The scanner: the complete lines between `from` (a line's start) and `to`. Forwards, the debris
 * rule ends them (and a file shorter than `to`). Backwards, `to` must be where complete lines end
 * (`completeEnd`), and each block's lines come oldest first, the blocks newest first.
 */
function* scan(from: number, to: number, backwards: boolean): Generator<ReadRequest | Block, void, number> {
  // Bytes read but not given out: part of a line whose other end is in the next chunk.
  let pending: Buffer = Buffer.alloc(0)
  if (!backwards) {
    for (let pos = from; pos < to; ) {
      const chunk = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, to - pos))
      const got: number = yield { into: chunk, at: pos }
      const data = pending.length > 0 ? Buffer.concat([pending, chunk.subarray(0, got)]) : chunk.subarray(0, got)
      const start = pos - pending.length
      const { whole, cut } = completeLines(data)
      if (whole > 0) yield { bytes: data.subarray(0, whole), at: start }
      if (cut < data.length || got < chunk.length) return
      pending = data.subarray(whole)
      pos += got
    }
    return
  }
  for (let pos = to; pos > from; ) {
    const start = Math.max(from, pos - CHUNK_BYTES)
    const chunk = Buffer.allocUnsafe(pos - start)
    const got: number = yield { into: chunk, at: start }
    if (got < chunk.length) throw new Error('an audit log was cut shorter while it was read')
    const data = pending.length > 0 ? Buffer.concat([chunk, pending]) : chunk
    // The lines after the chunk's first newline are whole (all of them at the start of the range).
    const first = start === from ? 0 : data.indexOf(0x0a) + 1
    if (first < data.length) yield { bytes: data.subarray(first), at: start + first }
    pending = data.subarray(0, first)
    pos = start
  }
}

function isBlock(step: ReadRequest | Block): step is Block {
  return 'bytes' in step
}

/** The scanner with its reads done on the main thread. */
function* scanSync(fd: number, from: number, to: number, backwards = false): Generator<Block> {
  const steps = scan(from, to, backwards)
  let got = 0
  for (let step = steps.next(); !step.done; step = steps.next(got)) {
    if (isBlock(step.value)) yield step.value
    else got = fill(step.value, (into, at) => readSync(fd, into, 0, into.length, at))
  }
}

/** The scanner with its reads done in the thread pool: other requests are answered between chunks. */
async function* scanAsync(fd: number, from: number, to: number, backwards = false): AsyncGenerator<Block> {
  const steps = scan(from, to, backwards)
  let got = 0
  for (let step = steps.next(); !step.done; step = steps.next(got)) {
    if (isBlock(step.value)) yield step.value
    else got = await fillAsync(fd, step.value)
  }
}

function fill({ into, at }: ReadRequest, read: (into: Buffer, at: number) => number): number {
  let filled = 0
  for (let bytes = -1; filled < into.length && bytes !== 0; filled += bytes) bytes = read(into.subarray(filled), at + filled)
  return filled
}

async function fillAsync(fd: number, { into, at }: ReadRequest): Promise<number> {
  let filled = 0
  for (let bytes = -1; filled < into.length && bytes !== 0; filled += bytes) {
    bytes = await new Promise<number>((resolve, reject) =>
      readInPool(fd, into.subarray(filled), 0, into.length - filled, at + filled, (error, n) => (error ? reject(error) : resolve(n))),
    )
  }
  return filled
}

/** `length` bytes of a file from `start`; a file cut shorter meanwhile is an error, not a wait. */
export function readAt(fd: number, start: number, length: number): Buffer {
  const bytes = Buffer.alloc(length)
  if (fill({ into: bytes, at: start }, (into, at) => readSync(fd, into, 0, into.length, at)) < length)
    throw new Error('an audit log was cut shorter while it was read')
  return bytes
}

/** A block's lines, without their newlines, oldest first. */
function linesOf(block: Buffer): string[] {
  return block.length === 0 ? [] : block.toString('utf8').slice(0, -1).split('\n')
}

/** A log file opened for reading; null when there is none. */
export function openForReading(path: string): number | null {
  try {
    return openSync(path, 'r')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
}

/** Runs `use` on a log file opened for reading; null when there is none. */
function withFile<T>(path: string, use: (fd: number) => T): T | null {
  const fd = openForReading(path)
  if (fd === null) return null
  try {
    return use(fd)
  } finally {
    closeSync(fd)
  }
}

/**
 * Where the complete lines of an open log end, read from the file's tail (a log opened again
 * after its vault was idle should not cost a read of the whole file); the tail read grows until it
 * holds a newline.
 */
export function completeEnd(fd: number): { bytes: number; size: number } {
  const size = fstatSync(fd).size
  for (let chunk = CHUNK_BYTES; ; chunk *= 4) {
    const start = Math.max(0, size - chunk)
    const { whole } = completeLines(readAt(fd, start, size - start))
    if (whole > 0 || start === 0) return { bytes: start + whole, size }
  }
}

/** The line that ends at `end` (where complete lines end), null when none does. */
export function lastLineBefore(fd: number, end: number): string | null {
  for (const block of scanSync(fd, 0, end, true)) return linesOf(block.bytes).at(-1) ?? null
  return null
}

/** The whole file: its complete lines as bytes (each with its newline) and where the debris starts. */
function readWhole(path: string, limit = Infinity): { bytes: Buffer; cut: number } | null {
  let all: Buffer
  try {
    all = readFileSync(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
  const { whole, cut } = completeLines(all.subarray(0, Math.min(limit, all.length)))
  return { bytes: all.subarray(0, whole), cut }
}

/**
 * The complete lines of a log file as bytes, each with its newline. `limit`: read no further than
 * this many bytes (the last durable line of a log being written).
 */
export function readAuditBytes(path: string, limit = Infinity): Buffer {
  return readWhole(path, limit)?.bytes ?? Buffer.alloc(0)
}

/** The complete lines of a log file (as readAuditBytes), and their length in bytes. */
export function readAuditLines(path: string, limit = Infinity): { lines: string[]; bytes: number } {
  const bytes = readAuditBytes(path, limit)
  return { lines: linesOf(bytes), bytes: bytes.length }
}

/** A log file as the verifier reads it: its whole lines, and what follows the last one before the debris. */
export function readAuditLog(path: string): { lines: string[]; bytes: number; torn: number; missing: boolean } {
  const read = readWhole(path)
  if (read === null) return { lines: [], bytes: 0, torn: 0, missing: true }
  return { lines: linesOf(read.bytes), bytes: read.bytes.length, torn: read.cut - read.bytes.length, missing: false }
}

/**
 * The complete lines of a log file, newest first, read backwards in chunks: a page of recent
 * events costs the same however long the log is. Ends where opening the log would cut it, or at
 * `limit` bytes (the last durable line of a log being written). The chunks are read in the thread
 * pool, so a search far back (a filter that matches little) lets the server answer others between.
 */
export async function* readAuditLinesBackwards(path: string, limit = Infinity): AsyncGenerator<string> {
  const fd = openForReading(path)
  if (fd === null) return
  try {
    for await (const block of scanAsync(fd, 0, Math.min(completeEnd(fd).bytes, limit), true)) yield* linesOf(block.bytes).reverse()
  } finally {
    closeSync(fd)
  }
}

/**
 * The complete lines of a log file, oldest first, as a stream read a chunk at a time when the
 * reader asks for more: an export of a long log holds a chunk in memory, not the log, and the
 * server answers other requests between chunks. Ends at `limit` bytes. `keep` leaves lines out.
 * The file is opened at once, so a compaction that replaces it meanwhile does not change what is given.
 */
export function streamAuditLines(path: string, limit = Infinity, keep?: (line: string) => boolean): ReadableStream<Uint8Array> {
  const fd = openForReading(path)
  if (fd === null) return new ReadableStream({ start: (controller) => controller.close() })
  let open = true
  const close = () => {
    if (open) closeSync(fd)
    open = false
  }
  let blocks: AsyncGenerator<Block>
  try {
    blocks = scanAsync(fd, 0, Math.min(limit, fstatSync(fd).size))
  } catch (error) {
    close()
    throw error
  }
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          for (let next = await blocks.next(); !next.done; next = await blocks.next()) {
            const out = keep ? Buffer.from(joinAuditLines(linesOf(next.value.bytes).filter(keep))) : next.value.bytes
            if (out.length > 0) return controller.enqueue(out)
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

/** The first line of a log file (null: none whole), without reading the rest. */
export function readFirstAuditLine(path: string): string | null {
  return (
    withFile(path, (fd) => {
      for (const block of scanSync(fd, 0, fstatSync(fd).size)) return linesOf(block.bytes)[0]
      return null
    }) ?? null
  )
}

/** Where the first line `keep` accepts starts (the end, when none does), and the line before it. */
export function firstKept(fd: number, limit: number, keep: (line: string) => boolean): { offset: number; lastDropped: string | null } {
  let lastDropped: string | null = null
  let offset = 0
  for (const { bytes, at } of scanSync(fd, 0, limit)) {
    for (let start = 0; start < bytes.length; ) {
      const newline = bytes.indexOf(0x0a, start)
      const line = bytes.subarray(start, newline).toString('utf8')
      if (keep(line)) return { offset: at + start, lastDropped }
      lastDropped = line
      start = newline + 1
    }
    offset = at + bytes.length
  }
  return { offset, lastDropped }
}

export function countLines(bytes: Buffer): number {
  let count = 0
  for (let at = bytes.indexOf(0x0a); at >= 0; at = bytes.indexOf(0x0a, at + 1)) count++
  return count
}

/**
 * The server's quick check of a log it opens again: the line that ends at `offset` (the
 * anchor's `bytes`; null when none ends there or the file is shorter) and how many whole lines
 * follow it, read from `offset` on only. null: no file.
 */
export function readAuditLineEndingAt(path: string, offset: number): { line: string | null; after: number } | null {
  return withFile(path, (fd) => {
    const size = fstatSync(fd).size
    if (offset > size || (offset > 0 && readAt(fd, offset - 1, 1)[0] !== 0x0a)) return { line: null, after: 0 }
    let after = 0
    for (const block of scanSync(fd, offset, size)) after += countLines(block.bytes)
    return { line: lastLineBefore(fd, offset), after }
  })
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

export function readJsonFile<T>(path: string): T | null {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
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
