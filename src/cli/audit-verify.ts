// bun run audit-verify [--data-dir DIR]
// Checks the hash chain of every audit log of the data folder (the server's audit.log and each
// vaults/<user>.audit.log) and names the first line that was edited, removed or reordered.
// Exit code 0 when every chain holds, 1 when one does not (or on a usage error).
import { resolve } from 'node:path'
import { verifyChain } from '../modules/audit/chain'
import { readAuditChains } from '../store/audit-log'
import { readLoggedDocumentSync } from '../store/document'
import { VAULT_LISTS } from '../store/records'

const USAGE = 'usage: bun run audit-verify [--data-dir DIR]'

function parseArgs(argv: string[]): { dataDir: string } | null {
  let dataDir = process.env.SVC_DATA_DIR?.trim() || './data'
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--data-dir' && argv[i + 1] !== undefined) dataDir = argv[++i]
    else if (arg.startsWith('--data-dir=')) dataDir = arg.slice('--data-dir='.length)
    else if (arg === '-h' || arg === '--help') return null
    else throw new Error(`unexpected argument ${arg}\n${USAGE}`)
  }
  return { dataDir: resolve(dataDir) }
}

function main(): number {
  const args = parseArgs(process.argv.slice(2))
  if (!args) {
    console.log(USAGE)
    return 0
  }
  const chains = readAuditChains(args.dataDir, (path) => readLoggedDocumentSync(path, VAULT_LISTS))
  let broken = 0
  for (const chain of chains) {
    if (!chain.anchor) {
      broken++
      console.log(`FAIL ${chain.file}: its chain's start value is missing (${chain.file === 'audit.log' ? 'audit.chain.json' : 'the vault file'} has none)`)
      continue
    }
    const check = verifyChain(chain.lines, chain.anchor)
    if (check.ok) {
      console.log(`ok   ${chain.file}: ${check.lines} event(s), chain intact${chain.anchor.checkpoint ? ' (from a compaction checkpoint)' : ''}`)
    } else {
      broken++
      console.log(`FAIL ${chain.file}: ${check.message}`)
    }
  }
  if (chains.length === 0) console.log(`no audit logs in ${args.dataDir}`)
  console.log(broken === 0 ? `${chains.length} audit log(s) verified` : `${broken} of ${chains.length} audit log(s) failed verification`)
  return broken === 0 ? 0 : 1
}

try {
  process.exit(main())
} catch (error) {
  console.error(`svc-vault audit-verify: ${(error as Error)?.message ?? error}`)
  process.exit(1)
}
