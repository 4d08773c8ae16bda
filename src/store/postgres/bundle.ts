// Backups of a database, and restores into one, in the file store's bundle format (backup.ts):
// a bundle holds `accounts.json` and `vaults/<id>.json` with the same JSON either store keeps,
// so a backup of a database restores into a folder and the other way round, and a migration
// between the stores is a bundle read from one and written into the other (src/cli/migrate.ts).
//
// A backup reads every document in one REPEATABLE READ transaction: one instant of the whole
// database (audit logs too), beside running instances. A restore writes every document and audit log in one transaction, the
// accounts last: a restore cut short leaves the database empty, never half-filled.
//
// The audit logs go through audit-transfer.ts (the one place that knows where a store keeps them):
// read in the backup's transaction, written in the restore's.
import { KEY_CHECK_REKEYING, KEY_CHECK_ROTATING } from '../../crypto/keyring'
import { assertAuditLogsFit, readAuditLogsOf, writeAuditLogsTo } from '../audit-transfer'
import { BACKUP_FORMAT, BACKUP_VERSION, backupEntry, BackupError, ownerOf, ownersOf, type BackupBundle, type BackupFile, type ProgressSink } from '../backup'
import { ACCOUNTS_LISTS, VAULT_LISTS } from '../records'
import { ACCOUNTS_FILE, VAULTS_DIR } from '../store'
import { Database, type Sql } from './database'
import { loadAllDocumentsIn, loadDocumentIn, pack } from './document'
import { migrate, SCHEMA_VERSION } from './migrations'
import { ACCOUNTS_ID } from './store'

/** Documents per INSERT of a restore, and the most bytes one holds. */
const INSERT_BATCH = 200
const INSERT_BATCH_BYTES = 4 * 1024 * 1024

/** An operator command's bound on one statement or transaction (a copy of many vaults is one). */
const TOOL_TIMEOUT_MS = 60 * 60 * 1000
/** A database that does not answer is reported within this, not after the bound above. */
export const TOOL_CONNECT_TIMEOUT_MS = 10_000

/**
 * A connection for an operator command: one connection (so that `otherSessions` counts only
 * others), no listening, a bound long enough for a whole copy.
 */
export function toolDatabase(url: string): Database {
  return new Database(url, { max: 1, timeoutMs: TOOL_TIMEOUT_MS, connectTimeoutMs: TOOL_CONNECT_TIMEOUT_MS })
}

/** How many other sessions use this database (running instances hold at least one each). */
export async function otherSessions(db: Database): Promise<number> {
  const [row] = await db.run(
    (sql) =>
      sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
  )
  return Number(row.n)
}

/** Throws unless no instance (nor anything else) is connected: writes meanwhile would be lost or mixed. */
export async function assertAlone(db: Database, what: string): Promise<void> {
  const others = await otherSessions(db)
  if (others > 0) {
    throw new BackupError(`${others} other session(s) are connected to the database (a running svc-vault instance?): stop every instance before ${what}`)
  }
}

/** The tables of the current schema that hold rows (svc_schema, the schema's version, does not count). */
export async function tablesWithRows(db: Database): Promise<string[]> {
  return db.run(async (sql) => {
    const tables =
      await sql`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`
    const found: string[] = []
    for (const { table_name: name } of tables as { table_name: string }[]) {
      if (name === 'svc_schema') continue
      const [row] = await sql.unsafe(`SELECT EXISTS (SELECT 1 FROM "${name.replaceAll('"', '""')}") AS found`)
      if (row.found) found.push(name)
    }
    return found
  })
}

async function schemaVersion(sql: Sql): Promise<number> {
  const [exists] = await sql`SELECT to_regclass('svc_schema') IS NOT NULL AS found`
  if (!exists.found) return 0
  const [row] = await sql`SELECT coalesce(max(version), 0)::int AS version FROM svc_schema`
  return Number(row.version)
}

export interface DatabaseBackupOptions {
  /** The master key, as <data>/master.key holds it, when the bundle is to include it. */
  masterKeyFile?: Buffer
  now?: () => number
  progress?: ProgressSink
}

/** Every document of the database (and its audit logs) as a bundle; beside running instances. */
export async function createDatabaseBackup(url: string, options: DatabaseBackupOptions): Promise<BackupBundle> {
  const db = toolDatabase(url)
  try {
    // The audit logs in the documents' transaction: one instant of both (their anchors agree).
    const documents = await readDocuments(db, options.progress)
    const logs = documents.logs
    const owners = ownersOf(documents.accounts)
    const files: BackupFile[] = []
    for (const { id, text } of documents.vaults) if (owners.has(id)) files.push(backupEntry(`${VAULTS_DIR}/${id}.json`, text))
    const owned = new Set(files.map((file) => file.path))
    for (const log of logs) {
      if (!log.path.startsWith(`${VAULTS_DIR}/`) || owned.has(`${VAULTS_DIR}/${ownerOf(log.path)}.json`)) files.push(log)
    }
    files.push(backupEntry(ACCOUNTS_FILE, documents.accounts))
    if (options.masterKeyFile) files.unshift(backupEntry('master.key', options.masterKeyFile))
    return {
      format: BACKUP_FORMAT,
      version: BACKUP_VERSION,
      createdAt: new Date((options.now ?? Date.now)()).toISOString(),
      includesMasterKey: options.masterKeyFile !== undefined,
      files,
    }
  } finally {
    await db.close()
  }
}

interface ReadVault {
  id: string
  text: Buffer
}

