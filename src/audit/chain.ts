// The hash chain of an audit log (docs/audit.md, "The format"). Each line is one JSON event with
// `prev` (the `hash` of the line before it; the first line's is the chain's start value, or the
// checkpoint a compaction left) and, last, `hash`. A keyed line carries
// `"chain":"hmac-sha256"` and `"key":"<key id>"` after `prev`, and its `hash` is the HMAC-SHA-256
// of the line's text without its `hash` member under that audit key (crypto/audit-mac.ts); an older, unkeyed line's
// `hash` is the plain SHA-256 of that text. An edited line no longer matches its own hash; a
// removed, reordered or re-hashed line breaks the next line's `prev`; a re-hashed keyed line does
// not match its MAC without the master key; lines cut from the end no longer reach the anchor.
import type { AuditKeys } from '../crypto/audit-mac'
import { sha256Hex } from '../crypto/tokens'
import type { SealedLine } from '../store/audit-log'
import { SERVER_AUDIT_LOG, type StoredAuditChain } from '../store/audit-log-reader'

/** The value of `chain` on a keyed line. */
export const KEYED = 'hmac-sha256'
const HASH_SUFFIX_LENGTH = ',"hash":"'.length + 64 + '"}'.length

/** The line for an event (an object serialized as JSON) chained from `prev`; keyed with the current key when `keys` are given. */
export function sealLine(event: object, prev: string, keys?: Pick<AuditKeys, 'id' | 'mac'> | null): SealedLine {
  const body = JSON.stringify(keys ? { ...event, prev, chain: KEYED, key: keys.id } : { ...event, prev })
  const hash = keys ? keys.mac(body) : sha256Hex(body)
  return { text: `${body.slice(0, -1)},"hash":"${hash}"}`, hash }
}

export interface ParsedLine {
  event: Record<string, unknown> & { prev: string; hash: string; time?: string; chain?: string; key?: string }
  /** The hash computed from the text (equal to event.hash when the line is intact); null: a keyed line and no key at hand; '': keyed under a key not known. */
  computed: string | null
}

/** The line's event, or null when it is not an event line of this format (its hash not checked). */
export function lineEvent(text: string): ParsedLine['event'] | null {
  let event: ParsedLine['event']
  try {
    event = JSON.parse(text)
  } catch {
    return null
  }
  if (typeof event !== 'object' || event === null || typeof event.prev !== 'string' || typeof event.hash !== 'string') return null
  if (!text.endsWith(`,"hash":"${event.hash}"}`) || event.hash.length !== 64) return null
  if (event.chain !== undefined && (event.chain !== KEYED || typeof event.key !== 'string')) return null
  return event
}

/** The line parsed, with the hash its text has, or null when it is not an event line of this format. */
export function parseLine(text: string, keys?: Pick<AuditKeys, 'macs'> | null): ParsedLine | null {
  const event = lineEvent(text)
  if (!event) return null
  const body = `${text.slice(0, -HASH_SUFFIX_LENGTH)}}`
  if (event.chain !== KEYED) return { event, computed: sha256Hex(body) }
  if (!keys) return { event, computed: null }
  const mac = keys.macs.get(event.key!)
  return { event, computed: mac ? mac(body) : '' }
}

/** What a chain starts from and a line known to be in it: kept in the vault file (or audit.chain.json). */
export interface ChainAnchor {
  /** A random start value: the first line's `prev`. */
  start: string
  /** The `hash` of the last line a compaction dropped: the first kept line's `prev`. */
  checkpoint: string | null
  /**
   * A line known to be in the file (its `hash`; the start or checkpoint: none yet), recorded when
   * the server opens, closes or compacts the log: a file that no longer reaches it lost lines.
   */
  head?: string | null
  /** How many lines from the start (or checkpoint) up to and including `head`. */
  lines?: number
  /** Bytes of the file up to and including `head`'s line (the server's quick check at a re-open). */
  bytes?: number
  /** From this time (ISO 8601) on, every line is keyed: an unkeyed line written later was forged. */
  keyedSince?: string | null
}

