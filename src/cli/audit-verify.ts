// bun run audit-verify [--data-dir DIR] [--expect-last HASH] [--from-export FILE]   (or SVC_DATABASE_URL=...)
// (in the executable: svc-vault audit-verify ...)
// Checks every audit log of the data folder against its chain and its anchor (docs/audit.md): the
// server's audit.log (audit.chain.json) and, for every vault with an `auditChain`, its
// vaults/<user>.audit.log, also when that file is missing. Names the first line found edited,
// removed, reordered or not keyed, lines cut or removed from the end, a missing log. With the
// master key (SVC_MASTER_KEY, SVC_MASTER_KEY_FILE or <data>/master.key) keyed lines are checked
// against their MAC. --expect-last HASH: a line hash kept elsewhere (the server's hourly "audit head"
// log line) must still be in a log. --from-export FILE: every line of an export
// (GET /api/audit/export) must still be in its log as exported.
// With SVC_DATABASE_URL (or SVC_DATABASE_URL_FILE) the logs and anchors are read from that
// database instead (one read-only snapshot), named as in a data folder; the master key then comes
// from SVC_MASTER_KEY(_FILE) only.
// Exit code 0 when everything holds, 1 when something does not (or on a usage error).
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { databaseUrlFromEnv, masterKeyFromEnv } from '../config'
import type { AuditKeys } from '../crypto/audit-mac'
import { Keyring } from '../crypto/keyring'
import { MASTER_KEY_FILE, readMasterKeyFile } from '../crypto/master-key'
import { lineEvent, verifyStoredChains } from '../modules/audit/chain'
import { readAuditChains, type StoredAuditChain } from '../store/audit-log'
import { readLoggedDocumentSync } from '../store/document'
import { Database } from '../store/postgres/database'
import { readPgAuditChains } from '../store/postgres/audit-log'
import { loadDocument } from '../store/postgres/document'
import { ACCOUNTS_ID } from '../store/postgres/store'
import { ACCOUNTS_LISTS, VAULT_LISTS } from '../store/records'
import { Args } from './args'

const USAGE =
  'usage: bun run audit-verify [--data-dir DIR] [--expect-last HASH] [--from-export FILE]   (svc-vault audit-verify ... in the executable; with SVC_DATABASE_URL or SVC_DATABASE_URL_FILE: the logs in that database)'

class UsageError extends Error {}

function parseArgs(argv: string[]): { dataDir: string; expectLast: string[]; fromExport: string[] } | null {
  let dataDir = process.env.SVC_DATA_DIR?.trim() || './data'
  const expectLast: string[] = []
  const fromExport: string[] = []
  const args = new Args(argv)
  for (let arg = args.next(); arg !== undefined; arg = args.next()) {
    let v: string | undefined
    if ((v = args.value('--data-dir')) !== undefined) dataDir = v
    else if ((v = args.value('--expect-last')) !== undefined) {
      if (!/^[0-9a-f]{64}$/.test(v)) throw new UsageError(`--expect-last takes a line's hash (64 hex digits), got "${v.slice(0, 80)}"\n${USAGE}`)
      expectLast.push(v)
    } else if ((v = args.value('--from-export')) !== undefined) fromExport.push(resolve(v))
    else if (arg === '-h' || arg === '--help') return null
    else throw new UsageError(`unexpected argument ${arg}\n${USAGE}`)
  }
  return { dataDir: resolve(dataDir), expectLast, fromExport }
}

/** The audit keys from the master key the server would use (and the earlier ones it keeps), or null when none is at hand. */
function auditKeys(dataDir: string): AuditKeys | null {
  const key = masterKeyFromEnv(process.env) ?? readMasterKeyFile(join(dataDir, MASTER_KEY_FILE))
  if (!key) return null
  const accounts = readLoggedDocumentSync(join(dataDir, 'accounts.json'), ACCOUNTS_LISTS)
  const sealed = accounts === null ? [] : ((JSON.parse(accounts) as { auditKeys?: string[] }).auditKeys ?? [])
  return new Keyring(key).auditKeys(sealed)
}

/** The chains and audit keys of a database (the key from the environment only: none is kept beside a database). */
async function fromDatabase(url: string): Promise<{ chains: StoredAuditChain[]; keys: AuditKeys | null; where: string }> {
  // An operator command: a long read is not a request, so a generous bound.
  const db = new Database(url, { max: 1, timeoutMs: 60_000 })
  try {
    const chains = await readPgAuditChains(db)
    const key = masterKeyFromEnv(process.env)
    let keys: AuditKeys | null = null
    if (key) {
      const accounts = await loadDocument(db, ACCOUNTS_ID, ACCOUNTS_LISTS)
      const sealed = (accounts?.data as { auditKeys?: string[] } | null)?.auditKeys ?? []
      keys = new Keyring(key).auditKeys(sealed)
    }
    return { chains, keys, where: 'the database' }
  } finally {
    await db.close()
  }
}

const hashOf = (line: string) => lineEvent(line)?.hash ?? null

