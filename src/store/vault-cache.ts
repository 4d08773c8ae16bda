// The open vaults of a store (the file store's and PostgreSQL's alike): bounded by the active set,
// not by the number of users. A vault unused for `vaultIdleMs`, or the least recently used beyond
// `maxOpenVaults`, is closed (dropped from the cache; its data key is forgotten through
// `onVaultClosed`). Closing never races a request: a closed document stays reachable through a
// weak reference for as long as anything still holds it (a request between two awaits, a write
// under way, its audit log closing), and opening that vault again revives that same document
// instead of reading it again beside it. Only a document nothing holds any more is left to the
// garbage collector, so there is never more than one writer per vault in a process (two would
// each make the other's writes conflicts, or overwrite them).
import { DeletedVaultError } from './errors'

export const DEFAULT_MAX_OPEN_VAULTS = 1000
export const DEFAULT_VAULT_IDLE_MS = 10 * 60_000
const TOUCH_GRANULARITY_MS = 1000

/** What the cache needs of a vault document. */
export interface CacheableVault {
  /** Waits for every write under way or queued. */
  settle(): Promise<void>
  /** Makes every later write fail with `error` (the vault is deleted). */
  retire(error: () => Error): void
}

export interface VaultCacheOptions<D> {
  now: () => number
  /** Vaults kept open at most (least recently used closed first); default 1,000. */
  maxOpenVaults?: number
  /** A vault unused this long is closed at the next sweep; default 10 minutes. */
  vaultIdleMs?: number
  /** Called when a vault is closed (the data key cache forgets it). */
  onVaultClosed?: (userId: string) => void
  /** Whether a timer closes the idle vaults (not in read-only tools beside a live server). */
  sweep: boolean
  /**
   * Brings a cached (or revived) document up to date before each use: on PostgreSQL another
   * instance may have written it since. A document just opened is up to date already.
   */
  refresh?: (document: D) => Promise<void>
}

interface CachedVault<D> {
  /** The promise while it opens, the document once open. */
  document: D | Promise<D>
  usedAt: number
}

export class VaultCache<D extends CacheableVault> {
  /** Each open vault, least recently used first. */
  private readonly vaults = new Map<string, CachedVault<D>>()
  /** Closed vaults, reachable while something still holds them (see the top of this file). */
  private readonly closed = new Map<string, WeakRef<D>>()
  /**
   * Vaults deleted since start: never opened, so never created, again. Kept in memory only: what
   * could still reach them (device sign-ins, deliveries, late audit events) lives in memory too
   * and ends with the process; user ids are random UUIDs, never reused.
   */
  private readonly deleted = new Set<string>()
  private readonly forgetClosed = new FinalizationRegistry<string>((userId) => {
    if (this.closed.get(userId)?.deref() === undefined) this.closed.delete(userId)
  })
  private sweepTimer: ReturnType<typeof setInterval> | null = null

  constructor(private readonly options: VaultCacheOptions<D>) {
    if (options.sweep) {
      const idle = options.vaultIdleMs ?? DEFAULT_VAULT_IDLE_MS
      this.sweepTimer = setInterval(() => this.closeIdleVaults(), Math.min(Math.max(idle / 4, 1000), 60_000))
      this.sweepTimer.unref?.()
    }
  }

  /** How many vaults are open (a gauge for metrics). */
  get size(): number {
    return this.vaults.size
  }

  /** The open document (not one still opening), without marking it used. */
  peek(userId: string): D | undefined {
    const document = this.vaults.get(userId)?.document
    return document === undefined || document instanceof Promise ? undefined : document
  }

  /** The open document (not one still opening), marked used. */
  opened(userId: string): D | undefined {
    const cached = this.vaults.get(userId)
    if (!cached || cached.document instanceof Promise) return undefined
    this.touch(userId, cached)
    return cached.document
  }

  /** Every open document (not those still opening). */
  openDocuments(): D[] {
    const documents: D[] = []
    for (const [, cached] of this.vaults) if (!(cached.document instanceof Promise)) documents.push(cached.document)
    return documents
  }

  /**
   * The vault's document: the cached one, the closed one still held, or a new one from `open`
   * (called at once; what it throws, the caller gets). A vault deleted since start is refused.
   */
  vault(userId: string, open: () => Promise<D>): Promise<D> {
    if (this.deleted.has(userId)) return Promise.reject(new DeletedVaultError())
    const known = this.vaults.get(userId)
    if (known) {
      this.touch(userId, known)
      return this.fresh(known.document)
    }
    // Still held somewhere since it was closed: the same document, never a second one.
    const revived = this.closed.get(userId)?.deref()
    if (revived) {
      this.closed.delete(userId)
      this.vaults.set(userId, { document: revived, usedAt: this.options.now() })
      this.closeBeyondLimit()
      return this.fresh(revived)
    }
    const opening = open()
    const cached: CachedVault<D> = { document: opening, usedAt: this.options.now() }
    this.vaults.set(userId, cached)
    opening.then(
      (document) => {
        cached.document = document
        this.closeBeyondLimit()
      },
      () => {
        if (this.vaults.get(userId) === cached) this.vaults.delete(userId)
      },
    )
    return opening
  }