export type ChainProblem = 'malformed' | 'edited' | 'removed' | 'reordered' | 'unkeyed' | 'cut' | 'missing' | 'rewritten'

export type ChainCheck =
  | { ok: true; lines: number; head: string; keyed: number; unchecked: boolean }
  | { ok: false; line: number; problem: ChainProblem; message: string }

export interface VerifyOptions {
  /** The audit keys (the current and earlier ones): keyed lines are checked only with them. */
  keys?: Pick<AuditKeys, 'macs'> | null
  /** The data folder's keying time (audit.chain.json), when the anchor does not say. */
  keyedSince?: string | null
  /** Bytes after the last whole line (a line cut short, or a crash's debris). */
  torn?: number
  /** The log file does not exist. */
  missing?: boolean
}

/** Checks every line of a log against its anchor; names the first line that breaks the chain. */
export function verifyChain(lines: string[], anchor: ChainAnchor, options: VerifyOptions = {}): ChainCheck {
  const keys = options.keys ?? null
  const rank = new Map([...(keys?.macs.keys() ?? [])].map((id, index) => [id, index]))
  let newest = -1
  const keyedSince = earliest(anchor.keyedSince, options.keyedSince)
  const parsed = lines.map((line) => parseLine(line, keys))
  const lineOfHash = new Map<string, number>()
  parsed.forEach((line, index) => line && lineOfHash.set(line.event.hash, index))
  let expected = anchor.checkpoint ?? anchor.start
  let from = 0
  // A compaction recorded its checkpoint but was stopped before it replaced the file: the lines
  // up to the checkpoint are the ones it was dropping.
  if (anchor.checkpoint && parsed[0]?.event.prev !== anchor.checkpoint && lineOfHash.has(anchor.checkpoint)) {
    from = lineOfHash.get(anchor.checkpoint)! + 1
  }
  let firstKeyed = 0
  let keyed = 0
  let unchecked = false
  for (let index = from; index < lines.length; index++) {
    const line = parsed[index]
    const number = index + 1
    if (!line) return { ok: false, line: number, problem: 'malformed', message: `line ${number} is not an audit event (rewritten or damaged)` }
    if (line.event.chain === KEYED) {
      keyed++
      firstKeyed ||= number
      if (line.computed === null) unchecked = true
      else if (line.computed === '') {
        return {
          ok: false,
          line: number,
          problem: 'edited',
          message: `line ${number} is keyed under a key this master key does not know (${line.event.key}): forged without the audit key`,
        }
      } else if (rank.get(line.event.key!)! < newest) {
        return {
          ok: false,
          line: number,
          problem: 'edited',
          message: `line ${number} is keyed under an earlier master key's audit key, after a line keyed under a later one: rewritten`,
        }
      } else if (line.computed !== line.event.hash) {
        return {
          ok: false,
          line: number,
          problem: 'edited',
          message: `line ${number} was edited: rewritten without the audit key (it no longer matches its MAC)`,
        }
      }
      if (line.computed) newest = Math.max(newest, rank.get(line.event.key!)!)
    } else {
      if (firstKeyed)
        return {
          ok: false,
          line: number,
          problem: 'unkeyed',
          message: `line ${number} is not keyed, though keying began at line ${firstKeyed}: rewritten without the audit key`,
        }
      if (keyedSince && typeof line.event.time === 'string' && line.event.time >= keyedSince) {
        return {
          ok: false,
          line: number,
          problem: 'unkeyed',
          message: `line ${number} is not keyed, though its time is after keying began (${keyedSince}): rewritten without the audit key`,
        }
      }
      if (line.computed !== line.event.hash)
        return { ok: false, line: number, problem: 'edited', message: `line ${number} was edited: rewritten (it no longer matches its hash)` }
    }
    if (line.event.prev !== expected) {
      const at = lineOfHash.get(line.event.prev)
      if (at !== undefined && at !== index - 1) {
        return {
          ok: false,
          line: number,
          problem: 'reordered',
          message: `line ${number} is out of order (it follows line ${at + 1}): lines were moved or replayed`,
        }
      }
      return {
        ok: false,
        line: number,
        problem: 'removed',
        message:
          index === from
            ? `line ${number} does not follow the chain's start: the lines before it were removed`
            : `line ${number} does not follow line ${number - 1}: a line between them was removed, or line ${number - 1} was rewritten`,
      }
    }
    expected = line.event.hash
  }
  const end = checkEnd(parsed, from, anchor, options)
  return end ?? { ok: true, lines: lines.length - from, head: expected, keyed, unchecked }
}

