// svc run --mask: every secret value of 6 or more bytes in the child's output becomes ***.
// The output is scanned as bytes (a value may be split across two writes, or a chunk may end in
// the middle of a UTF-8 character), so the text is handled as latin1: one char per byte. Only a
// tail that could still be the start of a value is held back until the next chunk (or the end),
// so ordinary output passes at once. At each position the longest value wins.

export const MASK = '***'
export const MIN_MASKED_LENGTH = 6
/** Values are indexed by their first bytes; every masked value has at least this many. */
const PREFIX = MIN_MASKED_LENGTH

export class Masker {
  /** Values by their first PREFIX bytes, longest first. */
  private readonly byPrefix = new Map<string, string[]>()
  /** Every proper prefix shorter than PREFIX, to know whether a short tail must wait. */
  private readonly shortPrefixes = new Set<string>()
  private held = ''

  constructor(values: Iterable<string>) {
    const seen = new Set<string>()
    for (const value of values) {
      const bytes = Buffer.from(value, 'utf8').toString('latin1')
      if (bytes.length < MIN_MASKED_LENGTH || seen.has(bytes)) continue
      seen.add(bytes)
      const key = bytes.slice(0, PREFIX)
      const list = this.byPrefix.get(key) ?? []
      list.push(bytes)
      this.byPrefix.set(key, list)
      for (let n = 1; n < PREFIX; n++) this.shortPrefixes.add(bytes.slice(0, n))
    }
    for (const list of this.byPrefix.values()) list.sort((a, b) => b.length - a.length)
  }

  get active(): boolean {
    return this.byPrefix.size > 0
  }

  /** The masked bytes that can be written now; a possible start of a value is kept for later. */
  push(chunk: Uint8Array): Buffer {
    if (!this.active) return Buffer.from(chunk)
    return this.scan(this.held + Buffer.from(chunk).toString('latin1'), false)
  }

  /** Everything still held, masked: at the end of the stream. */
  end(): Buffer {
    const rest = this.held
    this.held = ''
    return rest === '' ? Buffer.alloc(0) : this.scan(rest, true)
  }

  private scan(text: string, final: boolean): Buffer {
    let out = ''
    let plainFrom = 0
    let i = 0
    this.held = ''
    while (i < text.length) {
      const remaining = text.length - i
      if (remaining < PREFIX) {
        if (!final && this.shortPrefixes.has(text.slice(i))) break
        i++
        continue
      }
      const candidates = this.byPrefix.get(text.slice(i, i + PREFIX))
      let matched = 0
      let wait = false
      if (candidates) {
        for (const value of candidates) {
          if (value.length <= remaining) {
            if (text.startsWith(value, i)) {
              matched = value.length
              break
            }
          } else if (!final && value.startsWith(text.slice(i))) {
            // A longer value may still complete with the next chunk.
            wait = true
            break
          }
        }
      }
      if (wait) break
      if (matched > 0) {
        out += text.slice(plainFrom, i) + MASK
        i += matched
        plainFrom = i
      } else {
        i++
      }
    }
    out += text.slice(plainFrom, i)
    this.held = text.slice(i)
    return Buffer.from(out, 'latin1')
  }
}
