// bun run backup <file> [--data-dir DIR] [--include-master-key]
// Writes a consistent snapshot of the store, still sealed as stored, while the server runs: the
// data folder, or with SVC_DATABASE_URL (or SVC_DATABASE_URL_FILE) the database, in one bundle
// format (a database's backup restores into a folder and the other way round).
import { resolve } from 'node:path'
import { ConfigError, databaseUrlFromEnv, masterKeyFromEnv } from '../config'
import { BackupError, createBackup, describeBundle, writeBackup } from '../store/backup'
import { StoreUnavailableError } from '../store/errors'
import { createDatabaseBackup } from '../store/postgres/bundle'
import { Args } from './args'
import { Progress } from './progress'

const USAGE = 'usage: bun run backup <file> [--data-dir DIR] [--include-master-key]   (with SVC_DATABASE_URL: a backup of the database)'

function parseArgs(argv: string[]) {
  let file: string | undefined
  let dataDir = process.env.SVC_DATA_DIR?.trim() || './data'
  let includeMasterKey = false
  const args = new Args(argv)
  for (let arg = args.next(); arg !== undefined; arg = args.next()) {
    let v: string | undefined
    if (arg === '--include-master-key') includeMasterKey = true
    else if ((v = args.value('--data-dir')) !== undefined) dataDir = v
    else if (arg === '-h' || arg === '--help') return null
    else if (!arg.startsWith('-') && file === undefined) file = arg
    else throw new BackupError(`unexpected argument ${arg}\n${USAGE}`)
  }
  if (!file) throw new BackupError(USAGE)
  return { file: resolve(file), dataDir: resolve(dataDir), includeMasterKey }
}

async function main() {
  const args = parseArgs(process.argv.slice(2))
  if (!args) return console.log(USAGE)
  const databaseUrl = databaseUrlFromEnv(process.env)
  const progress = new Progress({ label: 'backup', total: 0 })
  let bundle
  try {
    if (databaseUrl) {
      // The key lives in SVC_MASTER_KEY(_FILE) with a database; in the bundle it takes master.key's form.
      const key = args.includeMasterKey ? masterKeyFromEnv(process.env) : undefined
      if (args.includeMasterKey && !key) throw new BackupError('--include-master-key: the master key is not given (SVC_MASTER_KEY or SVC_MASTER_KEY_FILE)')
      bundle = await createDatabaseBackup(databaseUrl, {
        masterKeyFile: key ? Buffer.from(`${Buffer.from(key).toString('base64')}\n`) : undefined,
        progress,
      })
    } else bundle = createBackup(args.dataDir, { includeMasterKey: args.includeMasterKey, progress })
    await writeBackup(args.file, bundle)
  } catch (error) {
    progress.abandon()
    throw error
  }
  progress.finish()
  console.log(`backup written to ${args.file}: ${describeBundle(bundle)} from ${databaseUrl ? 'the database' : args.dataDir}`)
  if (bundle.includesMasterKey) {
    console.log('warning: this backup holds the master key: anyone with the file can read every secret. Keep it apart and safe.')
  } else {
    console.log('the master key is not in this backup: keep it (SVC_MASTER_KEY or <data>/master.key) safe and apart; without it the backup cannot be read')
  }
}

main().catch((error) => {
  const known = error instanceof BackupError || error instanceof ConfigError || error instanceof StoreUnavailableError
  console.error(`svc-vault backup: ${known ? error.message : `failed: ${error?.message ?? error}`}`)
  process.exit(1)
})