/** The file against the anchor's `head` (and its line count): lines removed or cut from the end, or the end rewritten. */
function checkEnd(parsed: (ParsedLine | null)[], from: number, anchor: ChainAnchor, options: VerifyOptions): ChainCheck | null {
  const recorded = anchor.head
  const count = parsed.length - from
  const torn = options.torn ?? 0
  if (!recorded || recorded === (anchor.checkpoint ?? anchor.start)) return null
  if (anchor.lines === undefined) {
    // An anchor from before line counts: the head anywhere in the file will do.
    if (parsed.some((line, index) => index >= from && line?.event.hash === recorded)) return null
    if (options.missing)
      return {
        ok: false,
        line: 1,
        problem: 'missing',
        message: `the log file is missing (removed), though its anchor records a line ${recorded.slice(0, 12)}…`,
      }
    return {
      ok: false,
      line: parsed.length + 1,
      problem: 'removed',
      message: `lines were removed from the end: the file no longer reaches the line ${recorded.slice(0, 12)}… recorded in the chain's anchor (it has ${count} line(s))`,
    }
  }
  const want = anchor.lines
  if (count >= want && parsed[from + want - 1]?.event.hash === recorded) return null
  const line = from + Math.min(count, want) + 1
  if (options.missing)
    return { ok: false, line: 1, problem: 'missing', message: `the log file is missing (removed), though its anchor records ${want} line(s)` }
  if (count === 0 && torn === 0)
    return { ok: false, line: 1, problem: 'removed', message: `the log is empty: all ${want} line(s) its anchor records were removed` }
  if (count < want) {
    if (torn > 0 && count === want - 1)
      return {
        ok: false,
        line,
        problem: 'cut',
        message: `the last line was cut: line ${line} has only ${torn} byte(s) and no end, though the anchor records ${want} whole line(s)`,
      }
    const also = torn > 0 ? ` and line ${line} was cut (${torn} byte(s) remain)` : ''
    return {
      ok: false,
      line,
      problem: 'removed',
      message: `lines were removed from the end: the file has ${count} whole line(s), its anchor records ${want} (${want - count} missing${also})`,
    }
  }
  return {
    ok: false,
    line: from + want,
    problem: 'rewritten',
    message: `the log was rewritten: line ${from + want} is not the line ${recorded.slice(0, 12)}… its anchor records there`,
  }
}

function earliest(a: string | null | undefined, b: string | null | undefined): string | null {
  if (!a) return b ?? null
  if (!b) return a
  return a < b ? a : b
}

/**
 * Every stored log against its anchor (audit-verify; migrate on its copy); the server log's keying
 * time holds for every log. `check` is null for a log whose anchor (its chain's start) is missing.
 */
export function verifyStoredChains(chains: readonly StoredAuditChain[], keys: AuditKeys | null): { chain: StoredAuditChain; check: ChainCheck | null }[] {
  const keyedSince = chains.find((chain) => chain.file === SERVER_AUDIT_LOG)?.anchor?.keyedSince
  return chains.map((chain) => ({
    chain,
    check: chain.anchor ? verifyChain(chain.lines, chain.anchor, { keys, keyedSince, torn: chain.torn, missing: chain.missing }) : null,
  }))
}
