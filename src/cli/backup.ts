// bun run backup <file> [--data-dir DIR] [--include-master-key]
// Writes a consistent snapshot of the data folder, still sealed as stored, while the server runs.
import { resolve } from 'node:path'
import { BackupError, createBackup, describeBundle, writeBackup } from '../store/backup'

const USAGE = 'usage: bun run backup <file> [--data-dir DIR] [--include-master-key]'

function parseArgs(argv: string[]) {
  let file: string | undefined
  let dataDir = process.env.SVC_DATA_DIR?.trim() || './data'
  let includeMasterKey = false
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--include-master-key') includeMasterKey = true
    else if (arg === '--data-dir' && argv[i + 1] !== undefined) dataDir = argv[++i]
    else if (arg.startsWith('--data-dir=')) dataDir = arg.slice('--data-dir='.length)
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
  const bundle = createBackup(args.dataDir, { includeMasterKey: args.includeMasterKey })
  await writeBackup(args.file, bundle)
  console.log(`backup written to ${args.file}: ${describeBundle(bundle)} from ${args.dataDir}`)
  if (bundle.includesMasterKey) {
    console.log('warning: this backup holds the master key: anyone with the file can read every secret. Keep it apart and safe.')
  } else {
    console.log('the master key is not in this backup: keep it (SVC_MASTER_KEY or <data>/master.key) safe and apart; without it the backup cannot be read')
  }
}

main().catch((error) => {
  console.error(`svc-vault backup: ${error instanceof BackupError ? error.message : `failed: ${error?.message ?? error}`}`)
  process.exit(1)
})
