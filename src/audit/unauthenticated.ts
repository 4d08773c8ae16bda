// Audit events that a client without an account or session can cause (failed sign-ins of every
// method), bounded: anyone on the internet could otherwise fill the disk through a
// victim's log, or through the server's `audit.log` with unknown e-mails.
// - A throttled attempt (429: no password was checked) is counted, not written: one summary event
//   per log, method and reason and per 15-minute window, with the count, the client addresses and
//   the first and last time.
// - Each log takes at most INDIVIDUAL_BUDGET single events of this kind an hour; past that, they
//   are counted into the summary as well. With a shared state (PostgreSQL: every instance on the
//   database) the budget is counted there, so that all instances together write at most that many;
//   each instance writes its own summaries of what it counted.
// - While the data folder's free space is under SVC_DISK_FLOOR, nothing of this kind is written:
//   the counts wait in memory (bounded) and in /metrics, and are written once there is room.
// A summary is written when its window ends (at the next attempt of its kind, or the minute's
// check), when the owner reads the log (so the Activity page shows the counts at once), and at
// shutdown.
import type { Entries, SharedState } from '../store/shared-state'
import type { AuditEvent } from './events'

/** Single events of unauthenticated clients per log per hour; the rest are counted. */
export const INDIVIDUAL_BUDGET = 20
export const BUDGET_WINDOW_MS = 60 * 60_000
/** A summary covers at most this long (the sign-in throttle's window). */
export const SUMMARY_WINDOW_MS = 15 * 60_000
/** Client addresses (and, in the server's log, e-mails) a summary names; the rest are counted. */
export const SUMMARY_ADDRESSES = 20
export const SUMMARY_EMAILS = 10
const MAX_USER_AGENT = 300
const FLUSH_EVERY_MS = 60_000

export type CountedBecause = 'throttled' | 'budget' | 'disk_low'

/** A failed sign-in as the gate gets it: an event without its id and time, naming its method. */
export type UnauthenticatedEvent = Omit<AuditEvent, 'id' | 'time' | 'details'> & { details: Record<string, unknown> & { method: string; reason?: string } }

interface Summary {
  userId: string | null
  event: UnauthenticatedEvent
  count: number
  addresses: Set<string>
  /** Attempts from addresses beyond those named. */
  fromOtherAddresses: number
  emails: Set<string>
  otherEmails: number
  firstAt: number
  lastAt: number
}

export interface UnauthenticatedDeps {
  now: () => number
  /** Appends an event to a log (null: the server's), durably; rejects when it cannot. */
  write: (userId: string | null, event: UnauthenticatedEvent) => Promise<void>
  /** Whether the data folder's free space is under the floor. */
  diskLow: () => boolean
  /** The store's shared state: when other instances share it, the budgets are counted there. */
  state?: SharedState
}

export class UnauthenticatedEvents {
  /** Attempts counted instead of written, by why (the metrics). */
  readonly counted: Record<CountedBecause, number> = { throttled: 0, budget: 0, disk_low: 0 }
  /** Open summaries, by log, method and reason. */
  private readonly summaries = new Map<string, Summary>()
  /** Single events written per log in the current hour (this process's own count). */
  private readonly budgets = new Map<string, { since: number; used: number }>()
  /** The same count shared by every instance (a database), when there is one. */
  private readonly sharedBudgets: Entries | null
  /** Summary writes under way, by log. */
  private readonly writing = new Map<string, Set<Promise<void>>>()
  private readonly timer: ReturnType<typeof setInterval>

  constructor(private readonly deps: UnauthenticatedDeps) {
    this.sharedBudgets = deps.state?.shared ? deps.state.entries('audit-unauthenticated-budget') : null
    this.timer = setInterval(() => void this.flushDue(), FLUSH_EVERY_MS)
    this.timer.unref?.()
  }

  /** Summaries not yet written (the metrics). */
  get pending(): number {
    return this.summaries.size
  }

  /**
   * Records one attempt: written as an event of its own while the log's budget lasts and the disk
   * has room, else counted into the log's summary. Resolves once written or counted; a failed
   * write is counted too (nothing is lost from the counts).
   */
  async add(userId: string | null, event: UnauthenticatedEvent, throttled: boolean, email?: string): Promise<void> {
    const now = this.deps.now()
    let because: CountedBecause | null = throttled ? 'throttled' : this.deps.diskLow() ? 'disk_low' : null
    try {
      if (because === null) {
        // In memory the budget is taken at once (in the order of the calls); shared, once the database answered.
        const spent = this.spend(userId, now)
        if (!(typeof spent === 'boolean' ? spent : await spent)) because = 'budget'
      }
      if (because === null) {
        await this.deps.write(userId, event)
        return
      }
      this.counted[because]++
    } catch {
      // Not written (or the shared budget could not be asked): counted instead, the summary tries again later.
    }
    // The same key's ended window is written here; other logs' by the minute's flushDue.
    this.count(userId, event, now, email)
  }

  /** Takes one of the log's single events for this hour; false when none is left. */
  private spend(userId: string | null, now: number): boolean | Promise<boolean> {
    const key = userId ?? ''
    // One count for all instances: the first of the hour starts it, each takes one (atomically).
    if (this.sharedBudgets) return Promise.resolve(this.sharedBudgets.increment(key, 1, now + BUDGET_WINDOW_MS)).then((used) => used <= INDIVIDUAL_BUDGET)
    let budget = this.budgets.get(key)
    if (!budget || now - budget.since >= BUDGET_WINDOW_MS || now < budget.since) {
      if (this.budgets.size > 100_000) this.pruneBudgets(now)
      this.budgets.set(key, (budget = { since: now, used: 0 }))
    }
    if (budget.used >= INDIVIDUAL_BUDGET) return false
    budget.used++
    return true
  }

