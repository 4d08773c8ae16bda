// bun run restore <file> [--data-dir DIR]
// Fills an empty data folder from a backup; refuses a folder that holds anything. With
// SVC_DATABASE_URL (or SVC_DATABASE_URL_FILE) set it fills that database instead, which must be
// empty (the same bundle: a folder's backup restores into a database and the other way round).
import { resolve } from 'node:path'
import { ConfigError, databaseUrlFromEnv, masterKeyFromEnv } from '../config'
import { Keyring, MasterKeyMismatchError } from '../crypto/keyring'
import { BackupError, describeBundle, readBackup, restoreBackup, type BackupBundle } from '../store/backup'
import { StoreUnavailableError } from '../store/errors'
import { restoreDatabaseBackup } from '../store/postgres/bundle'
import { SchemaTooNewError } from '../store/postgres/migrations'
import { Args } from './args'
import { Progress } from './progress'

const USAGE = 'usage: bun run restore <file> [--data-dir DIR]   (with SVC_DATABASE_URL: into that empty database)'

function parseArgs(argv: string[]) {
  let file: string | undefined
  let dataDir = process.env.SVC_DATA_DIR?.trim() || './data'
  const args = new Args(argv)
  for (let arg = args.next(); arg !== undefined; arg = args.next()) {
    let v: string | undefined
    if ((v = args.value('--data-dir')) !== undefined) dataDir = v
    else if (arg === '-h' || arg === '--help') return null
    else if (!arg.startsWith('-') && file === undefined) file = arg
    else throw new BackupError(`unexpected argument ${arg}\n${USAGE}`)
  }
  if (!file) throw new BackupError(USAGE)
  return { file: resolve(file), dataDir: resolve(dataDir) }
}

/** With a database the key must come from the environment: a given one must open the bundle's data. */
async function checkKey(bundle: BackupBundle): Promise<boolean> {
  const key = masterKeyFromEnv(process.env)
  if (!key) return false
  const accounts = bundle.files.find((file) => file.path === 'accounts.json')!
  const check = (JSON.parse(Buffer.from(accounts.data, 'base64').toString('utf8')) as { keyCheck?: string }).keyCheck ?? ''
  await new Keyring(key).assertKeyCheck(check).catch(() => {
    throw new MasterKeyMismatchError(
      'the master key given (SVC_MASTER_KEY or SVC_MASTER_KEY_FILE) does not match the data in this backup; nothing was restored',
    )
  })
  return true
}

async function main() {
  const args = parseArgs(process.argv.slice(2))
  if (!args) return console.log(USAGE)
  const databaseUrl = databaseUrlFromEnv(process.env)
  const bundle = readBackup(args.file)
  const keyChecked = databaseUrl ? await checkKey(bundle) : false
  const progress = new Progress({ label: 'restore', total: 0 })
  try {
    // With a database its audit logs go into its tables too (src/store/audit-transfer.ts).
    if (databaseUrl) await restoreDatabaseBackup(bundle, databaseUrl, { progress })
    else await restoreBackup(bundle, args.dataDir, progress)
  } catch (error) {
    progress.abandon()
    throw error
  }
  progress.finish()
  console.log(`restored ${describeBundle(bundle)} from ${args.file} (taken ${bundle.createdAt}) into ${databaseUrl ? 'the database' : args.dataDir}`)
  if (databaseUrl && bundle.includesMasterKey) {
    console.log('the backup holds the master key, which a database store takes from SVC_MASTER_KEY or SVC_MASTER_KEY_FILE only: it was not written anywhere')
  }
  if (!keyChecked && (databaseUrl || !bundle.includesMasterKey)) {
    console.log(
      `start the server with the master key these data were sealed with (${databaseUrl ? 'SVC_MASTER_KEY or SVC_MASTER_KEY_FILE' : 'SVC_MASTER_KEY or <data>/master.key'})`,
    )
  }
}

const EXPECTED = [BackupError, ConfigError, StoreUnavailableError, MasterKeyMismatchError, SchemaTooNewError]

main().catch((error) => {
  const known = EXPECTED.some((type) => error instanceof type)
  console.error(`svc-vault restore: ${known ? error.message : `failed: ${error?.message ?? error}`}`)
  process.exit(1)
})
