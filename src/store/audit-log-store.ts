// Where audit logs are kept: the data folder's files (this file: today's AuditLogFile and its
// readers, unchanged) or PostgreSQL (postgres/audit-log.ts). The recorder (src/audit/recorder.ts)
// knows events, the chain and when to compact; a store knows where lines and anchors live, and
// that an append seals each line against the head it holds and is durable before it resolves.
// A log is named by a vault id, or null for the server's own log.
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import {
  AuditLogFile,
  deleteAuditLogFile,
  readAuditChains,
  readAuditLinesBackwards,
  readAuditLineEndingAt,
  readAuditLog,
  readFirstAuditLine,
  readJsonFile,
  SERVER_AUDIT_ANCHOR,
  SERVER_AUDIT_LOG,
  streamAuditLines,
  writeJsonFile,
  type DataSync,
  type SealedLine,
  type StoredAuditChain,
} from './audit-log'
import { readLoggedDocumentSync } from './document'
import { VAULT_LISTS } from './records'
import { VAULTS_DIR } from './store'

/** What a chain starts from and a line known to be in it (src/audit/chain.ts, ChainAnchor). */
export type AuditAnchor = NonNullable<StoredAuditChain['anchor']>

/** A log as the verifier reads it: its whole lines, what follows the last one, whether it exists. */
export interface AuditLogReadout {
  lines: string[]
  bytes: number
  torn: number
  missing: boolean
}

/** Where a vault's anchor is kept when the store keeps none of its own (the file store: the vault document's `auditChain`). */
export interface AnchorHolder {
  read(): AuditAnchor | undefined
  write(anchor: AuditAnchor): Promise<void>
}

/** An open log: its anchor and readers at once; appends, its durable head and compaction after `begin`. */
export interface AuditLog<E> {
  /** How messages name it (the file's path; on a database, the name audit-verify prints). */
  readonly name: string
  /** Takes the log up for appends, after the check at open (a file: a torn last line is cut off then). */
  begin(): Promise<void>
  /** The hash of the last durable line this instance knows (or the chain's start). */
  readonly durableHead: string
  /** Whole lines from the start (or checkpoint) up to the durable head. */
  durableLines: number
  /** How far readers may read (file: bytes of the durable lines; a batch still syncing is not shown). */
  readonly durableBytes: number
  /** The durable head and line count as the store holds them now (other instances may have appended). */
  current(): Promise<{ head: string; lines: number }>
  /** Resolves once the event's line is durable, sealed against the head the store holds; rejects when it could not be written. */
  append(event: E): Promise<void>
  settle(): Promise<void>
  close(): Promise<void>
  /** The anchor as last read or written. */
  anchor(): AuditAnchor
  /** Records the anchor (head, line count, keying time). */
  writeAnchor(anchor: AuditAnchor): Promise<void>
  /**
   * Compaction: drops the lines before the first one `keep` accepts; the anchor's checkpoint becomes
   * `checkpointOf(lastDropped)` (it throws to drop nothing). Appends wait meanwhile.
   */
  dropBefore(keep: (line: string) => boolean, checkpointOf: (lastDropped: string) => string): Promise<void>
  /** The whole log (the check at open). */
  read(): Promise<AuditLogReadout>
  /**
   * The quick check of a log opened again: the line where the anchor says its head is (null: none
   * there) and how many whole lines follow it; null: no log at all.
   */
  lineAtAnchor(anchor: AuditAnchor): Promise<{ line: string | null; after: number } | null>
  /** The first line (null: none), without reading the rest. */
  firstLine(): Promise<string | null>
}

export interface AuditLogStore {
  readonly kind: 'file' | 'postgres'
  /** The name of a log in messages and in audit-verify's output. */
  nameOf(id: string | null): string
  /**
   * Opens a log, creating its anchor (a random start) when it has none. `headOf`: what the next
   * line chains from given the last whole line (a file's tail) and the anchor; `seal`: an event's
   * line chained from `prev`. `holder`: a vault's anchor in its document, where the store keeps none itself.
   */
  open<E>(id: string | null, options: AuditLogOpenOptions<E>): Promise<AuditLog<E>>
  /** The lines newest first, reading no further than `limit` (the durable bytes of an open file). */
  linesBackwards(id: string, limit: number): AsyncGenerator<string>
  /** The lines oldest first as the client reads them (JSON Lines), `keep` leaving lines out. */
  stream(id: string, limit: number, keep?: (line: string) => boolean): ReadableStream<Uint8Array>
  /** The server's anchor (its keying time), null when there is none yet. */
  serverAnchor(): Promise<AuditAnchor | null>
  /** Records the server's anchor (only a log not open yet; an open one goes through its AuditLog). */
  writeServerAnchor(anchor: AuditAnchor): Promise<void>
  /** Deletes a vault's log for good (its anchor goes with the vault). */
  delete(id: string): Promise<void>
  /** Every log with its anchor, for the verifier (names as nameOf gives them). */
  chains(): Promise<StoredAuditChain[]>
}

export interface AuditLogOpenOptions<E> {
  headOf: (lastLine: string | null, anchor: AuditAnchor) => string
  seal: (event: E, prev: string) => SealedLine
  holder?: AnchorHolder
}