  private pruneBudgets(now: number): void {
    for (const [key, budget] of this.budgets) if (now - budget.since >= BUDGET_WINDOW_MS) this.budgets.delete(key)
  }

  private static keyOf(userId: string | null, event: UnauthenticatedEvent): string {
    return `${userId ?? ''}\u0000${event.details.method}\u0000${event.details.reason ?? ''}\u0000${event.outcome}`
  }

  private count(userId: string | null, event: UnauthenticatedEvent, now: number, email?: string): void {
    const key = UnauthenticatedEvents.keyOf(userId, event)
    let summary = this.summaries.get(key)
    // A window that ended starts a new summary once the old one is written (flushDue); while the
    // disk is low, the old one goes on counting.
    if (summary && now - summary.firstAt >= SUMMARY_WINDOW_MS && !this.deps.diskLow()) {
      this.summaries.delete(key)
      void this.writeSummary(summary)
      summary = undefined
    }
    if (!summary) {
      summary = { userId, event, count: 0, addresses: new Set(), fromOtherAddresses: 0, emails: new Set(), otherEmails: 0, firstAt: now, lastAt: now }
      this.summaries.set(key, summary)
    }
    summary.count++
    summary.lastAt = Math.max(summary.lastAt, now)
    summary.event = event
    if (summary.addresses.has(event.clientAddress) || summary.addresses.size < SUMMARY_ADDRESSES) summary.addresses.add(event.clientAddress)
    else summary.fromOtherAddresses++
    if (email !== undefined) {
      if (summary.emails.has(email) || summary.emails.size < SUMMARY_EMAILS) summary.emails.add(email)
      else summary.otherEmails++
    }
  }

  /** A summary that could not be written goes back, merged into the open one of its key. */
  private restore(old: Summary): void {
    const key = UnauthenticatedEvents.keyOf(old.userId, old.event)
    const open = this.summaries.get(key)
    if (!open) {
      this.summaries.set(key, old)
      return
    }
    open.count += old.count
    open.firstAt = Math.min(open.firstAt, old.firstAt)
    open.fromOtherAddresses += old.fromOtherAddresses
    open.otherEmails += old.otherEmails
    for (const address of old.addresses) {
      if (open.addresses.has(address) || open.addresses.size < SUMMARY_ADDRESSES) open.addresses.add(address)
      else open.fromOtherAddresses++
    }
    for (const email of old.emails) {
      if (open.emails.has(email) || open.emails.size < SUMMARY_EMAILS) open.emails.add(email)
      else open.otherEmails++
    }
  }

  /** The summary as one event: the last attempt's fields, the counts in details. */
  private summaryEvent(summary: Summary): UnauthenticatedEvent {
    const { event } = summary
    const details: Record<string, unknown> & { method: string } = {
      method: event.details.method,
      ...(event.details.reason ? { reason: event.details.reason } : {}),
      summary: true,
      count: summary.count,
      addresses: [...summary.addresses],
      firstAt: new Date(summary.firstAt).toISOString(),
      lastAt: new Date(summary.lastAt).toISOString(),
    }
    if (summary.fromOtherAddresses > 0) details.fromOtherAddresses = summary.fromOtherAddresses
    if (summary.emails.size > 0) details.emails = [...summary.emails]
    if (summary.otherEmails > 0) details.otherEmails = summary.otherEmails
    return { ...event, userAgent: event.userAgent?.slice(0, MAX_USER_AGENT) ?? null, details }
  }

  private writeSummary(summary: Summary): Promise<void> {
    const key = summary.userId ?? ''
    // Not lost when the write fails: back into the log's open summary, written later.
    const written = this.deps.write(summary.userId, this.summaryEvent(summary)).catch(() => this.restore(summary))
    // A reader of this log waits for it (flush), even when another request started the write.
    const writing = this.writing.get(key) ?? new Set<Promise<void>>()
    writing.add(written)
    this.writing.set(key, writing)
    void written.finally(() => {
      writing.delete(written)
      if (writing.size === 0 && this.writing.get(key) === writing) this.writing.delete(key)
    })
    return written
  }

  /** Writes the summaries whose window ended (every minute). */
  async flushDue(): Promise<void> {
    const now = this.deps.now()
    await this.flushWhere((summary) => now - summary.firstAt >= SUMMARY_WINDOW_MS || now < summary.firstAt)
  }

  /** Writes the log's open summaries (before its owner reads it): the counts show at once. */
  async flush(userId: string | null): Promise<void> {
    await this.flushWhere((summary) => summary.userId === userId)
    await Promise.all(this.writing.get(userId ?? '') ?? [])
  }

  /** Writes every open summary (shutdown). */
  flushAll(): Promise<void> {
    return this.flushWhere(() => true)
  }

  private async flushWhere(due: (summary: Summary) => boolean): Promise<void> {
    if (this.deps.diskLow()) return
    const writes: Promise<void>[] = []
    for (const [key, summary] of this.summaries) {
      if (!due(summary)) continue
      this.summaries.delete(key)
      writes.push(this.writeSummary(summary))
    }
    await Promise.all(writes)
  }

  /** A deleted account: nothing of it is written any more (its log is gone). */
  forget(userId: string): void {
    for (const [key, summary] of this.summaries) if (summary.userId === userId) this.summaries.delete(key)
    this.budgets.delete(userId)
    // Expires within the hour anyway: a failure to delete it now changes nothing.
    if (this.sharedBudgets) void Promise.resolve(this.sharedBudgets.remove(userId)).catch(() => {})
  }

  stop(): void {
    clearInterval(this.timer)
  }
}
