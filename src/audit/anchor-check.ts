// Whether a log still reaches its anchor, as the recorder asks when it opens a log.
import type { AuditKeys } from '../crypto/audit-mac'
import type { AuditAnchor, AuditLog } from '../store/audit-log-store'
import { parseLine, verifyChain, type ChainAnchor } from './chain'
import type { ChainBreak } from './events'

/**
 * The first open in a run (`verified` lacks the log's name) checks every line; a re-open (after
 * the vault was idle) checks the line where the anchor says its head is (a file: at the anchor's
 * byte length), and reads everything only when that line is not the anchor's head.
 */
export async function checkLog(
  log: AuditLog<unknown>,
  anchor: ChainAnchor,
  context: { verified: Set<string>; mac: AuditKeys | null; serverAnchor: () => Promise<AuditAnchor | null> },
): Promise<{ ok: true; lines: number } | { ok: false; found: ChainBreak }> {
  const { verified, mac } = context
  const path = log.name
  const base = anchor.checkpoint ?? anchor.start
  if (verified.has(path) && anchor.lines !== undefined && anchor.bytes !== undefined) {
    const quick = await log.lineAtAnchor(anchor)
    if (anchor.bytes === 0 && (anchor.head ?? base) === base && (quick !== null || anchor.lines === 0)) return { ok: true, lines: quick?.after ?? 0 }
    if (quick?.line != null && quick.line !== '' && anchor.head && parseLine(quick.line, mac)?.event.hash === anchor.head)
      return { ok: true, lines: anchor.lines + quick.after }
  }
  const file = await log.read()
  // The server's keying time holds for every log (for the server's own log it is its anchor's).
  const serverAnchor = await context.serverAnchor()
  const check = verifyChain(file.lines, anchor, { keys: mac, keyedSince: serverAnchor?.keyedSince, torn: file.torn, missing: file.missing })
  if (!check.ok) return { ok: false, found: { problem: check.problem, line: check.line, message: check.message } }
  verified.add(path)
  return { ok: true, lines: check.lines }
}
