// Backups: one JSON bundle holding every document of a data folder as it is stored (the secrets
// stay sealed). Taken beside a running server without its lock: the server replaces each file by
// rename, so reading a file whole sees one version of it, never a half-written one; a vault's
// commits since its file was last written are in its change log, which the bundle's copy of the
// vault includes (document.ts readLoggedDocumentSync).
//
// Cross-document consistency: the vault documents are read first and accounts.json last. A
// user's vault is created after the user, so every vault of a user in the bundle's accounts.json
// is there; a vault whose owner is not (an account deleted meanwhile) is left out. Each document is a snapshot of its own instant;
// nothing in one document points into another except the owner's id, so no mix of instants can
// break a reference. A master-key rotation (server stopped) changes every document; while one is
// under way (its marker in the key check), or if the key check changed while the bundle was read,
// the read is done again, and after a few tries the backup gives up rather than mix two keys.
//
// Audit logs come along, each read after the document holding its chain's anchor (a vault file,
// or audit.chain.json for the server's log). If the document was written to meanwhile (its file
// or change log changed), its anchor is read again: a compaction or a noted head in between (both
// rewrite the anchor) makes both be read again. So the
// anchor's head is a line of the log read, and its checkpoint either starts the log or is in it:
// a restored log verifies. A line written but not yet synced may come along too.
import { createHash } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, posix } from 'node:path'
import { isTempFile, writeFileAtomic } from './atomic-file'
import { KEY_CHECK_ROTATING } from '../crypto/keyring'
import { MASTER_KEY_FILE } from '../crypto/master-key'
import { readAuditBytes, SERVER_AUDIT_ANCHOR, SERVER_AUDIT_LOG } from './audit-log'
import { fileIdentity, readLoggedDocumentSync } from './document'
import { ACCOUNTS_LISTS, VAULT_LISTS } from './records'
import { ACCOUNTS_FILE, VAULTS_DIR } from './store'

export const BACKUP_FORMAT = 'svc-vault-backup'
export const BACKUP_VERSION = 1

export class BackupError extends Error {}

/** Told of a long run's progress (src/cli/progress.ts draws it): the store layer only counts. */
export interface ProgressSink {
  setTotal(total: number): void
  advance(count?: number): void
}

export interface BackupFile {
  /** Relative to the data folder, with `/` separators. */
  path: string
  /** The file's bytes, base64. */
  data: string
  sha256: string
}

export interface BackupBundle {
  format: typeof BACKUP_FORMAT
  version: number
  createdAt: string
  includesMasterKey: boolean
  files: BackupFile[]
}

/** Files a bundle may hold: the accounts document, vault documents, audit logs and the master key. */
const ALLOWED_PATH = /^(accounts\.json|master\.key|audit\.log|audit\.chain\.json|vaults\/[0-9a-f-]{36}\.(json|audit\.log))$/
const VAULT_FILE = /^[0-9a-f-]{36}\.json$/
/** The owner's id in a vault file's or a vault audit log's path. */
export const ownerOf = (path: string) => path.slice(VAULTS_DIR.length + 1, VAULTS_DIR.length + 1 + 36)

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

function keyCheckOf(bytes: Uint8Array): string | undefined {
  return (JSON.parse(Buffer.from(bytes).toString('utf8')) as { keyCheck?: string }).keyCheck
}

