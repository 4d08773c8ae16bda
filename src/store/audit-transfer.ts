// The audit logs' part of moving data between stores (backup, restore, migrate): the one place
// that knows where a store keeps them. In the bundle they are files like the file store's:
// `audit.log` with its anchor `audit.chain.json`, and `vaults/<id>.audit.log` (a vault's anchor
// is in its document, which moves with the documents).
//
// A folder keeps them as those files. A database keeps them in svc_audit_logs (a row per log: head,
// lines, bytes, anchor) and svc_audit_lines (postgres/audit-log.ts): they are read in the
// caller's transaction (the backup's REPEATABLE READ one, so the logs and the documents are one
// instant) and written in the restore's (with the documents: all or nothing). A log's file form
// is its lines joined by newlines with a trailing one (joinAuditLines), byte for byte.
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomic } from './atomic-file'
import { joinAuditLines, readAuditBytes, SERVER_AUDIT_ANCHOR, SERVER_AUDIT_LOG } from './audit-log'
import type { AuditAnchor } from './audit-log-store'
import { backupEntry, BackupError, ownerOf, type BackupFile } from './backup'
import { SERVER_LOG_ID, storedAnchor } from './postgres/audit-log'
import type { Sql } from './postgres/database'
import { VAULTS_DIR } from './store'

/** Where a store keeps its audit logs: a data folder's files, or a database (a transaction on it). */
export type AuditHome = { dataDir: string } | { sql: Sql }

const VAULT_AUDIT_LOG = /^[0-9a-f-]{36}\.audit\.log$/

/** The paths (bundle form) of every audit file in a home, the server's first. */
function auditPaths(home: { dataDir: string }): string[] {
  const paths: string[] = []
  // The anchor before its log.
  for (const name of [SERVER_AUDIT_ANCHOR, SERVER_AUDIT_LOG]) if (existsSync(join(home.dataDir, name))) paths.push(name)
  const vaults = join(home.dataDir, VAULTS_DIR)
  if (existsSync(vaults)) {
    for (const name of readdirSync(vaults).sort()) if (VAULT_AUDIT_LOG.test(name)) paths.push(`${VAULTS_DIR}/${name}`)
  }
  return paths
}

/** Where the server log's chain starts, as its anchor file says (start and checkpoint). */
function serverStart(home: { dataDir: string }): string {
  const path = join(home.dataDir, SERVER_AUDIT_ANCHOR)
  if (!existsSync(path)) return 'null'
  const anchor = JSON.parse(readFileSync(path, 'utf8')) as { start?: unknown; checkpoint?: unknown }
  return JSON.stringify({ start: anchor.start, checkpoint: anchor.checkpoint })
}

/**
 * Every audit log (and the server log's anchor) of a home, as bundle files. Each anchor is read
 * before its log (its head is then a line of the log read); the server's anchor is read again
 * after, and all read again should a compaction have moved where its chain starts. (A vault's
 * anchor is in its document, which the caller reads before and checks after.)
 */
