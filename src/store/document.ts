// One JSON document on disk, held in memory by one lowdb `Low`. Mutations are synchronous on
// the in-memory data, then committed: concurrent commits share one atomic write and one fsync
// (group commit). When a write fails, the in-memory data goes back to what is on disk and
// every commit waiting on it fails, so no answer claims a write that is not durable.
import { readFileSync } from 'node:fs'
import { Low, type Adapter } from 'lowdb'
import { writeFileAtomic } from './atomic-file'

export class CorruptDocumentError extends Error {}

class DurableJsonAdapter<T> implements Adapter<T> {
  constructor(readonly path: string) {}

  // Read synchronously, as JSON.parse (the larger cost) runs after it anyway, and only once per
  // document and process: the asynchronous read's thread-pool path cost 0.4 MB of idle memory.
  async read(): Promise<T | null> {
    return this.readSync()
  }

  readSync(): T | null {
    try {
      return parseDocument<T>(this.path, readFileSync(this.path, 'utf8'))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw error
    }
  }

  async write(data: T): Promise<void> {
    await writeFileAtomic(this.path, JSON.stringify(data))
  }
}

function parseDocument<T>(path: string, text: string): T {
  try {
    return JSON.parse(text) as T
  } catch {
    throw new CorruptDocumentError(`${path} is not valid JSON; restore it from a backup`)
  }
}

interface Waiter {
  promise: Promise<void>
  resolve: () => void
  reject: (error: unknown) => void
}

function waiter(): Waiter {
  let resolve!: () => void
  let reject!: (error: unknown) => void
  const promise = new Promise<void>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

export interface DocumentOptions<T> {
  /** Data for a file that does not exist yet; it is written at once. */
  create: () => T
  /** Brings data of an older format up to the current one. */
  migrate?: (data: T) => T
  onWriteError?: (path: string, error: unknown) => void
  /** Called after a failed write put the in-memory data back to what is on disk. */
  onReload?: (data: T) => void
}

export class Document<T> {
  private readonly low: Low<T>
  private readonly adapter: DurableJsonAdapter<T>
  private flushing: Promise<void> | null = null
  private next: Waiter | null = null
  private lazyTimer: ReturnType<typeof setTimeout> | null = null

  private constructor(
    readonly path: string,
    private readonly options: DocumentOptions<T>,
  ) {
    this.adapter = new DurableJsonAdapter<T>(path)
    this.low = new Low<T>(this.adapter, null as T)
  }

  static async open<T>(path: string, options: DocumentOptions<T>): Promise<Document<T>> {
    const document = new Document<T>(path, options)
    await document.low.read()
    if (document.low.data === null || document.low.data === undefined) {
      document.low.data = options.create()
      await document.commit()
    } else if (options.migrate) {
      document.low.data = options.migrate(document.low.data)
    }
    return document
  }

  get data(): T {
    return this.low.data
  }

  /** Applies a synchronous mutation and resolves once it is on disk. */
  async update<R>(mutate: (data: T) => R): Promise<R> {
    const result = mutate(this.low.data)
    await this.commit()
    return result
  }

  /** Resolves once the current in-memory data is durable; shares a write with concurrent callers. */
  commit(): Promise<void> {
    const batch = (this.next ??= waiter())
    if (!this.flushing) this.flush()
    return batch.promise
  }

  /** For bookkeeping that may reach disk later (lastUsedAt): commits within `delayMs`. */
  commitSoon(delayMs: number): void {
    if (this.lazyTimer) return
    this.lazyTimer = setTimeout(() => {
      this.lazyTimer = null
      this.commit().catch(() => {})
    }, delayMs)
    this.lazyTimer.unref?.()
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

  private flush(): void {
    const batch = this.next!
    this.next = null
    const text = JSON.stringify(this.low.data)
    this.flushing = writeFileAtomic(this.path, text).then(
      () => batch.resolve(),
      (error) => this.fail(batch, error),
    )
    this.flushing.finally(() => {
      this.flushing = null
      if (this.next) this.flush()
    })
  }

  private fail(batch: Waiter, error: unknown): void {
    // Everything not yet durable is dropped: the batch that failed and any queued behind it.
    const queued = this.next
    this.next = null
    try {
      const onDisk = this.adapter.readSync()
      if (onDisk !== null) {
        this.low.data = this.options.migrate ? this.options.migrate(onDisk) : onDisk
        this.options.onReload?.(this.low.data)
      }
    } catch {
      // The file cannot be read either; keep serving what we have and let the next write retry.
    }
    this.options.onWriteError?.(this.path, error)
    batch.reject(error)
    queued?.reject(error)
  }
}
