// Progress of a long operator run (migrate, rekey, backup and restore of a large folder). On a
// terminal one line on stderr is redrawn in place: records done of total, rate, time left. When
// stderr is not a terminal (a log, a pipe, a test) nothing is drawn: the run prints one summary
// line at the end instead, which is what a log keeps.

export interface ProgressStream {
  isTTY?: boolean
  write(text: string): unknown
}

export interface ProgressOptions {
  /** The command's name, leading each line ("migrate"). */
  label: string
  total: number
  /** What is counted; "records" by default. */
  unit?: string
  /** Where the line is drawn; process.stderr by default. */
  stream?: ProgressStream
  /** Where the summary line goes; console.log by default. */
  log?: (line: string) => void
  now?: () => number
  /** The least time between two redraws (a terminal need not be written to for every record). */
  redrawMs?: number
}

/** "3.2 s", "4 min 05 s", "2 h 01 min": a duration the way a person reads it. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, ms) / 1000
  if (seconds < 10) return `${seconds.toFixed(1)} s`
  if (seconds < 60) return `${Math.round(seconds)} s`
  const whole = Math.round(seconds)
  if (whole < 3600) return `${Math.floor(whole / 60)} min ${String(whole % 60).padStart(2, '0')} s`
  return `${Math.floor(whole / 3600)} h ${String(Math.floor((whole % 3600) / 60)).padStart(2, '0')} min`
}

/** Records per second, with a precision that suits its size. */
export function formatRate(perSecond: number): string {
  if (!Number.isFinite(perSecond)) return '–'
  return perSecond >= 100 ? String(Math.round(perSecond)) : perSecond.toFixed(1)
}

export class Progress {
  readonly label: string
  readonly unit: string
  private total: number
  private done = 0
  private readonly started: number
  /**
   * When the total became known, and what was done by then: the live rate and time left count
   * from there (reading a source before its size is known would make the first estimates absurd).
   */
  private measuredFrom: { at: number; done: number } | null = null
  private lastDraw = -Infinity
  private drawn = false
  private finished = false
  private readonly stream: ProgressStream
  private readonly log: (line: string) => void
  private readonly now: () => number
  private readonly redrawMs: number

  constructor(options: ProgressOptions) {
    this.label = options.label
    this.unit = options.unit ?? 'records'
    this.total = Math.max(0, options.total)
    this.stream = options.stream ?? process.stderr
    this.log = options.log ?? ((line) => console.log(line))
    this.now = options.now ?? (() => performance.now())
    this.redrawMs = options.redrawMs ?? 100
    this.started = this.now()
    if (this.total > 0) this.measuredFrom = { at: this.started, done: 0 }
  }

  /** Whether lines are redrawn (stderr is a terminal). */
  get live(): boolean {
    return this.stream.isTTY === true
  }

  get count(): number {
    return this.done
  }

  /** The total may grow as a run finds more to do (audit logs after the documents). */
  setTotal(total: number): void {
    this.total = Math.max(total, this.done)
    if (this.measuredFrom === null && total > 0) this.measuredFrom = { at: this.now(), done: this.done }
  }

  /** `count` more records done. */
  advance(count = 1): void {
    this.done += count
    if (this.done > this.total) this.total = this.done
    if (!this.live || this.finished) return
    const now = this.now()
    if (now - this.lastDraw < this.redrawMs && this.done < this.total) return
    this.lastDraw = now
    this.drawn = true
    this.stream.write(`\r\x1b[K${this.line(now)}`)
  }

  /** The line drawn: "migrate: 120 of 5000 records (2%), 310 records/s, about 16 s left". */
  line(now = this.now()): string {
    const from = this.measuredFrom ?? { at: this.started, done: 0 }
    const elapsed = now - from.at
    const rate = elapsed > 0 ? ((this.done - from.done) * 1000) / elapsed : Number.POSITIVE_INFINITY
    const percent = this.total > 0 ? Math.floor((this.done * 100) / this.total) : 100
    const left = rate > 0 && Number.isFinite(rate) ? `about ${formatDuration(((this.total - this.done) / rate) * 1000)} left` : 'time left unknown'
    return `${this.label}: ${this.done} of ${this.total} ${this.unit} (${percent}%), ${formatRate(rate)} ${this.unit}/s, ${left}`
  }

  /**
   * The run is over: the drawn line is cleared and one summary line printed,
   * "migrate: 5000 records in 16 s (310 records/s)" plus `detail`. Returns that line.
   */
  finish(detail = ''): string {
    if (this.finished) return ''
    this.finished = true
    const elapsed = this.now() - this.started
    if (this.drawn) this.stream.write('\r\x1b[K')
    const rate = elapsed > 0 ? (this.done * 1000) / elapsed : Number.POSITIVE_INFINITY
    const summary = `${this.label}: ${this.done} ${this.unit} in ${formatDuration(elapsed)} (${formatRate(rate)} ${this.unit}/s)${detail ? `; ${detail}` : ''}`
    this.log(summary)
    return summary
  }

  /** A run that failed: the drawn line is cleared so that the error starts a line of its own. */
  abandon(): void {
    if (this.finished) return
    this.finished = true
    if (this.drawn) this.stream.write('\r\x1b[K')
  }
}