function readAuditFiles(home: { dataDir: string }): BackupFile[] {
  for (let attempt = 0; attempt < 20; attempt++) {
    const before = serverStart(home)
    const files = auditPaths(home).map((path) => {
      const full = join(home.dataDir, path)
      // A log's whole lines only (a line being written is not one yet); the anchor as it is.
      return backupEntry(path, path === SERVER_AUDIT_ANCHOR ? readFileSync(full) : readAuditBytes(full))
    })
    if (serverStart(home) === before) return files
  }
  throw new BackupError(`the server audit log's anchor in ${home.dataDir} kept changing while it was read; try again`)
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

/** Throws when writing these files would overwrite an audit log (checked before anything is written). */
function assertAuditFilesFit(home: { dataDir: string }, files: readonly BackupFile[]): void {
  for (const file of files) {
    const path = join(home.dataDir, file.path)
    if (existsSync(path) && sha256(readFileSync(path)) !== file.sha256) {
      throw new BackupError(`${path} exists already and differs: an audit log is never overwritten (move it away first)`)
    }
  }
}

/**
 * Writes audit files into a folder. A file already there with the same bytes is left; one with
 * other bytes is an error: an audit log is never overwritten.
 */
async function writeAuditFiles(home: { dataDir: string }, files: readonly BackupFile[]): Promise<number> {
  let written = 0
  for (const file of files) {
    const path = join(home.dataDir, file.path)
    const bytes = Buffer.from(file.data, 'base64')
    if (existsSync(path)) {
      if (sha256(readFileSync(path)) === file.sha256) continue
      throw new BackupError(`${path} exists already and differs: an audit log is never overwritten (move it away first)`)
    }
    mkdirSync(join(home.dataDir, VAULTS_DIR), { recursive: true, mode: 0o700 })
    await writeFileAtomic(path, bytes, 0o600)
    written++
  }
  return written
}

/**
 * Every audit log (and the server log's anchor) of a home, as bundle files. A folder's: each
 * anchor is read before its log (its head is then a line of the log read); the server's anchor is
 * read again after, and all read again should a compaction have moved where its chain starts. (A
 * vault's anchor is in its document, which the caller reads before and checks after.) A
 * database's: read in the caller's transaction, which holds the documents' read too.
 */
export async function readAuditLogsOf(home: AuditHome): Promise<BackupFile[]> {
  return 'dataDir' in home ? readAuditFiles(home) : readAuditRows(home.sql)
}

/** Throws when writing these files would overwrite an audit log, or they are no audit logs (checked before anything is written). */
export async function assertAuditLogsFit(home: AuditHome, files: readonly BackupFile[], bundle: readonly BackupFile[] = []): Promise<void> {
  if ('dataDir' in home) return assertAuditFilesFit(home, files)
  const present = await presentLogs(home.sql)
  for (const log of logsOf(files, bundle)) {
    for (const line of log.lines) hashOf(line, log.path)
    if (present.has(log.id)) await assertRowFits(home.sql, log)
  }
}

/**
 * Writes audit files into a home. A folder: a file already there with the same bytes is left; one
 * with other bytes is an error: an audit log is never overwritten. A database: the rows as the
 * database store keeps them, in the caller's transaction; `bundle` gives each vault log's anchor
 * (its document's `auditChain`).
 */
export async function writeAuditLogsTo(home: AuditHome, files: readonly BackupFile[], bundle: readonly BackupFile[] = []): Promise<number> {
  if ('dataDir' in home) return writeAuditFiles(home, files)
  const sql = home.sql
  const logs = logsOf(files, bundle)
  const present = await presentLogs(sql)
  const fresh: LogToWrite[] = []
  for (const log of logs) {
    // One already there: left when it holds these very lines, refused otherwise.
    if (present.has(log.id)) await assertRowFits(sql, log)
    else fresh.push(log)
  }
  await insertRows(sql, fresh)
  return fresh.length
}

/**
 * The server anchor's file form, as the file store writes it: where the chain starts and when
 * keying began, and once the log has lines (the log itself writing it) its head, lines and bytes.
 */
function anchorFile(anchor: AuditAnchor): Buffer {
  const { start, checkpoint, head, lines, bytes, keyedSince } = anchor
  const keyed = keyedSince ? { keyedSince } : {}
  const form = (lines ?? 0) > 0 ? { start, checkpoint: checkpoint ?? null, head, lines, bytes, ...keyed } : { start, checkpoint: checkpoint ?? null, ...keyed }
  return Buffer.from(JSON.stringify(form))
}

async function readAuditRows(sql: Sql): Promise<BackupFile[]> {
  const rows: { log_id: string; head: string; lines: string | number; bytes: string | number; anchor: string }[] =
    await sql`SELECT log_id, head, lines, bytes, anchor::text AS anchor FROM svc_audit_logs ORDER BY log_id`
  // Every line in one query (not one per log: thousands of vaults), grouped by log.
  const all: { log_id: string; line: string }[] = await sql`SELECT log_id, line FROM svc_audit_lines ORDER BY log_id, seq`
  const linesOf = new Map<string, string[]>()
  for (const { log_id: id, line } of all) {
    const lines = linesOf.get(id)
    if (lines) lines.push(line)
    else linesOf.set(id, [line])
  }
  const files: BackupFile[] = []
  for (const row of rows) {
    const text = Buffer.from(joinAuditLines(linesOf.get(row.log_id) ?? []))
    if (row.log_id === SERVER_LOG_ID) {
      const stored = JSON.parse(row.anchor) as AuditAnchor
      const anchor = { ...stored, head: row.head, lines: Number(row.lines), bytes: Number(row.bytes) }
      // The server's first, its anchor before its log (as a folder's bundle has them). A log with
      // no line is no file (a folder has none before its first line), its anchor still is.
      files.unshift(backupEntry(SERVER_AUDIT_ANCHOR, anchorFile(anchor)), ...(text.length > 0 ? [backupEntry(SERVER_AUDIT_LOG, text)] : []))
    } else if (text.length > 0) files.push(backupEntry(`${VAULTS_DIR}/${row.log_id}.audit.log`, text))
  }
  // The server's two files first, then the vaults' in id order.
  return files
}

interface LogToWrite {
  path: string
  id: string
  lines: string[]
  anchor: AuditAnchor
}

/** A line's last 75 characters: `,"hash":"<64 hex>"}` (only those are matched: linear in nothing). */
const HASH_AT_END = /^,"hash":"([0-9a-f]{64})"\}$/

/** The hash the next line chains from, after `line` (its own `hash` field, the last one). */
function hashOf(line: string, path: string): string {
  const found = HASH_AT_END.exec(line.slice(-75))
  if (!found) throw new BackupError(`${path} holds a line that is not an audit event; nothing was restored`)
  return found[1]
}

