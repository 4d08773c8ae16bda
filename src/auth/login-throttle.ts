// Sign-in throttling (docs/api.md). Each attempt is counted BEFORE its password check, in one
// atomic step of the shared state (src/store/shared-state.ts; every instance on a database counts
// together), so parallel requests cannot all slip in under the limit; an attempt that turns out
// to be a success is taken back. Within 15 minutes:
// - 10 attempts for one e-mail from one client address (the strict limit: a stranger elsewhere
//   cannot lock the owner out with it),
// - 100 for one e-mail from all addresses together (the ceiling against spread-out guessing),
// - 50 from one client address, whatever the e-mail.
// Past any of them an attempt answers 429 until the oldest counted one leaves the window.
import { AppError } from '../http/errors'
import type { SharedState, WindowCounter } from '../store/shared-state'

export { SlidingWindow } from '../store/shared-state'

export const WINDOW_MS = 15 * 60_000
export const MAX_PER_EMAIL_AND_CLIENT = 10
export const MAX_PER_EMAIL = 100
export const MAX_PER_CLIENT = 50

/** The 429 answer of every limit in src/auth: `message` says which, Retry-After when to try again. */
export const tooManyAttempts = (message: string, retryAfterSeconds: number) =>
  new AppError(429, 'TOO_MANY_ATTEMPTS', message, { 'retry-after': String(retryAfterSeconds) })

/** An attempt counted before its check; `succeeded` takes it back. */
export interface Attempt {
  succeeded(): Promise<void> | void
}

export class LoginThrottle {
  private readonly attempts: WindowCounter

  /** Counts in the store's shared state: across instances on a database, in memory on the file store. */
  constructor(state: SharedState) {
    this.attempts = state.window('sign-in', WINDOW_MS)
  }

  private static keys(email: string, client: string) {
    return { pair: `p:${client}\u0000${email}`, email: `e:${email}`, client: `c:${client}` }
  }

  /**
   * Counts an attempt now, or answers how many seconds to wait when one of the limits is reached.
   * The check and the count are one step of the shared state (one statement on a database):
   * nothing can come between them, on this instance or another.
   */
  async begin(email: string, client: string): Promise<Attempt | { retryAfter: number }> {
    const keys = LoginThrottle.keys(email, client)
    const taken = await this.attempts.take([
      { key: keys.pair, max: MAX_PER_EMAIL_AND_CLIENT },
      { key: keys.email, max: MAX_PER_EMAIL },
      { key: keys.client, max: MAX_PER_CLIENT },
    ])
    if ('retryAfter' in taken) return taken
    return {
      succeeded: async () => {
        await this.attempts.remove([keys.pair, keys.email, keys.client], taken.at)
        // The owner got in from here: their own earlier mistakes from this address are forgotten;
        // failures from other addresses (someone else's guesses) still count toward the ceiling.
        await this.attempts.clear(keys.pair)
      },
    }
  }
}
