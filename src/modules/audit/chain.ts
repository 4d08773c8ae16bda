// The hash chain of an audit log. Each line is one JSON event with `prev` (the hash of the line
// before it; the first line's is the chain's start value, or the checkpoint a compaction left)
// and, last, `hash`: the SHA-256 of the line's text without its `hash` member. An edited line no
// longer matches its own hash; a removed, reordered or re-hashed line breaks the next line's `prev`.
import { sha256Hex } from '../../crypto/tokens'
import type { SealedLine } from '../../store/audit-log'

const HASH_SUFFIX_LENGTH = ',"hash":"'.length + 64 + '"}'.length

/** The line for an event (an object serialized as JSON) chained from `prev`. */
export function sealLine(event: object, prev: string): SealedLine {
  const body = JSON.stringify({ ...event, prev })
  const hash = sha256Hex(body)
  return { text: `${body.slice(0, -1)},"hash":"${hash}"}`, hash }
}

export interface ParsedLine {
  event: Record<string, unknown> & { prev: string; hash: string; time?: string }
  /** The hash computed from the text (equal to event.hash when the line is intact). */
  computed: string
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
  return event
}

/** The line parsed, with the hash its text has, or null when it is not an event line of this format. */
export function parseLine(text: string): ParsedLine | null {
  const event = lineEvent(text)
  return event && { event, computed: sha256Hex(`${text.slice(0, -HASH_SUFFIX_LENGTH)}}`) }
}

/** What a chain starts from: a random start value, and the checkpoint a compaction recorded. */
export interface ChainAnchor {
  start: string
  checkpoint: string | null
  /**
   * A line known to be in the file (the last one at a clean stop, a compaction, or every few
   * hours): a file that no longer reaches it lost lines from its end.
   */
  head?: string | null
}

export type ChainCheck =
  | { ok: true; lines: number; head: string }
  | { ok: false; line: number; problem: 'malformed' | 'edited' | 'removed' | 'reordered'; message: string }

/** Checks every line of a log against its anchor; names the first line that breaks the chain. */
export function verifyChain(lines: string[], anchor: ChainAnchor): ChainCheck {
  const parsed = lines.map(parseLine)
  const lineOfHash = new Map<string, number>()
  parsed.forEach((line, index) => line && lineOfHash.set(line.event.hash, index))
  let expected = anchor.checkpoint ?? anchor.start
  let from = 0
  // A compaction recorded its checkpoint but was stopped before it replaced the file: the lines
  // up to the checkpoint are the ones it was dropping.
  if (anchor.checkpoint && parsed[0]?.event.prev !== anchor.checkpoint && lineOfHash.has(anchor.checkpoint)) {
    from = lineOfHash.get(anchor.checkpoint)! + 1
  }
  for (let index = from; index < lines.length; index++) {
    const line = parsed[index]
    const number = index + 1
    if (!line) return { ok: false, line: number, problem: 'malformed', message: `line ${number} is not an audit event (edited or damaged)` }
    if (line.computed !== line.event.hash) return { ok: false, line: number, problem: 'edited', message: `line ${number} was edited (it no longer matches its hash)` }
    if (line.event.prev !== expected) {
      const at = lineOfHash.get(line.event.prev)
      if (at !== undefined && at !== index - 1) {
        return { ok: false, line: number, problem: 'reordered', message: `line ${number} is out of order (it follows line ${at + 1})` }
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
  const recorded = anchor.head
  if (recorded && recorded !== (anchor.checkpoint ?? anchor.start) && !parsed.some((line, index) => index >= from && line?.event.hash === recorded)) {
    return {
      ok: false,
      line: lines.length + 1,
      problem: 'removed',
      message: `lines were removed from the end: the file no longer reaches the line ${recorded.slice(0, 12)}… recorded in the chain's anchor (it has ${lines.length} line(s))`,
    }
  }
  return { ok: true, lines: lines.length - from, head: expected }
}
