// svc-vault migrate --to postgres://…   (bun run migrate --to …)
//   copies the data folder (SVC_DATA_DIR) into an empty PostgreSQL database;
// svc-vault migrate --to-dir DIR
//   copies the database (SVC_DATABASE_URL or SVC_DATABASE_URL_FILE) into a new data folder.
//
// Both read the source as a backup bundle (one format for both stores: src/store/backup.ts,
// src/store/postgres/bundle.ts), refuse a target that holds anything, write it, then read the
// copy back and compare it with the source record by record and every audit log byte for byte,
// and check every audit log of the copy against its chain and anchor (as audit-verify does).
// The audit logs move with the documents: into the database's tables, or out of them into files.
// The master key comes from SVC_MASTER_KEY or SVC_MASTER_KEY_FILE (a database store takes it
// from there only; out of a folder, the key kept in it serves too) and must pass the source's key
// check. The source must not change meanwhile: the data folder is locked (a running server makes
// this refuse), and a database with other sessions (running instances) is refused.
import { join, resolve } from 'node:path'
import { ConfigError, databaseUrlFromEnv, masterKeyFromEnv } from '../config'
import { Keyring, MasterKeyMismatchError } from '../crypto/keyring'
import { MASTER_KEY_FILE, readMasterKeyFile } from '../crypto/master-key'
import { parseDatabaseUrl } from '../settings'
import { BackupError, createBackup, occupants, restoreBackup, type BackupBundle } from '../store/backup'
import { compareBundles } from '../store/bundle-compare'
import type { StoredAuditChain } from '../store/audit-log'
import { FileAuditLogStore } from '../store/audit-log-store'
import { PgAuditLogStore } from '../store/postgres/audit-log'
import { verifyStoredChains } from '../modules/audit/chain'
import { DataDirLockedError, acquireLock } from '../store/lock'
import { assertAlone, assertEmptyDatabase, createDatabaseBackup, restoreDatabaseBackup, toolDatabase } from '../store/postgres/bundle'
import { StoreUnavailableError } from '../store/errors'
import { SchemaTooNewError } from '../store/postgres/migrations'
import { Args } from './args'
import { Progress, type ProgressStream } from './progress'

const USAGE = `usage: svc-vault migrate --to postgres://…   copy the data folder (SVC_DATA_DIR) into an empty database
       svc-vault migrate --to-dir DIR       copy the database (SVC_DATABASE_URL or SVC_DATABASE_URL_FILE) into a new, empty folder
the master key: SVC_MASTER_KEY or SVC_MASTER_KEY_FILE (--to: else the folder's master.key); stop the server first`

class UsageError extends Error {}

type Target = { to: 'postgres'; url: string } | { to: 'dir'; dir: string }

export function parseMigrateArgs(argv: string[]): Target | null {
  let target: Target | undefined
  const set = (next: Target) => {
    if (target) throw new UsageError(`give one target: --to or --to-dir\n${USAGE}`)
    target = next
  }
  const args = new Args(argv)
  for (let arg = args.next(); arg !== undefined; arg = args.next()) {
    let v: string | undefined
    if ((v = args.value('--to')) !== undefined) set({ to: 'postgres', url: parseDatabaseUrl(v, '--to') })
    else if ((v = args.value('--to-dir')) !== undefined) set({ to: 'dir', dir: resolve(v) })
    else if (arg === '-h' || arg === '--help') return null
    else throw new UsageError(`unexpected argument ${arg}\n${USAGE}`)
  }
  if (!target) throw new UsageError(USAGE)
  return target
}

export interface MigrateOptions {
  env?: Record<string, string | undefined>
  log?: (line: string) => void
  /** Where the next step is said (stderr by default: standard output holds the one summary line). */
  note?: (line: string) => void
  stream?: ProgressStream
}

function accountsOf(bundle: BackupBundle): { keyCheck?: string; auditKeys?: string[] } {
  const file = bundle.files.find((f) => f.path === 'accounts.json')!
  return JSON.parse(Buffer.from(file.data, 'base64').toString('utf8'))
}

/** Runs the migration; throws (changing nothing in the source) when it cannot. */
export async function migrate(target: Target, options: MigrateOptions = {}): Promise<void> {
  const env = options.env ?? process.env
  const log = options.log ?? ((line: string) => console.log(line))
  const note = options.note ?? ((line: string) => console.error(line))
  const dataDir = resolve(env.SVC_DATA_DIR?.trim() || './data')
  // A folder's own key (generated into it at its first start) serves a copy out of it; the
  // server on the database then takes it from SVC_MASTER_KEY_FILE, never from a folder.
  const keyFile = join(dataDir, MASTER_KEY_FILE)
  const given = masterKeyFromEnv(env)
  const folderKey = target.to === 'postgres' && !given ? readMasterKeyFile(keyFile) : null
  const key = given ?? folderKey
  if (!key) {
    throw new ConfigError(
      target.to === 'postgres'
        ? `the master key must be given as SVC_MASTER_KEY or SVC_MASTER_KEY_FILE (${keyFile} does not exist)`
        : 'the master key must be given as SVC_MASTER_KEY or SVC_MASTER_KEY_FILE; a database store takes it from there only',
    )
  }
  const ring = new Keyring(key)
  // Started before the source is read: the summary's time and rate are the whole run's.
  const shown = new Progress({ label: 'migrate', total: 0, stream: options.stream, log })
  try {
    if (target.to === 'postgres') {
      shown.finish(await toDatabase(target.url, dataDir, ring, shown))
      note(
        `start the server with SVC_DATABASE_URL set to that database and the same master key (${folderKey ? `SVC_MASTER_KEY_FILE=${keyFile}, or that key in SVC_MASTER_KEY` : 'SVC_MASTER_KEY or SVC_MASTER_KEY_FILE'})`,
      )
    } else {
      const url = databaseUrlFromEnv(env)
      if (!url) throw new ConfigError('--to-dir copies the database SVC_DATABASE_URL (or SVC_DATABASE_URL_FILE) names: set one')
      shown.finish(await toFolder(url, target.dir, ring, shown))
      note(`start the server with SVC_DATA_DIR=${target.dir}, SVC_DATABASE_URL unset and the same master key (SVC_MASTER_KEY or SVC_MASTER_KEY_FILE)`)
    }
  } catch (error) {
    shown.abandon()
    throw error
  }
}