/** The lines of an export against the folder's logs: each must still be in the log that holds them, in order. */
function checkExport(path: string, chains: StoredAuditChain[]): string | null {
  const text = readFileSync(path, 'utf8')
  const exported = text.split('\n').filter((line) => line !== '')
  if (exported.length === 0) return `${path}: the export holds no lines`
  const hashes = exported.map(hashOf)
  const bad = hashes.indexOf(null)
  if (bad >= 0) return `${path}: line ${bad + 1} of the export is not an audit event`
  // The log holding the most of the exported lines is theirs.
  let best: { chain: StoredAuditChain; at: Map<string, number>; found: number } | null = null
  for (const chain of chains) {
    const at = new Map<string, number>()
    chain.lines.forEach((line, index) => {
      const hash = hashOf(line)
      if (hash) at.set(hash, index)
    })
    const found = hashes.filter((hash) => at.has(hash!)).length
    if (!best || found > best.found) best = { chain, at, found }
  }
  if (!best || best.found === 0) return `${path}: no log holds any of its ${exported.length} line(s): the log was removed or rewritten`
  const { chain, at } = best
  // Lines a compaction dropped since the export: only from the start, ending at the log's checkpoint.
  const firstFound = hashes.findIndex((hash) => at.has(hash!))
  if (firstFound > 0 && hashes[firstFound - 1] !== chain.anchor?.checkpoint) {
    return `${chain.file}: export line ${firstFound} (${hashes[firstFound - 1]!.slice(0, 12)}…) is no longer in the log, and no compaction dropped it: removed or rewritten`
  }
  for (let i = firstFound; i < exported.length; i++) {
    const index = at.get(hashes[i]!)
    if (index === undefined)
      return `${chain.file}: export line ${i + 1} (${hashes[i]!.slice(0, 12)}…) is no longer in the log: ${i === exported.length - 1 ? 'lines were removed from the end, or the end rewritten' : 'removed or rewritten'}`
    if (chain.lines[index] !== exported[i]) return `${chain.file}: line ${index + 1} differs from export line ${i + 1}: rewritten`
    if (i > firstFound && index !== at.get(hashes[i - 1]!)! + 1)
      return `${chain.file}: line ${index + 1} no longer follows the line before it in the export: lines were moved, inserted or removed`
  }
  return null
}

async function main(): Promise<number> {
  let args: ReturnType<typeof parseArgs>
  let databaseUrl: string | undefined
  try {
    args = parseArgs(process.argv.slice(2))
    databaseUrl = databaseUrlFromEnv(process.env)
  } catch (error) {
    console.error(`svc-vault audit-verify: ${(error as Error).message}`)
    return 1
  }
  if (!args) {
    console.log(USAGE)
    return 0
  }
  const { chains, keys, where } = databaseUrl
    ? await fromDatabase(databaseUrl)
    : {
        chains: readAuditChains(args.dataDir, (path) => readLoggedDocumentSync(path, VAULT_LISTS)),
        keys: auditKeys(args.dataDir),
        where: args.dataDir,
      }
  let broken = 0
  let unchecked = false
  for (const { chain, check } of verifyStoredChains(chains, keys)) {
    if (!check || !chain.anchor) {
      broken++
      console.log(`FAIL ${chain.file}: its chain's start value is missing (${chain.file === 'audit.log' ? 'audit.chain.json' : 'the vault file'} has none)`)
      continue
    }
    if (check.ok) {
      unchecked ||= check.unchecked
      const notes = [
        chain.anchor.checkpoint ? 'from a compaction checkpoint' : '',
        check.keyed > 0 ? (check.unchecked ? 'keyed lines NOT checked: no master key' : 'keyed') : 'unkeyed',
        chain.torn > 0 ? `${chain.torn} byte(s) of an unfinished line after the last one, never acknowledged` : '',
      ]
      console.log(`ok   ${chain.file}: ${check.lines} event(s), chain intact (${notes.filter(Boolean).join('; ')})`)
    } else {
      broken++
      console.log(`FAIL ${chain.file}: ${check.message}`)
    }
  }
  let outside = 0
  for (const hash of args.expectLast) {
    const holder = chains.find((chain) => chain.lines.some((line) => hashOf(line) === hash))
    if (holder) console.log(`ok   --expect-last ${hash.slice(0, 12)}…: line ${holder.lines.findIndex((line) => hashOf(line) === hash) + 1} of ${holder.file}`)
    else {
      outside++
      const compacted = chains.find((chain) => chain.anchor?.checkpoint === hash)
      console.log(
        compacted
          ? `ok   --expect-last ${hash.slice(0, 12)}…: ${compacted.file} was compacted from it`
          : `FAIL --expect-last ${hash.slice(0, 12)}…: no log holds this line any more: lines were removed from the end, or the log was rewritten or removed`,
      )
      if (compacted) outside--
    }
  }
  for (const file of args.fromExport) {
    const problem = checkExport(file, chains)
    if (problem) {
      outside++
      console.log(`FAIL --from-export ${problem}`)
    } else console.log(`ok   --from-export ${file}: every exported line is in its log, in order`)
  }
  if (chains.length === 0) console.log(`no audit logs in ${where}`)
  if (unchecked)
    console.log(
      databaseUrl
        ? 'note: no master key at hand (SVC_MASTER_KEY or SVC_MASTER_KEY_FILE): keyed lines were checked for order only, not for their MAC'
        : 'note: no master key at hand (SVC_MASTER_KEY, SVC_MASTER_KEY_FILE or <data>/master.key): keyed lines were checked for order only, not for their MAC',
    )
  console.log(broken === 0 ? `${chains.length} audit log(s) verified` : `${broken} of ${chains.length} audit log(s) failed verification`)
  if (outside > 0) console.log(`${outside} outside cop(ies) did not match`)
  return broken === 0 && outside === 0 ? 0 : 1
}

try {
  process.exit(await main())
} catch (error) {
  console.error(`svc-vault audit-verify: ${(error as Error)?.message ?? error}`)
  process.exit(1)
}
