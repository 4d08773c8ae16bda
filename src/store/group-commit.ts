// A document held in memory as plain data, whose commits share writes (group commit): one write
// at a time, and the commits that come meanwhile share the next one. The file store (document.ts)
// and the PostgreSQL store (postgres/document.ts) each give the write and the recovery after a
// failed one; what a commit waits for, and what a failure tells whom, is the same for both.
import { PendingChanges } from './changes'
import { createWriter, type Writer } from './writer'

/** A promise with its settling functions (a commit's batch; a refresh's place in a wave, postgres/document.ts). */
export interface Waiter {
  promise: Promise<void>
  resolve: () => void
  reject: (error: unknown) => void
}

export function waiter(): Waiter {
  let resolve!: () => void
  let reject!: (error: unknown) => void
  const promise = new Promise<void>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

export abstract class GroupCommit<T> {
  protected current: T = null as T
  /** What the writer changed since the last write began (the next write's changes). */
  protected readonly pending = new PendingChanges()
  protected readonly writer: Writer<T>
  private flushing: Promise<void> | null = null
  private next: Waiter | null = null
  private lazyTimer: ReturnType<typeof setTimeout> | null = null
  private readonly beforeWriteHooks: ((data: T, write: Writer<T>) => void)[] = []
  /** Set once the document was deleted: every later commit fails with this error, writing nothing. */
  private retiredBy: (() => Error) | null = null

  constructor(lists: readonly string[]) {
    this.writer = createWriter<T>(
      () => this.current,
      lists,
      (change) => this.pending.record(change),
    )
  }

  /**
   * Writes everything committed so far, taking `pending` synchronously (one instant: whatever
   * changes after it belongs to the next write). The beforeWrite hooks have just run.
   */
  protected abstract write(): Promise<void>

  /**
   * After a failed write, before its commits are told: the data goes back to what is durable
   * (and `pending` with it). Answers a promise when that takes a round trip; it must not reject.
   */
  protected abstract recover(error: unknown): void | Promise<void>

  get data(): T {
    return this.current
  }

  /** Applies a synchronous mutation now, written with the next commit (whoever makes it). */
  stage<R>(mutate: (data: T, write: Writer<T>) => R): R {
    return mutate(this.current, this.writer)
  }

  /** Resolves once the current in-memory data is durable; shares a write with concurrent callers. */
  commit(): Promise<void> {
    if (this.retiredBy) return Promise.reject(this.retiredBy())
    const batch = (this.next ??= waiter())
    if (!this.flushing) this.flush()
    return batch.promise
  }

  /** For bookkeeping that may become durable later (lastUsedAt): commits within `delayMs`. */
  commitSoon(delayMs: number): void {
    if (this.lazyTimer) return
    this.lazyTimer = setTimeout(() => {
      this.lazyTimer = null
      this.commit().catch(() => {})
    }, delayMs)
    this.lazyTimer.unref?.()
  }

  /**
   * Runs `apply` just before each write (synchronously, with the write): bookkeeping kept
   * outside the records until then (access keys' lastUsedAt) goes into them there.
   */
  beforeWrite(apply: (data: T, write: Writer<T>) => void): void {
    this.beforeWriteHooks.push(apply)
  }

  /** After the document was deleted: nothing writes it again (commits fail with `error()`). */
  retire(error: () => Error): void {
    this.retiredBy = error
    if (this.lazyTimer) clearTimeout(this.lazyTimer)
    this.lazyTimer = null
  }

  /** Waits for every write under way or queued. */
  async settle(): Promise<void> {
    if (this.lazyTimer) {
      clearTimeout(this.lazyTimer)
      this.lazyTimer = null
      await this.commit().catch(() => {})
    }
    while (this.flushing) await this.flushing.catch(() => {})
  }

  /** What `retire` was given, if the document was retired. */
  protected get retired(): (() => Error) | null {
    return this.retiredBy
  }

  /**
   * Drops what was staged, with the data it was made on, which is being replaced (read again):
   * the commits waiting to write it fail with `error` instead of resolving on a write without it.
   * (After a failed write, a reload that takes a round trip: updates made meanwhile were made on
   * the old data, and would otherwise be acknowledged unwritten.)
   */
  protected dropStaged(error: Error): void {
    this.pending.take()
    const waiting = this.next
    this.next = null
    waiting?.reject(error)
  }

  /** The write under way (settled once its commits were told), or null. */
  protected get writeUnderWay(): Promise<void> | null {
    return this.flushing
  }

  private flush(): void {
    const batch = this.next!
    this.next = null
    this.flushing = this.startWrite().then(
      () => batch.resolve(),
      (error) => this.fail(batch, error),
    )
    this.flushing.finally(() => {
      this.flushing = null
      if (this.next) this.flush()
    })
  }

  private startWrite(): Promise<void> {
    try {
      for (const apply of this.beforeWriteHooks) apply(this.current, this.writer)
      return this.write()
    } catch (error) {
      // Thrown before the write began (a hook): it failed like any write, and its commits are told.
      return Promise.reject(error)
    }
  }

  private fail(batch: Waiter, error: unknown): void | Promise<void> {
    // Everything not yet durable is dropped: the batch that failed and any queued behind it.
    const queued = this.next
    this.next = null
    // The data goes back to what is durable before anyone is told (an update may run again on it).
    const tell = () => {
      batch.reject(error)
      queued?.reject(error)
    }
    const recovered = this.recover(error)
    if (recovered) return recovered.then(tell)
    tell()
  }
}