/** The data folder into an empty database; the summary's detail. */
async function toDatabase(url: string, dataDir: string, ring: Keyring, progress: Progress): Promise<string> {
  // The folder stays as it is for the whole run: no server writes to it meanwhile.
  const release = acquireLock(dataDir)
  try {
    const db = toolDatabase(url)
    try {
      await assertEmptyDatabase(db, 'the target database')
    } finally {
      await db.close()
    }
    const source = createBackup(dataDir)
    await ring.assertKeyCheck(accountsOf(source).keyCheck ?? '').catch(() => {
      throw new MasterKeyMismatchError(`the master key given does not match the data in ${dataDir}; nothing was copied`)
    })
    // The audit logs go into the database with the documents (audit-transfer.ts).
    await restoreDatabaseBackup(source, url, { progress, described: 'the target database' })
    const copy = await createDatabaseBackup(url, {})
    const equal = verified(source, copy)
    const chains = toolDatabase(url)
    try {
      return `${equal} from ${dataDir} into the database; ${chainsIntact(await new PgAuditLogStore(chains).chains(), ring, source)}`
    } finally {
      await chains.close()
    }
  } finally {
    release()
  }
}

/** The database (its audit logs too) into a new, empty folder; the summary's detail. */
async function toFolder(url: string, dir: string, ring: Keyring, progress: Progress): Promise<string> {
  const present = occupants(dir)
  if (present.length > 0) {
    throw new BackupError(`${dir} is not empty (${present.slice(0, 3).join(', ')}${present.length > 3 ? ', …' : ''}); migrate only into an empty folder`)
  }
  const db = toolDatabase(url)
  try {
    await assertAlone(db, 'migrating')
  } finally {
    await db.close()
  }
  const source = await createDatabaseBackup(url, {})
  await ring.assertKeyCheck(accountsOf(source).keyCheck ?? '').catch(() => {
    throw new MasterKeyMismatchError('the master key given does not match the data in the database; nothing was copied')
  })
  await restoreBackup(source, dir, progress)
  const equal = verified(source, createBackup(dir))
  return `${equal} from the database into ${dir}; ${chainsIntact(await new FileAuditLogStore(dir).chains(), ring, source)}`
}

/**
 * Every audit log of the copy checked against its chain and anchor, as audit-verify does (keyed
 * lines against their MAC: the key is at hand); throws naming the first that fails. The copy
 * equals the source, so a log that fails here fails there too.
 */
function chainsIntact(chains: readonly StoredAuditChain[], ring: Keyring, source: BackupBundle): string {
  const keys = ring.auditKeys(accountsOf(source).auditKeys ?? [])
  const failed = verifyStoredChains(chains, keys).filter(({ check }) => !check?.ok)
  if (failed.length > 0) {
    const [{ chain, check }] = failed
    const why = check && !check.ok ? check.message : "its chain's start value is missing"
    throw new BackupError(
      `the copy is written and equals the source, but ${failed.length} of ${chains.length} audit log(s) fail verification, in the source as in the copy: ${chain.file}: ${why}; svc-vault audit-verify names each`,
    )
  }
  return `${chains.length} audit chain(s) intact`
}

/** The copy against the source; throws naming what differs. */
function verified(source: BackupBundle, copy: BackupBundle): string {
  const comparison = compareBundles(source, copy)
  if (comparison.differences.length > 0) {
    const shown = comparison.differences.slice(0, 10).join('\n  ')
    throw new BackupError(
      `the copy differs from the source (${comparison.differences.length} difference(s)):\n  ${shown}\nthe source is unchanged; empty the target and run again`,
    )
  }
  return `verified ${comparison.documents} document(s) with ${comparison.records} record(s) and ${comparison.auditLogs} audit log(s) equal`
}

const EXPECTED = [UsageError, ConfigError, BackupError, MasterKeyMismatchError, DataDirLockedError, StoreUnavailableError, SchemaTooNewError]

export async function main(argv = process.argv.slice(2)): Promise<number> {
  try {
    const target = parseMigrateArgs(argv)
    if (!target) {
      console.log(USAGE)
      return 0
    }
    await migrate(target)
    return 0
  } catch (error) {
    const known = EXPECTED.some((type) => error instanceof type)
    console.error(`svc-vault migrate: ${known ? '' : 'failed: '}${(error as Error)?.message ?? error}`)
    return 1
  }
}

if (import.meta.main) process.exit(await main())
