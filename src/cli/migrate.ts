// svc-vault migrate --to postgres://…   (bun run migrate --to …)
//   copies the data folder (SVC_DATA_DIR) into an empty PostgreSQL database;
// svc-vault migrate --to-dir DIR
//   copies the database (SVC_DATABASE_URL or SVC_DATABASE_URL_FILE) into a new data folder.
//
// Both read the source as a backup bundle (one format for both stores: src/store/backup.ts,
// src/store/postgres/bundle.ts), refuse a target that holds anything, write it, then read the
// copy back and compare it with the source record by record and every audit log byte for byte.
// The audit logs move with the documents: into the database's tables, or out of them into files.
// The master key comes from SVC_MASTER_KEY or SVC_MASTER_KEY_FILE (a database store takes it
// from there only) and must pass the source's key check. The source must not change meanwhile:
// the data folder is locked (a running server makes this refuse), and a database with other
// sessions (running instances) is refused.
import { resolve } from 'node:path'
import { ConfigError, databaseUrlFromEnv, masterKeyFromEnv } from '../config'
import { Keyring, MasterKeyMismatchError } from '../crypto/keyring'
import { parseDatabaseUrl } from '../settings'
import { BackupError, createBackup, occupants, restoreBackup, type BackupBundle } from '../store/backup'
import { compareBundles } from '../store/bundle-compare'
import { DataDirLockedError, acquireLock } from '../store/lock'
import { assertAlone, assertEmptyDatabase, createDatabaseBackup, restoreDatabaseBackup, toolDatabase } from '../store/postgres/bundle'
import { StoreUnavailableError } from '../store/errors'
import { SchemaTooNewError } from '../store/postgres/migrations'
import { Args } from './args'
import { Progress, type ProgressStream } from './progress'

const USAGE = `usage: svc-vault migrate --to postgres://…   copy the data folder (SVC_DATA_DIR) into an empty database
       svc-vault migrate --to-dir DIR       copy the database (SVC_DATABASE_URL or SVC_DATABASE_URL_FILE) into a new, empty folder
the master key must be given (SVC_MASTER_KEY or SVC_MASTER_KEY_FILE); stop the server first`

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
  stream?: ProgressStream
}

function accountsOf(bundle: BackupBundle): { keyCheck?: string } {
  const file = bundle.files.find((f) => f.path === 'accounts.json')!
  return JSON.parse(Buffer.from(file.data, 'base64').toString('utf8'))
}

/** Runs the migration; throws (changing nothing in the source) when it cannot. */
export async function migrate(target: Target, options: MigrateOptions = {}): Promise<void> {
  const env = options.env ?? process.env
  const log = options.log ?? ((line: string) => console.log(line))
  const key = masterKeyFromEnv(env)
  if (!key) {
    throw new ConfigError(
      'the master key must be given as SVC_MASTER_KEY or SVC_MASTER_KEY_FILE (for a key kept in <data>/master.key: SVC_MASTER_KEY_FILE=<data>/master.key); a database store takes it from there only',
    )
  }
  const ring = new Keyring(key)
  const dataDir = resolve(env.SVC_DATA_DIR?.trim() || './data')
  // Started before the source is read: the summary's time and rate are the whole run's.
  const shown = new Progress({ label: 'migrate', total: 0, stream: options.stream, log })
  try {
    if (target.to === 'postgres') {
      shown.finish(await toDatabase(target.url, dataDir, ring, shown))
      log('start the server with SVC_DATABASE_URL set to that database and the same master key (SVC_MASTER_KEY or SVC_MASTER_KEY_FILE)')
    } else {
      const url = databaseUrlFromEnv(env)
      if (!url) throw new ConfigError('--to-dir copies the database SVC_DATABASE_URL (or SVC_DATABASE_URL_FILE) names: set one')
      shown.finish(await toFolder(url, target.dir, ring, shown))
      log(`start the server with SVC_DATA_DIR=${target.dir}, SVC_DATABASE_URL unset and the same master key (SVC_MASTER_KEY or SVC_MASTER_KEY_FILE)`)
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
    return `${verified(source, copy)} from ${dataDir} into the database`
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
  return `${verified(source, createBackup(dir))} from the database into ${dir}`
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