/** The accounts and every vault (deleted ones left out), read at one instant. */
async function readDocuments(db: Database, progress?: ProgressSink): Promise<{ accounts: Buffer; vaults: ReadVault[]; logs: BackupFile[] }> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const read = await db.run((sql) =>
      sql.begin('isolation level repeatable read read only', async (tx) => {
        const version = await schemaVersion(tx)
        if (version === 0) throw new BackupError('the database holds no svc-vault data (no schema)')
        if (version > SCHEMA_VERSION) throw new BackupError(`the database's schema is version ${version}, newer than this svc-vault knows (${SCHEMA_VERSION})`)
        const accounts = await loadDocumentIn(tx, ACCOUNTS_ID, ACCOUNTS_LISTS)
        if (!accounts || accounts.deleted) throw new BackupError('the database holds no svc-vault data (no accounts document)')
        const loaded = await loadAllDocumentsIn(tx, 'vault', VAULT_LISTS)
        // The documents, as a folder's backup counts them: each vault, then the accounts.
        progress?.setTotal(loaded.size + 1)
        const vaults: ReadVault[] = []
        for (const [id, document] of loaded) {
          vaults.push({ id, text: Buffer.from(JSON.stringify(document.data)) })
          progress?.advance()
        }
        const logs = await readAuditLogsOf({ sql: tx })
        return { accounts: Buffer.from(JSON.stringify(accounts.data)), vaults, logs, keyCheck: (accounts.data as { keyCheck?: string }).keyCheck }
      }),
    )
    // A master key rotation under way: the vaults may be wrapped under either key.
    if (read.keyCheck === KEY_CHECK_ROTATING || read.keyCheck === KEY_CHECK_REKEYING) {
      await Bun.sleep(200)
      continue
    }
    progress?.advance()
    return read
  }
  throw new BackupError('a master key rotation is under way (or was interrupted: run rotate-master-key again); back up once it has finished')
}

/** Throws unless the database holds nothing (a table with rows, svc-vault's or another's). */
export async function assertEmptyDatabase(db: Database, described: string): Promise<void> {
  const tables = await tablesWithRows(db)
  if (tables.length > 0) {
    throw new BackupError(
      `${described} is not empty (rows in ${tables.slice(0, 3).join(', ')}${tables.length > 3 ? ', …' : ''}); use an empty database (CREATE DATABASE …) as the target`,
    )
  }
}

/**
 * Fills an empty database from a bundle: the schema, then every document in one transaction (a
 * restore cut short leaves nothing) with the audit logs. The master key in a bundle is not
 * written anywhere: a database store takes it from SVC_MASTER_KEY(_FILE) only.
 */
export async function restoreDatabaseBackup(
  bundle: BackupBundle,
  url: string,
  options: { progress?: ProgressSink; described?: string },
): Promise<{ documents: number; auditLogs: number }> {
  const db = toolDatabase(url)
  try {
    const described = options.described ?? 'the database'
    await assertEmptyDatabase(db, described)
    await migrate(db)
    const documents = bundle.files.filter((file) => file.path === ACCOUNTS_FILE || (file.path.startsWith(`${VAULTS_DIR}/`) && file.path.endsWith('.json')))
    const logs = bundle.files.filter((file) => file.path !== 'master.key' && !documents.includes(file))
    options.progress?.setTotal(documents.length + logs.length)
    // Accounts last, as the file store restores them.
    documents.sort((a, b) => Number(a.path === ACCOUNTS_FILE) - Number(b.path === ACCOUNTS_FILE))
    await db.run((sql) =>
      sql.begin(async (tx) => {
        // Checked again inside the transaction: an instance started meanwhile would have created its accounts.
        const [row] = await tx`SELECT count(*)::int AS n FROM svc_documents`
        if (Number(row.n) > 0) throw new BackupError(`${described} is not empty (svc_documents has rows); use an empty database as the target`)
        // Many documents per statement (one round trip each is most of the time otherwise).
        let batch: { id: string; kind: string; snapshot: string; packed: Uint8Array; snapshot_version: number }[] = []
        let bytes = 0
        const flush = async () => {
          if (batch.length === 0) return
          await tx`INSERT INTO svc_documents ${tx(batch)}`
          // Version 0's row: a refresh from version 0 finds where it stands (document.ts).
          await tx`INSERT INTO svc_changes ${tx(batch.map((document) => ({ document_id: document.id, version: 0, changes: '[]' })))}`
          options.progress?.advance(batch.length)
          batch = []
          bytes = 0
        }
        for (const file of documents) {
          const snapshot = Buffer.from(file.data, 'base64').toString('utf8')
          const id = file.path === ACCOUNTS_FILE ? ACCOUNTS_ID : file.path.slice(VAULTS_DIR.length + 1, -'.json'.length)
          // The accounts in a statement of their own, after every vault.
          if (id === ACCOUNTS_ID) await flush()
          // Packed as the store keeps its snapshots (document.ts): the first start reads them so.
          batch.push({ id, kind: id === ACCOUNTS_ID ? 'accounts' : 'vault', snapshot: '', packed: await pack(snapshot), snapshot_version: 0 })
          bytes += snapshot.length
          if (batch.length >= INSERT_BATCH || bytes >= INSERT_BATCH_BYTES) await flush()
        }
        await flush()
        // The audit logs with the documents (their anchors are in them): all or nothing.
        await assertAuditLogsFit({ sql: tx }, logs, bundle.files)
        await writeAuditLogsTo({ sql: tx }, logs, bundle.files)
        options.progress?.advance(logs.length)
      }),
    )
    return { documents: documents.length, auditLogs: logs.length }
  } finally {
    await db.close()
  }
}
