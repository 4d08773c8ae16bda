// bun run restore <file> [--data-dir DIR]
// Fills an empty data folder from a backup; refuses a folder that holds anything.
import { resolve } from 'node:path'
import { BackupError, describeBundle, readBackup, restoreBackup } from '../store/backup'

const USAGE = 'usage: bun run restore <file> [--data-dir DIR]'

function parseArgs(argv: string[]) {
  let file: string | undefined
  let dataDir = process.env.SVC_DATA_DIR?.trim() || './data'
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--data-dir' && argv[i + 1] !== undefined) dataDir = argv[++i]
    else if (arg.startsWith('--data-dir=')) dataDir = arg.slice('--data-dir='.length)
    else if (arg === '-h' || arg === '--help') return null
    else if (!arg.startsWith('-') && file === undefined) file = arg
    else throw new BackupError(`unexpected argument ${arg}\n${USAGE}`)
  }
  if (!file) throw new BackupError(USAGE)
  return { file: resolve(file), dataDir: resolve(dataDir) }
}

async function main() {
  const args = parseArgs(process.argv.slice(2))
  if (!args) return console.log(USAGE)
  const bundle = readBackup(args.file)
  await restoreBackup(bundle, args.dataDir)
  console.log(`restored ${describeBundle(bundle)} from ${args.file} (taken ${bundle.createdAt}) into ${args.dataDir}`)
  if (!bundle.includesMasterKey) {
    console.log('start the server with the master key these data were sealed with (SVC_MASTER_KEY or <data>/master.key)')
  }
}

main().catch((error) => {
  console.error(`svc-vault restore: ${error instanceof BackupError ? error.message : `failed: ${error?.message ?? error}`}`)
  process.exit(1)
})