function readDocument(dataDir: string, path: string): Buffer | null {
  let bytes: Buffer
  try {
    if (path.startsWith(`${VAULTS_DIR}/`) || path === ACCOUNTS_FILE) {
      // Recent commits may still be in the change log: the bundle holds the whole document.
      const text = readLoggedDocumentSync(join(dataDir, path), path === ACCOUNTS_FILE ? ACCOUNTS_LISTS : VAULT_LISTS)
      if (text === null) return null
      bytes = Buffer.from(text)
    } else {
      bytes = readFileSync(join(dataDir, path))
    }
  } catch (error) {
    // Not there (yet): a vault listed a moment ago cannot vanish, but be tolerant anyway.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
  if (path.endsWith('.json')) {
    try {
      JSON.parse(bytes.toString('utf8'))
    } catch {
      throw new BackupError(`${join(dataDir, path)} is not valid JSON; the data folder needs repair before it can be backed up`)
    }
  }
  return bytes
}

export function backupEntry(path: string, bytes: Buffer): BackupFile {
  return { path, data: bytes.toString('base64'), sha256: sha256(bytes) }
}

/** Ids of the users and of the shared vaults in an accounts document: the owners of vault files. */
export function ownersOf(accounts: Buffer): Set<string> {
  const parsed = JSON.parse(accounts.toString('utf8')) as { users?: { id?: unknown }[]; sharedVaults?: { id?: unknown }[] }
  const ids = (list: { id?: unknown }[] | undefined) => (Array.isArray(list) ? list : []).map((record) => String(record?.id))
  return new Set([...ids(parsed.users), ...ids(parsed.sharedVaults)])
}

/**
 * What changes with every write to a document: a commit appends to its change log (which grows),
 * a rewrite renames a new file in (another inode), and either changes the ctime.
 */
function documentIdentity(dataDir: string, path: string): string {
  return `${fileIdentity(join(dataDir, path))}|${fileIdentity(join(dataDir, `${path}.log`))}`
}

/** The anchor of an audit chain in a document's text (a vault's `auditChain`, or the whole file). */
function anchorIn(path: string, bytes: Buffer | null): string {
  if (bytes === null) return 'null'
  const parsed = JSON.parse(bytes.toString('utf8')) as { auditChain?: { start?: unknown; checkpoint?: unknown } }
  const anchor = path === SERVER_AUDIT_ANCHOR ? (parsed as { start?: unknown; checkpoint?: unknown }) : (parsed.auditChain ?? null)
  // Where the chain starts is what must agree with the log read after it (a compaction moves it);
  // head, lines and bytes only move forward with the log (at open, close, hourly), and the log
  // read later holds at least as much.
  return JSON.stringify(anchor && { start: anchor.start, checkpoint: anchor.checkpoint })
}

/**
 * A document and, when it has one, the audit log whose chain it anchors, read so that the two
 * agree (see the top of this file).
 */
function withAuditLog(dataDir: string, documentPath: string, logPath: string): BackupFile[] {
  for (let attempt = 0; attempt < 20; attempt++) {
    const before = documentIdentity(dataDir, documentPath)
    const document = readDocument(dataDir, documentPath)
    if (!document) return []
    if (!existsSync(join(dataDir, logPath))) return [backupEntry(documentPath, document)]
    const log = readAuditBytes(join(dataDir, logPath))
    // Nothing written to the document since before it was read: its anchor is still the one read.
    // Otherwise the anchor is read again and compared.
    const unchanged = documentIdentity(dataDir, documentPath) === before
    if (!unchanged && anchorIn(documentPath, readDocument(dataDir, documentPath)) !== anchorIn(documentPath, document)) continue
    return [backupEntry(documentPath, document), backupEntry(logPath, log)]
  }
  throw new BackupError(`the audit chain's anchor of ${join(dataDir, documentPath)} kept changing while it was read; try again`)
}

/** A consistent snapshot of the data folder (see the top of this file). */
export function createBackup(dataDir: string, options: { includeMasterKey?: boolean; now?: () => number; progress?: ProgressSink } = {}): BackupBundle {
  if (!existsSync(join(dataDir, ACCOUNTS_FILE))) {
    throw new BackupError(`${dataDir} holds no svc-vault data (no ${ACCOUNTS_FILE})`)
  }
  for (let attempt = 0; attempt < 5; attempt++) {
    const before = readDocument(dataDir, ACCOUNTS_FILE)
    const files: BackupFile[] = []
    const vaultsDir = join(dataDir, VAULTS_DIR)
    const names = existsSync(vaultsDir) ? readdirSync(vaultsDir).filter((name) => VAULT_FILE.test(name) && !isTempFile(name)) : []
    // A backup counts the documents it reads: each vault (with its audit log), then the accounts.
    options.progress?.setTotal(names.length + 1)
    for (const name of names.sort()) {
      const path = `${VAULTS_DIR}/${name}`
      files.push(...withAuditLog(dataDir, path, `${VAULTS_DIR}/${name.slice(0, -'.json'.length)}.audit.log`))
      options.progress?.advance()
    }
    if (existsSync(join(dataDir, SERVER_AUDIT_ANCHOR))) files.push(...withAuditLog(dataDir, SERVER_AUDIT_ANCHOR, SERVER_AUDIT_LOG))
    const accounts = readDocument(dataDir, ACCOUNTS_FILE)
    if (!before || !accounts) throw new BackupError(`${join(dataDir, ACCOUNTS_FILE)} vanished during the backup`)
    // A rotation under way, or one between the two reads: the vaults may be wrapped under either
    // key. Wait a moment and read again.
    if (keyCheckOf(before) !== keyCheckOf(accounts) || keyCheckOf(accounts) === KEY_CHECK_ROTATING) {
      Bun.sleepSync(200)
      continue
    }
    const owners = ownersOf(accounts)
    const owned = files.filter((file) => !file.path.startsWith(`${VAULTS_DIR}/`) || owners.has(ownerOf(file.path)))
    files.length = 0
    files.push(...owned, backupEntry(ACCOUNTS_FILE, accounts))
    options.progress?.advance()
    const includeMasterKey = options.includeMasterKey === true
    if (includeMasterKey) {
      const keyPath = join(dataDir, MASTER_KEY_FILE)
      if (!existsSync(keyPath)) {
        throw new BackupError(`${keyPath} does not exist (the key comes from SVC_MASTER_KEY): back that key up yourself`)
      }
      files.unshift(backupEntry(MASTER_KEY_FILE, readFileSync(keyPath)))
    }
    return {
      format: BACKUP_FORMAT,
      version: BACKUP_VERSION,
      createdAt: new Date((options.now ?? Date.now)()).toISOString(),
      includesMasterKey: includeMasterKey,
      files,
    }
  }
  throw new BackupError('a master key rotation is under way (or was interrupted: run bun run rotate-master-key again); back up once it has finished')
}

/** Writes the bundle atomically, readable by its owner only (mode 0600). */
export async function writeBackup(path: string, bundle: BackupBundle): Promise<void> {
  // Folders it has to create are private too (the bundle may hold the master key).
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  await writeFileAtomic(path, JSON.stringify(bundle), 0o600)
}

/** Reads and checks a bundle: the format marker, every path, every checksum, every document. */
export function readBackup(path: string): BackupBundle {
  let bundle: BackupBundle
  try {
    bundle = JSON.parse(readFileSync(path, 'utf8'))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new BackupError(`${path} does not exist`)
    throw new BackupError(`${path} is not an svc-vault backup (not JSON)`)
  }
  if (bundle?.format !== BACKUP_FORMAT || !Array.isArray(bundle.files)) {
    throw new BackupError(`${path} is not an svc-vault backup (no "${BACKUP_FORMAT}" format marker)`)
  }
  if (typeof bundle.version !== 'number' || bundle.version > BACKUP_VERSION) {
    throw new BackupError(`${path} has backup format version ${bundle.version}; this svc-vault reads up to ${BACKUP_VERSION}`)
  }
  const seen = new Set<string>()
  for (const file of bundle.files) {
    if (typeof file?.path !== 'string' || !ALLOWED_PATH.test(file.path) || posix.normalize(file.path) !== file.path || seen.has(file.path)) {
      throw new BackupError(`${path} holds an unexpected file name: ${JSON.stringify(file?.path)}`)
    }
    seen.add(file.path)
    const bytes = Buffer.from(String(file.data), 'base64')
    if (sha256(bytes) !== file.sha256) throw new BackupError(`${path} is damaged: ${file.path} does not match its checksum`)
    if (file.path.endsWith('.json')) {
      try {
        JSON.parse(bytes.toString('utf8'))
      } catch {
        throw new BackupError(`${path} is damaged: ${file.path} is not valid JSON`)
      }
    }
  }
  if (!seen.has(ACCOUNTS_FILE)) throw new BackupError(`${path} holds no ${ACCOUNTS_FILE}`)
  return bundle
}

/** How many files a restore writes at once. */
const RESTORE_WRITERS = 16

/** Names in a folder that make it "not empty" for a restore (a `.gitkeep` does not count). */
export function occupants(dir: string): string[] {
  if (!existsSync(dir)) return []
  if (!statSync(dir).isDirectory()) throw new BackupError(`${dir} is not a folder`)
  return readdirSync(dir).filter((name) => name !== '.gitkeep')
}

/** Fills an empty data folder from a bundle; every file is written atomically, accounts.json last. */
export async function restoreBackup(bundle: BackupBundle, dataDir: string, progress?: ProgressSink): Promise<{ files: number; vaults: number }> {
  const present = occupants(dataDir)
  if (present.length > 0) {
    throw new BackupError(`${dataDir} is not empty (${present.slice(0, 3).join(', ')}${present.length > 3 ? ', …' : ''}); restore only into an empty folder`)
  }
  mkdirSync(join(dataDir, VAULTS_DIR), { recursive: true, mode: 0o700 })
  // An existing empty folder (a checkout's data/ is 0755) becomes private too.
  chmodSync(dataDir, 0o700)
  // accounts.json last, as the backup read it: a restore cut short has no accounts.json and is
  // plainly incomplete (empty the folder and restore again).
  const ordered = [...bundle.files].sort((a, b) => Number(a.path === ACCOUNTS_FILE) - Number(b.path === ACCOUNTS_FILE))
  progress?.setTotal(ordered.length)
  const write = async (file: BackupFile) => {
    await writeFileAtomic(join(dataDir, file.path), Buffer.from(file.data, 'base64'), 0o600)
    progress?.advance()
  }
  // Several at a time (each waits for its fsync: one by one, a large folder takes minutes), the
  // accounts alone once every other file is durable.
  const rest = ordered.slice(0, -1)
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(RESTORE_WRITERS, rest.length) }, async () => {
      while (next < rest.length) await write(rest[next++])
    }),
  )
  if (ordered.length > 0) await write(ordered[ordered.length - 1])
  return { files: ordered.length, vaults: bundleContents(bundle).vaults }
}

/**
 * What a bundle holds, counted the way a person reads it: vaults (one per user), apart from the
 * audit logs (each vault's `<user>.audit.log` and the server's `audit.log`). Backup and restore
 * both say this, so the same file gives the same figures.
 */
export function bundleContents(bundle: BackupBundle): { vaults: number; auditLogs: number } {
  const paths = bundle.files.map((file) => file.path)
  return {
    vaults: paths.filter((path) => path.startsWith(`${VAULTS_DIR}/`) && VAULT_FILE.test(path.slice(VAULTS_DIR.length + 1))).length,
    auditLogs: paths.filter((path) => path.endsWith('.audit.log') || path === 'audit.log').length,
  }
}

/** "accounts, 1 vault and 2 audit logs": a bundle's contents in words. */
export function describeBundle(bundle: BackupBundle): string {
  const { vaults, auditLogs } = bundleContents(bundle)
  const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`
  return `accounts, ${plural(vaults, 'vault')} and ${plural(auditLogs, 'audit log')}`
}
