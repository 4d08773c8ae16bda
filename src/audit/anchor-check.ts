// Whether a log file still reaches its anchor, as the recorder asks when it opens a log.
import { join } from 'node:path'
import type { AuditKeys } from '../crypto/audit-mac'
import { readAuditLineEndingAt, readAuditLog, readJsonFile, SERVER_AUDIT_ANCHOR, SERVER_AUDIT_LOG } from '../store/audit-log'
import { parseLine, verifyChain, type ChainAnchor } from './chain'
import type { ChainBreak } from './events'

/**
 * The first open in a run (`verified` lacks the path) checks every line; a re-open (after the
 * vault was idle) checks the line at the anchor's byte length, and reads everything only when
 * that line is not the anchor's head.
 */
export function checkLogFile(
  path: string,
  anchor: ChainAnchor,
  context: { verified: Set<string>; mac: AuditKeys | null; dataDir: string },
): { ok: true; lines: number } | { ok: false; found: ChainBreak } {
  const { verified, mac } = context
  const base = anchor.checkpoint ?? anchor.start
  if (verified.has(path) && anchor.lines !== undefined && anchor.bytes !== undefined) {
    const quick = readAuditLineEndingAt(path, anchor.bytes)
    if (anchor.bytes === 0 && (anchor.head ?? base) === base && (quick !== null || anchor.lines === 0)) return { ok: true, lines: quick?.after ?? 0 }
    if (quick?.line != null && quick.line !== '' && anchor.head && parseLine(quick.line, mac)?.event.hash === anchor.head)
      return { ok: true, lines: anchor.lines + quick.after }
  }
  const file = readAuditLog(path)
  const serverAnchor = path.endsWith(`/${SERVER_AUDIT_LOG}`) ? null : readJsonFile<ChainAnchor>(join(context.dataDir, SERVER_AUDIT_ANCHOR))
  const check = verifyChain(file.lines, anchor, { keys: mac, keyedSince: serverAnchor?.keyedSince, torn: file.torn, missing: file.missing })
  if (!check.ok) return { ok: false, found: { problem: check.problem, line: check.line, message: check.message } }
  verified.add(path)
  return { ok: true, lines: check.lines }
}