  private fresh(document: D | Promise<D>): Promise<D> {
    const refresh = this.options.refresh
    if (!refresh) return Promise.resolve(document)
    return (async () => {
      const ready = await document
      await refresh(ready)
      return ready
    })()
  }

  /**
   * Marks a vault used now: it moves to the end of the least-recently-used order. Within a
   * second of the last mark it stays where it is (the order is kept to the second): the hot
   * reads then skip the reordering.
   */
  private touch(userId: string, cached: CachedVault<D>): void {
    const now = this.options.now()
    if (now - cached.usedAt < TOUCH_GRANULARITY_MS) return
    cached.usedAt = now
    this.vaults.delete(userId)
    this.vaults.set(userId, cached)
  }

  /** Closes one open vault: out of the cache, its key forgotten; kept reachable while held. */
  private closeVault(userId: string, document: D): void {
    this.vaults.delete(userId)
    this.closed.set(userId, new WeakRef(document))
    this.forgetClosed.register(document, userId)
    this.options.onVaultClosed?.(userId)
    // Nothing to wait for: each write was durable before its request was answered.
  }

  /** Closes the least recently used vaults beyond the limit (still-opening ones stay). */
  private closeBeyondLimit(): void {
    let excess = this.vaults.size - (this.options.maxOpenVaults ?? DEFAULT_MAX_OPEN_VAULTS)
    for (const [userId, cached] of this.vaults) {
      if (excess <= 0) break
      if (cached.document instanceof Promise) continue
      this.closeVault(userId, cached.document)
      excess--
    }
  }

  /** Closes every vault unused for the idle time (run by a timer; tests call it with their clock). */
  closeIdleVaults(): number {
    const before = this.options.now() - (this.options.vaultIdleMs ?? DEFAULT_VAULT_IDLE_MS)
    let closed = 0
    for (const [userId, cached] of this.vaults) {
      // Least recently used first: the first one used since is where the idle ones end.
      if (cached.usedAt > before) break
      if (cached.document instanceof Promise) continue
      this.closeVault(userId, cached.document)
      closed++
    }
    return closed
  }

  /** Whether the vault was deleted since start (a pass over vaultIds() skips it). */
  wasDeleted(userId: string): boolean {
    return this.deleted.has(userId)
  }

  /** Found deleted where it is stored (another instance deleted it): refused from now on. */
  markDeleted(userId: string): void {
    this.deleted.add(userId)
  }

  /**
   * Deletes a vault here, before its store removes what it stored: refused from now on, out of
   * the cache, its writes under way finished, and a holder of its document (a delivery, an
   * audit anchor) can no longer write it back.
   */
  async delete(userId: string): Promise<void> {
    this.deleted.add(userId)
    const known = this.vaults.get(userId)?.document ?? this.closed.get(userId)?.deref()
    this.vaults.delete(userId)
    this.closed.delete(userId)
    const vault = known ? await Promise.resolve(known).catch(() => null) : null
    await vault?.settle()
    vault?.retire(() => new DeletedVaultError())
  }

  /**
   * Another instance deleted the vault: refused from now on, and its document (open or held)
   * takes no more writes. Nothing to settle: what it still writes fails against the deletion.
   */
  deletedElsewhere(userId: string): void {
    this.deleted.add(userId)
    this.peek(userId)?.retire(() => new DeletedVaultError())
    this.closed
      .get(userId)
      ?.deref()
      ?.retire(() => new DeletedVaultError())
    this.closed.delete(userId)
    if (this.vaults.delete(userId)) this.options.onVaultClosed?.(userId)
  }

  /** Stops the sweep timer (the store is closing). */
  stop(): void {
    if (this.sweepTimer) clearInterval(this.sweepTimer)
  }

  /**
   * Runs `finish` on each vault open, opening or closed but still held, one after another (a
   * clean stop: fold or settle); a vault that fails to open or to finish is passed over.
   */
  async finishAll(finish: (document: D) => Promise<unknown>): Promise<void> {
    const documents = [...[...this.vaults.values()].map((cached) => cached.document), ...[...this.closed.values()].map((ref) => ref.deref())]
    for (const known of documents) {
      const vault = await Promise.resolve(known).catch(() => null)
      if (vault) await finish(vault).catch(() => {})
    }
  }
}
