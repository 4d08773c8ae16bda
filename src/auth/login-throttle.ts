// Sign-in throttling (docs/api.md). Each attempt is counted BEFORE its password check,
// synchronously, so parallel requests cannot all slip in under the limit; an attempt that turns
// out to be a success is taken back. Within 15 minutes:
// - 10 attempts for one e-mail from one client address (the strict limit: a stranger elsewhere
//   cannot lock the owner out with it),
// - 100 for one e-mail from all addresses together (the ceiling against spread-out guessing),
// - 50 from one client address, whatever the e-mail.
// Past any of them an attempt answers 429 until the oldest counted one leaves the window.
import { AppError } from '../http/errors'

export const WINDOW_MS = 15 * 60_000
export const MAX_PER_EMAIL_AND_CLIENT = 10
export const MAX_PER_EMAIL = 100
export const MAX_PER_CLIENT = 50

/** The 429 answer of every limit in src/auth: `message` says which, Retry-After when to try again. */
export const tooManyAttempts = (message: string, retryAfterSeconds: number) =>
  new AppError(429, 'TOO_MANY_ATTEMPTS', message, { 'retry-after': String(retryAfterSeconds) })

/** A counter of events per key within a sliding window. */
export class SlidingWindow {
  private readonly events = new Map<string, number[]>()

  constructor(
    readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Seconds until one more event fits under `max` for this key, or 0 when it fits now. */
  wait(key: string, max: number): number {
    const list = this.recent(key)
    if (list.length < max) return 0
    const freeAt = list[list.length - max] + this.windowMs
    return Math.max(1, Math.ceil((freeAt - this.now()) / 1000))
  }

  /** Counts an event now and returns its time (to take it back with `remove`). */
  add(key: string): number {
    const at = this.now()
    const list = this.recent(key)
    list.push(at)
    this.events.set(key, list)
    if (this.events.size > 100_000) this.prune()
    return at
  }

  /** Takes back one event counted at `at`. */
  remove(key: string, at: number): void {
    const list = this.events.get(key)
    if (!list) return
    const index = list.lastIndexOf(at)
    if (index >= 0) list.splice(index, 1)
    if (list.length === 0) this.events.delete(key)
  }

  clear(key: string): void {
    this.events.delete(key)
  }

  private recent(key: string): number[] {
    const since = this.now() - this.windowMs
    return (this.events.get(key) ?? []).filter((at) => at > since)
  }

  private prune(): void {
    for (const key of this.events.keys()) {
      if (this.recent(key).length === 0) this.events.delete(key)
    }
  }
}

/** An attempt counted before its check; `succeeded` takes it back. */
export interface Attempt {
  succeeded(): void
}

export class LoginThrottle {
  private readonly attempts: SlidingWindow

  constructor(now: () => number = Date.now) {
    this.attempts = new SlidingWindow(WINDOW_MS, now)
  }

  private static keys(email: string, client: string) {
    return { pair: `p:${client}\u0000${email}`, email: `e:${email}`, client: `c:${client}` }
  }

  /** Seconds until another attempt is allowed, or 0 when one is allowed now. */
  retryAfter(email: string, client: string): number {
    const keys = LoginThrottle.keys(email, client)
    return Math.max(
      this.attempts.wait(keys.pair, MAX_PER_EMAIL_AND_CLIENT),
      this.attempts.wait(keys.email, MAX_PER_EMAIL),
      this.attempts.wait(keys.client, MAX_PER_CLIENT),
    )
  }

  /**
   * Counts an attempt now, or answers how many seconds to wait when one of the limits is reached.
   * Synchronous: nothing can run between the check and the count.
   */
  begin(email: string, client: string): Attempt | { retryAfter: number } {
    const wait = this.retryAfter(email, client)
    if (wait > 0) return { retryAfter: wait }
    const keys = LoginThrottle.keys(email, client)
    const counted = Object.values(keys).map((key) => [key, this.attempts.add(key)] as const)
    return {
      succeeded: () => {
        for (const [key, at] of counted) this.attempts.remove(key, at)
        // The owner got in from here: their own earlier mistakes from this address are forgotten;
        // failures from other addresses (someone else's guesses) still count toward the ceiling.
        this.attempts.clear(keys.pair)
      },
    }
  }
}
