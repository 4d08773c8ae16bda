// The short-lived state the sign-in paths keep beside the documents: counters within a window
// (throttles, the sign-up limit), single-use markers and small entries with an expiry (used
// challenges, pending device sign-ins). The file store keeps it in memory (one process: nothing
// else could count); the PostgreSQL store keeps it in the database (postgres/state.ts) so that
// every instance counts the same attempts and a challenge is used once across all of them.
//
// Every operation is atomic on its own. The memory one answers synchronously (its check and
// count happen with nothing in between); the database one answers a promise. Callers await both.

/** A value now, or once the database answered. */
export type Maybe<T> = T | Promise<T>

/** A limit on one key: at most `max` events within the window. */
export interface Limit {
  key: string
  max: number
}

/** Counted: `at` takes it back (`remove`). */
export type Taken = { at: number } | { retryAfter: number }

/** Events per key within a sliding window. */
export interface WindowCounter {
  /**
   * Counts one event now under every key when each has fewer than its max within the window;
   * else counts nothing and answers the seconds until one more fits under all of them.
   */
  take(limits: readonly Limit[]): Maybe<Taken>
  /** Counts one event now, whatever the count; answers how many the window holds with it. */
  add(key: string): Maybe<{ at: number; count: number }>
  /** Seconds until one more event fits under `max` for this key, or 0 when it fits now. */
  wait(key: string, max: number): Maybe<number>
  /** Takes back one event counted at `at` under each key. */
  remove(keys: readonly string[], at: number): Maybe<void>
  /** Forgets every event of the key. */
  clear(key: string): Maybe<void>
}

/** A stored entry and its version (each change adds one: `replace` and `remove` check it). */
export interface Entry<T> {
  value: T
  version: number
}

/**
 * Small entries with an expiry, by key (keys may be secrets: the database store keeps only their
 * hashes; values must hold nothing secret). An expired entry is as good as absent.
 */
export interface Entries {
  get<T>(key: string): Maybe<Entry<T> | undefined>
  /** Stores the entry unless one is there (unexpired); answers whether it did: a claim of the key. */
  create<T>(key: string, value: T, expiresAt: number): Maybe<boolean>
  /** Replaces the entry if it is still at `version`; answers whether it did. */
  replace<T>(key: string, version: number, value: T, expiresAt?: number): Maybe<boolean>
  /** Deletes the entry (only at `version`, when given); answers whether it did: take-once. */
  remove(key: string, version?: number): Maybe<boolean>
  /** Adds `delta` to the key's number (0 when absent or expired) and answers it; the expiry is set when it starts. */
  increment(key: string, delta: number, expiresAt: number): Maybe<number>
}

export interface SharedState {
  /** Whether other instances share it (a database); false: this process only. */
  readonly shared: boolean
  /** The counter of one purpose (its own keys) with its window. */
  window(name: string, windowMs: number): WindowCounter
  /** The entries of one purpose (its own keys). */
  entries(name: string): Entries
  /**
   * Runs a background pass unless another instance runs the same one now (an advisory lock);
   * answers undefined when skipped. In memory: always runs.
   */
  exclusive<R>(name: string, pass: () => Promise<R>): Promise<R | undefined>
  close(): Promise<void>
}

/** Seconds until one more of `events` (ascending) fits under `max` within the window ending now. */
export function waitFor(events: readonly number[], max: number, windowMs: number, now: number): number {
  if (events.length < max) return 0
  const freeAt = events[events.length - max] + windowMs
  return Math.max(1, Math.ceil((freeAt - now) / 1000))
}

/** A counter of events per key within a sliding window, in memory (the file store's). */
export class SlidingWindow implements WindowCounter {
  private readonly events = new Map<string, number[]>()

  constructor(
    readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  take(limits: readonly Limit[]): Taken {
    let retryAfter = 0
    for (const { key, max } of limits) retryAfter = Math.max(retryAfter, this.wait(key, max))
    if (retryAfter > 0) return { retryAfter }
    let at = 0
    for (const { key } of limits) at = this.push(key)
    return { at }
  }

  add(key: string): { at: number; count: number } {
    const at = this.push(key)
    return { at, count: this.events.get(key)!.length }
  }

  wait(key: string, max: number): number {
    return waitFor(this.recent(key), max, this.windowMs, this.now())
  }

  remove(keys: readonly string[], at: number): void {
    for (const key of keys) {
      const list = this.events.get(key)
      if (!list) continue
      const index = list.lastIndexOf(at)
      if (index >= 0) list.splice(index, 1)
      if (list.length === 0) this.events.delete(key)
    }
  }

  clear(key: string): void {
    this.events.delete(key)
  }

  private push(key: string): number {
    const at = this.now()
    const list = this.recent(key)
    list.push(at)
    this.events.set(key, list)
    if (this.events.size > 100_000) this.prune()
    return at
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

interface MemoryEntry {
  value: unknown
  version: number
  expiresAt: number
  count: number
}

/** Entries in memory: a map, swept of expired ones when it grows. */
export class MemoryEntries implements Entries {
  private readonly map = new Map<string, MemoryEntry>()

  constructor(private readonly now: () => number) {}

  private live(key: string): MemoryEntry | undefined {
    const entry = this.map.get(key)
    if (entry && entry.expiresAt <= this.now()) {
      this.map.delete(key)
      return undefined
    }
    return entry
  }

  get<T>(key: string): Entry<T> | undefined {
    const entry = this.live(key)
    return entry && { value: entry.value as T, version: entry.version }
  }

  create<T>(key: string, value: T, expiresAt: number): boolean {
    if (this.live(key)) return false
    this.sweep()
    this.map.set(key, { value, version: 1, expiresAt, count: 0 })
    return true
  }

  replace<T>(key: string, version: number, value: T, expiresAt?: number): boolean {
    const entry = this.live(key)
    if (!entry || entry.version !== version) return false
    this.map.set(key, { ...entry, value, version: version + 1, expiresAt: expiresAt ?? entry.expiresAt })
    return true
  }

  remove(key: string, version?: number): boolean {
    const entry = this.live(key)
    if (!entry || (version !== undefined && entry.version !== version)) return false
    return this.map.delete(key)
  }

  increment(key: string, delta: number, expiresAt: number): number {
    let entry = this.live(key)
    if (!entry) {
      this.sweep()
      entry = { value: null, version: 1, expiresAt, count: 0 }
      this.map.set(key, entry)
    }
    entry.count += delta
    entry.version++
    return entry.count
  }

  private sweep(): void {
    if (this.map.size < 10_000) return
    const now = this.now()
    for (const [key, entry] of this.map) if (entry.expiresAt <= now) this.map.delete(key)
  }
}

/** The file store's shared state: this process's memory, as before there was a database store. */
export class MemoryState implements SharedState {
  readonly shared = false
  private readonly windows = new Map<string, SlidingWindow>()
  private readonly entryMaps = new Map<string, MemoryEntries>()

  constructor(private readonly now: () => number = Date.now) {}

  window(name: string, windowMs: number): SlidingWindow {
    const key = `${name}/${windowMs}`
    let counter = this.windows.get(key)
    if (!counter) this.windows.set(key, (counter = new SlidingWindow(windowMs, this.now)))
    return counter
  }

  entries(name: string): MemoryEntries {
    let entries = this.entryMaps.get(name)
    if (!entries) this.entryMaps.set(name, (entries = new MemoryEntries(this.now)))
    return entries
  }

  exclusive<R>(_name: string, pass: () => Promise<R>): Promise<R | undefined> {
    return pass()
  }

  async close(): Promise<void> {}
}