/** The bundle's logs as the database holds them: lines, and each one's anchor. */
function logsOf(files: readonly BackupFile[], bundle: readonly BackupFile[]): LogToWrite[] {
  const byPath = new Map([...bundle, ...files].map((file) => [file.path, file]))
  const json = (path: string) => {
    const file = byPath.get(path)
    return file ? (JSON.parse(Buffer.from(file.data, 'base64').toString('utf8')) as unknown) : undefined
  }
  const logs: LogToWrite[] = []
  for (const file of files) {
    if (file.path === SERVER_AUDIT_ANCHOR) continue
    const isServer = file.path === SERVER_AUDIT_LOG
    if (!isServer && !VAULT_LOG_PATH.test(file.path)) throw new BackupError(`${file.path} is not an audit log; nothing was restored`)
    const text = Buffer.from(file.data, 'base64').toString('utf8')
    if (text.length > 0 && !text.endsWith('\n')) throw new BackupError(`${file.path} does not end with a whole line; nothing was restored`)
    const lines = text.length > 0 ? text.slice(0, -1).split('\n') : []
    const id = isServer ? SERVER_LOG_ID : ownerOf(file.path)
    const recorded = (isServer ? json(SERVER_AUDIT_ANCHOR) : (json(`${VAULTS_DIR}/${id}.json`) as { auditChain?: unknown } | undefined)?.auditChain) as
      | AuditAnchor
      | undefined
    if (!recorded || typeof recorded.start !== 'string') throw new BackupError(`${file.path} has no anchor (where its chain starts); nothing was restored`)
    logs.push({ path: file.path, id, lines, anchor: recorded })
  }
  // A server anchor without its log: an empty log.
  if (byPath.has(SERVER_AUDIT_ANCHOR) && !logs.some((log) => log.id === SERVER_LOG_ID) && files.some((file) => file.path === SERVER_AUDIT_ANCHOR)) {
    logs.unshift({ path: SERVER_AUDIT_LOG, id: SERVER_LOG_ID, lines: [], anchor: json(SERVER_AUDIT_ANCHOR) as AuditAnchor })
  }
  return logs
}

const VAULT_LOG_PATH = new RegExp(`^${VAULTS_DIR}/[0-9a-f-]{36}\\.audit\\.log$`)

/** Throws unless the log's row (there already) holds these very lines: an audit log is never overwritten. */
async function assertRowFits(sql: Sql, log: LogToWrite): Promise<void> {
  const lines: { line: string }[] = await sql`SELECT line FROM svc_audit_lines WHERE log_id = ${log.id} ORDER BY seq`
  if (joinAuditLines(lines.map((one) => one.line)) !== joinAuditLines(log.lines)) {
    throw new BackupError(`the audit log ${log.path} exists already in the database and differs: an audit log is never overwritten`)
  }
}

/** Rows, or lines, per INSERT (a statement's JSON array of them), and the most bytes of lines in one. */
const ROWS_PER_INSERT = 2000
const BYTES_PER_INSERT = 4 * 1024 * 1024

/** The logs' rows and lines, as PgAuditLogStore keeps them, many per statement (a restore of thousands of vaults). */
async function insertRows(sql: Sql, logs: readonly LogToWrite[]): Promise<void> {
  const rows = logs.map((log) => {
    const last = log.lines.at(-1)
    // The head: what the next line chains from (the last line's hash; with none, the checkpoint or start).
    const head = last === undefined ? (log.anchor.checkpoint ?? log.anchor.start) : hashOf(last, log.path)
    const bytes = log.lines.reduce((sum, line) => sum + Buffer.byteLength(line, 'utf8') + 1, 0)
    return { log_id: log.id, head, lines: log.lines.length, bytes, anchor: JSON.parse(storedAnchor(log.anchor)) as unknown }
  })
  for (let from = 0; from < rows.length; from += ROWS_PER_INSERT) {
    const chunk = JSON.stringify(rows.slice(from, from + ROWS_PER_INSERT))
    await sql`INSERT INTO svc_audit_logs (log_id, head, lines, bytes, anchor)
      SELECT log_id, head, lines, bytes, anchor FROM json_to_recordset(${chunk}::text::json) AS t (log_id text, head text, lines bigint, bytes bigint, anchor jsonb)`
  }
  // The lines as json strings (json, not jsonb: kept as sent), numbered from 1 in each log.
  let batch: { log_id: string; seq: number; line: string }[] = []
  let bytes = 0
  const flush = async () => {
    if (batch.length === 0) return
    const chunk = JSON.stringify(batch)
    batch = []
    bytes = 0
    await sql`INSERT INTO svc_audit_lines (log_id, seq, line)
      SELECT log_id, seq, line FROM json_to_recordset(${chunk}::text::json) AS t (log_id text, seq bigint, line text)`
  }
  for (const log of logs) {
    for (let i = 0; i < log.lines.length; i++) {
      batch.push({ log_id: log.id, seq: i + 1, line: log.lines[i] })
      bytes += log.lines[i].length
      if (batch.length >= ROWS_PER_INSERT || bytes >= BYTES_PER_INSERT) await flush()
    }
  }
  await flush()
}

/** The ids of the logs a database holds. */
async function presentLogs(sql: Sql): Promise<Set<string>> {
  return new Set(((await sql`SELECT log_id FROM svc_audit_logs`) as { log_id: string }[]).map((row) => row.log_id))
}