const USER_ID = /^[0-9a-f-]{36}$/

export function checkLogId(id: string | null): void {
  if (id !== null && !USER_ID.test(id)) throw new Error('invalid user id')
}

/** A new chain's anchor: a random start value. */
export function newAnchor(): AuditAnchor {
  return { start: randomBytes(32).toString('hex'), checkpoint: null, head: null, lines: 0, bytes: 0 }
}

/** The logs as files in the data folder: `vaults/<user>.audit.log`, the server's `audit.log` (anchor: audit.chain.json). */
export class FileAuditLogStore implements AuditLogStore {
  readonly kind = 'file'

  constructor(
    private readonly dataDir: string,
    private readonly dataSync?: DataSync,
  ) {}

  /** The path of a log's file. */
  nameOf(id: string | null): string {
    checkLogId(id)
    return id === null ? join(this.dataDir, SERVER_AUDIT_LOG) : join(this.dataDir, VAULTS_DIR, `${id}.audit.log`)
  }

  async open<E>(id: string | null, options: AuditLogOpenOptions<E>): Promise<AuditLog<E>> {
    const path = this.nameOf(id)
    let holder = options.holder
    if (id === null) {
      const anchorPath = join(this.dataDir, SERVER_AUDIT_ANCHOR)
      let current = readJsonFile<AuditAnchor>(anchorPath)
      if (!current) {
        current = newAnchor()
        await writeJsonFile(anchorPath, current)
      }
      holder = {
        read: () => current!,
        write: async (next) => {
          await writeJsonFile(anchorPath, next)
          current = next
        },
      }
    }
    if (!holder) throw new Error("a vault's audit log needs its vault's anchor")
    if (!holder.read()) await holder.write(newAnchor())
    const anchors = holder
    return new FileAuditLog(path, holder, () => AuditLogFile.open<E>(path, (last) => options.headOf(last, anchors.read()!), options.seal, this.dataSync))
  }

  linesBackwards(id: string, limit: number): AsyncGenerator<string> {
    return readAuditLinesBackwards(this.nameOf(id), limit)
  }

  stream(id: string, limit: number, keep?: (line: string) => boolean): ReadableStream<Uint8Array> {
    return streamAuditLines(this.nameOf(id), limit, keep)
  }

  async serverAnchor(): Promise<AuditAnchor | null> {
    return readJsonFile<AuditAnchor>(join(this.dataDir, SERVER_AUDIT_ANCHOR))
  }

  async writeServerAnchor(anchor: AuditAnchor): Promise<void> {
    await writeJsonFile(join(this.dataDir, SERVER_AUDIT_ANCHOR), anchor)
  }

  async delete(id: string): Promise<void> {
    deleteAuditLogFile(this.nameOf(id))
  }

  async chains(): Promise<StoredAuditChain[]> {
    if (!existsSync(this.dataDir)) return []
    return readAuditChains(this.dataDir, (path) => readLoggedDocumentSync(path, VAULT_LISTS))
  }
}

class FileAuditLog<E> implements AuditLog<E> {
  private opened: AuditLogFile<E> | null = null

  constructor(
    readonly name: string,
    private readonly holder: AnchorHolder,
    private readonly openFile: () => AuditLogFile<E>,
  ) {}

  async begin(): Promise<void> {
    this.opened ??= this.openFile()
  }

  private get file(): AuditLogFile<E> {
    if (!this.opened) throw new Error('the audit log is not taken up yet (begin)')
    return this.opened
  }
  get durableHead(): string {
    return this.file.durableHead
  }
  get durableLines(): number {
    return this.file.durableLines
  }
  set durableLines(lines: number) {
    this.file.durableLines = lines
  }
  get durableBytes(): number {
    return this.file.durableBytes
  }
  async current(): Promise<{ head: string; lines: number }> {
    return { head: this.file.durableHead, lines: this.file.durableLines }
  }
  append(event: E): Promise<void> {
    return this.file.append(event)
  }
  settle(): Promise<void> {
    return this.file.settle()
  }
  close(): Promise<void> {
    return this.file.close()
  }
  anchor(): AuditAnchor {
    return this.holder.read()!
  }
  writeAnchor(anchor: AuditAnchor): Promise<void> {
    return this.holder.write(anchor)
  }

  dropBefore(keep: (line: string) => boolean, checkpointOf: (lastDropped: string) => string): Promise<void> {
    // The checkpoint is recorded first: should the rewrite not happen, the verifier finds the
    // checkpoint inside the old file and checks the chain from there.
    return this.file.dropBefore(keep, (lastDropped, kept) => {
      const checkpoint = checkpointOf(lastDropped)
      const head = this.file.durableHead
      return this.holder.write({ ...this.anchor(), checkpoint, head: kept.lines > 0 ? head : checkpoint, lines: kept.lines, bytes: kept.bytes })
    })
  }

  async read(): Promise<AuditLogReadout> {
    return readAuditLog(this.name)
  }
  async lineAtAnchor(anchor: AuditAnchor): Promise<{ line: string | null; after: number } | null> {
    return readAuditLineEndingAt(this.name, anchor.bytes ?? 0)
  }
  async firstLine(): Promise<string | null> {
    return readFirstAuditLine(this.name)
  }
}
