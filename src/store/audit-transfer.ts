// The audit logs' part of moving data between stores (backup, restore, migrate): the one place
// that knows where a store keeps them. In the bundle they are files like the file store's:
// `audit.log` with its anchor `audit.chain.json`, and `vaults/<id>.audit.log` (a vault's anchor
// is in its document, which moves with the documents).
//
// For now the database store keeps its audit logs as files too, in SVC_DATA_DIR (issue 34: they
// move into the database next); a database's AuditHome is that folder. When they move, these two
// functions learn to read and write them there, and nothing else changes.
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomic } from './atomic-file'
import { readAuditBytes, SERVER_AUDIT_ANCHOR, SERVER_AUDIT_LOG } from './audit-log'
import { backupEntry, BackupError, type BackupFile } from './backup'
import { VAULTS_DIR } from './store'

export interface AuditHome {
  /** The folder holding the audit log files (the data folder; with a database, SVC_DATA_DIR). */
  dataDir: string
}

const VAULT_AUDIT_LOG = /^[0-9a-f-]{36}\.audit\.log$/

/** The paths (bundle form) of every audit file in a home, the server's first. */
function auditPaths(home: AuditHome): string[] {
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
function serverStart(home: AuditHome): string {
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
export function readAuditLogsOf(home: AuditHome): BackupFile[] {
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
export function assertAuditLogsFit(home: AuditHome, files: readonly BackupFile[]): void {
  for (const file of files) {
    const path = join(home.dataDir, file.path)
    if (existsSync(path) && sha256(readFileSync(path)) !== file.sha256) {
      throw new BackupError(`${path} exists already and differs: an audit log is never overwritten (move it away first)`)
    }
  }
}

/**
 * Writes audit files into a home. A file already there with the same bytes is left (a migration
 * from a folder into a database whose SVC_DATA_DIR is that folder); one with other bytes is an
 * error: an audit log is never overwritten.
 */
export async function writeAuditLogsTo(home: AuditHome, files: readonly BackupFile[]): Promise<number> {
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
