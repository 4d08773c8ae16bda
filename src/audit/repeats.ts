// Repeated reads of one token's code by one session within REPEAT_WINDOW_MS: the first is
// recorded (durably, before its code leaves) with `count: 1`; the repeats are counted, and one
// more event gives their count (`count`: every read of the window, `repeatOf`: the first event)
// once the window is over: at the next read after it, or when the log is closed (idle,
// shutdown). A crash loses that count, never the first read.
import { REPEAT_WINDOW_MS, repeatSummary, type AuditEventInput, type RepeatWindow } from './events'
import type { AuditRecordRef } from './schema'

export class RepeatWindows {
  /** Open windows, by user, session and token. */
  private readonly open = new Map<string, RepeatWindow>()

  constructor(
    private readonly deps: {
      now: () => number
      record: (userId: string, event: AuditEventInput) => Promise<void>
      recordQuietly: (userId: string, event: AuditEventInput) => Promise<void>
    },
  ) {}

  /** Records a read, or counts it into the window its first read opened. */
  async read(userId: string, event: AuditEventInput & { records: AuditRecordRef[] }): Promise<void> {
    const key = `${userId}|${event.actor.id}|${event.records[0].id}`
    const now = this.deps.now()
    const open = this.open.get(key)
    if (open && now - open.first < REPEAT_WINDOW_MS) {
      // Not counted (nor answered) before the first read of the window is on disk.
      await open.recorded
      open.count++
      open.last = now
      open.event = event
      return
    }
    if (open) {
      this.open.delete(key)
      await this.deps.recordQuietly(userId, repeatSummary(open))
    }
    const id = crypto.randomUUID()
    const window: RepeatWindow = {
      userId,
      id,
      first: now,
      last: now,
      count: 1,
      event,
      recorded: this.deps.record(userId, { ...event, id, details: { ...event.details, count: 1 } }),
    }
    this.open.set(key, window)
    try {
      await window.recorded
    } catch (error) {
      if (this.open.get(key) === window) this.open.delete(key)
      throw error
    }
  }

  /** The count events of a user's windows still open (null: every user's), taken out of the list. */
  take(userId: string | null): AuditEventInput[] {
    const events: AuditEventInput[] = []
    for (const [key, window] of this.open) {
      if (userId !== null && window.userId !== userId) continue
      this.open.delete(key)
      if (window.count > 1) events.push(repeatSummary(window))
    }
    return events
  }
}
