// Failed-login counting (docs/api.md): 10 failures for one e-mail or 50 from one client address
// within 15 minutes lock further attempts until the oldest failure leaves the window.
export const WINDOW_MS = 15 * 60_000
export const MAX_PER_EMAIL = 10
export const MAX_PER_CLIENT = 50

export class LoginThrottle {
  private readonly failures = new Map<string, number[]>()

  constructor(private readonly now: () => number = Date.now) {}

  /** Seconds until another attempt is allowed, or 0 when one is allowed now. */
  retryAfter(email: string, client: string): number {
    return Math.max(this.wait(`e:${email}`, MAX_PER_EMAIL), this.wait(`c:${client}`, MAX_PER_CLIENT))
  }

  recordFailure(email: string, client: string): void {
    for (const key of [`e:${email}`, `c:${client}`]) {
      const list = this.recent(key)
      list.push(this.now())
      this.failures.set(key, list)
    }
    if (this.failures.size > 100_000) this.prune()
  }

  recordSuccess(email: string): void {
    this.failures.delete(`e:${email}`)
  }

  private recent(key: string): number[] {
    const since = this.now() - WINDOW_MS
    return (this.failures.get(key) ?? []).filter((at) => at > since)
  }

  private wait(key: string, max: number): number {
    const list = this.recent(key)
    if (list.length < max) return 0
    const freeAt = list[list.length - max] + WINDOW_MS
    return Math.max(1, Math.ceil((freeAt - this.now()) / 1000))
  }

  private prune(): void {
    for (const key of this.failures.keys()) {
      if (this.recent(key).length === 0) this.failures.delete(key)
    }
  }
}
