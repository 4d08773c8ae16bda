// The audit log (issue 17): one event per action, appended to the user's `vaults/<user>.audit.log`
// (failed sign-ins for e-mails without an account: the server's `audit.log`), hash-chained
// (chain.ts), durable before the call resolves. A read of a secret awaits its event before it
// answers: when the event cannot be written, the request fails and the secret is not sent.
import { join } from 'node:path'
import type { AuthContext } from '../../auth/guard'
import type { Config } from '../../config'
import { randomBytes } from '../../crypto/tokens'
import { clientAddress, type PeerSource } from '../../http/client-address'
import type { Logger } from '../../http/error-handler'
import { AuditLogFile, deleteAuditLogFile, readAuditLinesBackwards, readFirstAuditLine, streamAuditLines, readJsonFile, SERVER_AUDIT_ANCHOR, SERVER_AUDIT_LOG, writeJsonFile, type DataSync } from '../../store/audit-log'
import { VAULTS_DIR, type Store } from '../../store/store'
import { freeDiskBytes } from '../../store/disk-space'
import type { Vaults } from '../vault-access'
import { lineEvent, parseLine, sealLine, type ChainAnchor } from './chain'
import type { AuditAction, AuditOutcome } from './model'
import { UnauthenticatedEvents } from './unauthenticated'

const USER_ID = /^[0-9a-f-]{36}$/
const COMPACT_EVERY_MS = 6 * 3_600_000
const MAX_USER_AGENT = 300
/** How long a reading of the free disk space is used (a flood of failed sign-ins asks on each). */
const DISK_CHECK_EVERY_MS = 1000

export const userAuditLogPath = (dataDir: string, userId: string) => {
  if (!USER_ID.test(userId)) throw new Error('invalid user id')
  return join(dataDir, VAULTS_DIR, `${userId}.audit.log`)
}

/** A line's event time in ms (NaN when the line is not an event with a time). */
function timeOf(line: string): number {
  try {
    return Date.parse((JSON.parse(line) as { time?: unknown }).time as string)
  } catch {
    return NaN
  }
}

export interface AuditRecordRef {
  kind: string
  id: string
  name: string | null
}

export interface AuditActor {
  type: 'session' | 'access-key' | 'anonymous' | 'device-login'
  id: string | null
  name: string | null
}

export interface AuditEvent {
  id: string
  time: string
  action: AuditAction
  outcome: AuditOutcome
  actor: AuditActor
  clientAddress: string
  userAgent: string | null
  records: AuditRecordRef[]
  details: Record<string, unknown>
}

/** Where a request came from: what every event of it carries besides the action. */
export interface AuditSource {
  request: Request
  server: PeerSource | null | undefined
}

export type SignInMethod = 'password' | 'oidc' | 'passkey' | '2fa'

export const ref = (kind: string, record: { id: string; name?: string | null }, name?: string | null): AuditRecordRef => ({
  kind,
  id: record.id,
  name: name ?? record.name ?? null,
})

export const actorOf = (auth: Pick<AuthContext, 'accessKey' | 'sessionTokenHash'> | null): AuditActor =>
  auth?.accessKey
    ? { type: 'access-key', id: auth.accessKey.id, name: auth.accessKey.name }
    : auth?.sessionTokenHash
      ? sessionActor(auth.sessionTokenHash)
      : { type: 'anonymous', id: null, name: null }

export const sessionActor = (tokenHash: string): AuditActor => ({ type: 'session', id: tokenHash.slice(0, 12), name: null })

interface OpenLog {
  file: AuditLogFile<AuditEvent>
  path: string
  /** Set while a compaction runs: appends wait for it. */
  gate: Promise<void> | null
  compactedAt: number
  readAnchor: () => ChainAnchor
  writeAnchor: (anchor: ChainAnchor) => Promise<void>
}

export interface AuditQueryInput {
  limit?: number
  cursor?: string
  action?: string
  actor?: string
  since?: string
  until?: string
}

export class AuditService {
  /** Events that could not be written (the metrics' "audit failures"). */
  failures = 0
  readonly enabled: boolean
  private readonly logs = new Map<string, Promise<OpenLog>>()
  /** The same logs once open (the readers' view of how far each is durable). */
  private readonly openLogs = new Map<string, OpenLog>()
  /** Logs being closed (their vault was closed): opening one again waits for it. */
  private readonly closing = new Map<string, Promise<void>>()
  private readonly timer: ReturnType<typeof setInterval> | null = null
  /** Events clients without an account can cause (failed sign-ins): budgeted, counted past it. */
  readonly unauthenticated: UnauthenticatedEvents
  private diskReading: { at: number; freeBytes: number | null } | null = null

  constructor(
    private readonly deps: {
      config: Pick<Config, 'trustProxy' | 'audit' | 'dataDir'> & Partial<Pick<Config, 'diskFloorBytes'>>
      store: Store
      vaults: Vaults
      now: () => number
      log: Logger
      dataSync?: DataSync
      /** Free bytes of the data folder's filesystem (tests stand in for a full disk). */
      freeBytes?: () => number | null
    },
  ) {
    this.enabled = deps.config.audit.enabled
    this.unauthenticated = new UnauthenticatedEvents({
      now: deps.now,
      write: (userId, event) => this.record(userId, event),
      diskLow: () => this.disk().low,
    })
    if (this.enabled) {
      this.timer = setInterval(() => void this.compactOpenLogs(), COMPACT_EVERY_MS)
      this.timer.unref?.()
    }
  }

  /** The event's common fields for a request: actor, client address, user agent. */
  origin(source: AuditSource, auth: Pick<AuthContext, 'accessKey' | 'sessionTokenHash'> | null) {
    const agent = source.request.headers.get('user-agent')
    return {
      actor: actorOf(auth),
      clientAddress: clientAddress(source.request, source.server, this.deps.config),
      userAgent: agent === null ? null : agent.slice(0, MAX_USER_AGENT),
    }
  }

  /**
   * Appends an event to the user's log (null: the server's log); resolves once it is on disk.
   * Rejects when it cannot be written: a caller about to send a secret must not send it then.
   */
  async record(
    userId: string | null,
    event: { action: AuditAction; outcome?: AuditOutcome; actor: AuditActor; clientAddress: string; userAgent: string | null; records?: AuditRecordRef[]; details?: Record<string, unknown> },
  ): Promise<void> {
    if (!this.enabled) return
    const full: AuditEvent = {
      id: crypto.randomUUID(),
      time: new Date(this.deps.now()).toISOString(),
      action: event.action,
      outcome: event.outcome ?? 'ok',
      actor: event.actor,
      clientAddress: event.clientAddress,
      userAgent: event.userAgent,
      records: event.records ?? [],
      details: event.details ?? {},
    }
    try {
      for (;;) {
        const opening = this.open(userId)
        const log = await opening
        if (log.gate) await log.gate
        // Closed meanwhile (its vault was closed): the next open waits for that and reads on.
        if (this.logs.get(userId ?? '') !== opening) continue
        await log.file.append(full)
        break
      }
    } catch (error) {
      this.failures++
      this.deps.log(`error: could not write the audit event ${full.action}: ${(error as Error)?.message ?? error}`)
      throw error
    }
  }

  /** Records an action of a signed-in caller (the routes' `audit` helper). */
  recordFor(auth: AuthContext, source: AuditSource, action: AuditAction, records: AuditRecordRef[] = [], details: Record<string, unknown> = {}, outcome: AuditOutcome = 'ok') {
    return this.record(auth.userId, { action, outcome, ...this.origin(source, auth), records, details })
  }

  /**
   * A sign-in attempt, for every sign-in method (password, oidc, passkey, 2fa). `userId` null: no
   * account has the e-mail (the server's log). `sessionTokenHash`: the session it started.
   */
  signIn(input: { userId: string | null; method: SignInMethod; ok: boolean; source: AuditSource; sessionTokenHash?: string | null; email?: string; reason?: string; outcome?: AuditOutcome }) {
    const origin = this.origin(input.source, null)
    const details: Record<string, unknown> & { method: string; reason?: string } = { method: input.method }
    if (input.reason) details.reason = input.reason
    // The e-mail tried, only in the server's log (the user's own log knows whose it is).
    const email = input.userId === null && input.email ? input.email.slice(0, 200) : undefined
    if (email !== undefined) details.email = email
    const event = {
      action: input.ok ? ('auth.login' as const) : ('auth.login_failed' as const),
      outcome: input.outcome ?? (input.ok ? ('ok' as const) : ('failed' as const)),
      ...origin,
      actor: input.sessionTokenHash ? sessionActor(input.sessionTokenHash) : origin.actor,
      records: input.userId ? [{ kind: 'user', id: input.userId, name: null }] : [],
      details,
    }
    if (input.ok) return this.record(input.userId, event)
    // A failure comes from anyone: budgeted per log, a throttled one only counted (unauthenticated.ts).
    if (!this.enabled) return Promise.resolve()
    const throttled = input.reason === 'throttled'
    return this.unauthenticated.add(input.userId, event, throttled, email)
  }

  /**
   * The data folder's free space against SVC_DISK_FLOOR: under it, nothing an unauthenticated
   * client causes is written (/metrics and /readyz say so). Read at most once a second.
   */
  disk(): { freeBytes: number | null; floorBytes: number; low: boolean } {
    const floorBytes = this.deps.config.diskFloorBytes ?? 0
    const at = performance.now()
    if (!this.diskReading || at - this.diskReading.at >= DISK_CHECK_EVERY_MS || this.deps.freeBytes) {
      this.diskReading = { at, freeBytes: this.deps.freeBytes ? this.deps.freeBytes() : freeDiskBytes(this.deps.config.dataDir) }
    }
    const { freeBytes } = this.diskReading
    return { freeBytes, floorBytes, low: floorBytes > 0 && freeBytes !== null && freeBytes < floorBytes }
  }

  // Best effort: the *Quietly methods never reject; a failure is only logged and counted (by
  // record). For events that must not undo what already happened (a session started, a logout),
  // and for refusals (nothing leaves). A read of a secret uses record or recordFor instead.

  /** Like record, best effort. */
  async recordQuietly(userId: string | null, event: Parameters<AuditService['record']>[1]): Promise<void> {
    await this.record(userId, event).catch(() => {})
  }

  /** Like recordFor, best effort. */
  async recordForQuietly(...args: Parameters<AuditService['recordFor']>): Promise<void> {
    await this.recordFor(...args).catch(() => {})
  }

  /** Like signIn, best effort. */
  async signInQuietly(input: Parameters<AuditService['signIn']>[0]): Promise<void> {
    await this.signIn(input).catch(() => {})
  }

  /** One page of the user's events, newest first (read from the end of the log, as far as needed). */
  async list(userId: string, query: AuditQueryInput): Promise<{ items: AuditEvent[]; nextCursor: string | null }> {
    // Failed sign-ins counted but not yet written are written first: the page shows their counts.
    await this.unauthenticated.flush(userId)
    const limit = query.limit ?? 50
    const since = query.since ? Date.parse(query.since) : -Infinity
    const until = query.until ? Date.parse(query.until) : Infinity
    const matches = (event: AuditEvent) => {
      if (query.action && event.action !== query.action) return false
      if (query.actor && event.actor.id !== query.actor && event.actor.type !== query.actor) return false
      const time = Date.parse(event.time)
      return !(time < since || time >= until)
    }
    const items: AuditEvent[] = []
    // Before the cursor's event is passed, nothing is taken (a cursor never given out: nothing).
    let passedCursor = !query.cursor
    // A further page only when an older event could still match.
    let more = false
    for await (const event of this.eventsNewestFirst(userId)) {
      if (!passedCursor) {
        passedCursor = event.id === query.cursor
        continue
      }
      if (!matches(event)) continue
      if (items.length === limit) {
        more = true
        break
      }
      items.push(event)
    }
    return { items, nextCursor: more && items.length > 0 ? items[items.length - 1].id : null }
  }

  /** The user's log as stored (JSON Lines), from `since` on, read as the client takes it. */
  exportLines(userId: string, since?: string): ReadableStream<Uint8Array> {
    const from = since ? Date.parse(since) : -Infinity
    // A line whose time cannot be read is kept: the export hides nothing the file holds.
    const keep = from === -Infinity ? undefined : (line: string) => !(timeOf(line) < from)
    return streamAuditLines(userAuditLogPath(this.deps.config.dataDir, userId), this.durableEnd(userId), keep)
  }

  /** How far the user's log may be read: a batch still syncing (and perhaps failing) is not shown. */
  private durableEnd(userId: string): number {
    const log = this.openLogs.get(userId)
    return log ? log.file.durableBytes : Infinity
  }

  private async *eventsNewestFirst(userId: string): AsyncGenerator<AuditEvent> {
    for await (const line of readAuditLinesBackwards(userAuditLogPath(this.deps.config.dataDir, userId), this.durableEnd(userId))) {
      // Listing does not check the chain (audit-verify does): no hash is computed.
      const parsed = lineEvent(line)
      if (!parsed) continue
      const { prev: _prev, hash: _hash, ...event } = parsed
      yield event as unknown as AuditEvent
    }
  }

  private open(userId: string | null): Promise<OpenLog> {
    const key = userId ?? ''
    let log = this.logs.get(key)
    if (!log) {
      const closing = this.closing.get(key)
      const opening = (closing ? closing.then(() => this.openLog(userId)) : this.openLog(userId)).then((open) => {
        if (this.logs.get(key) === opening) this.openLogs.set(key, open)
        return open
      })
      log = opening
      this.logs.set(key, opening)
      opening.catch(() => {
        if (this.logs.get(key) === opening) this.logs.delete(key)
      })
    }
    return log
  }

  private openLog(userId: string | null): Promise<OpenLog> {
    return userId === null ? this.openServerLog() : this.openUserLog(userId)
  }

  /**
   * Closes a user's log when the store closes their vault (idle, or beyond SVC_OPEN_VAULTS), so
   * that open files and memory follow the active users: what is queued is written first, and an
   * append that comes meanwhile opens it again once that is done.
   */
  closeUserLog(userId: string): void {
    const opening = this.logs.get(userId)
    if (!opening) return
    this.logs.delete(userId)
    this.openLogs.delete(userId)
    const closed: Promise<void> = (async () => {
      const log = await opening.catch(() => null)
      if (log?.gate) await log.gate
      await log?.file.close()
    })()
      .catch((error) => this.deps.log(`error: could not close the audit log of ${userId}: ${(error as Error).message}`))
      .finally(() => {
        if (this.closing.get(userId) === closed) this.closing.delete(userId)
      })
    this.closing.set(userId, closed)
  }

  private async openUserLog(userId: string): Promise<OpenLog> {
    const vault = await this.deps.vaults.open(userId)
    if (!vault.doc.data.auditChain) {
      await vault.doc.update((data) => {
        data.auditChain ??= { start: randomBytes(32).toString('hex'), checkpoint: null }
      })
    }
    return this.openFile(userAuditLogPath(this.deps.config.dataDir, userId), () => vault.doc.data.auditChain!, async (anchor) => {
      await vault.doc.update((data) => {
        data.auditChain = anchor
      })
    })
  }

  private async openServerLog(): Promise<OpenLog> {
    const anchorPath = join(this.deps.config.dataDir, SERVER_AUDIT_ANCHOR)
    let anchor = readJsonFile<ChainAnchor>(anchorPath)
    if (!anchor) {
      anchor = { start: randomBytes(32).toString('hex'), checkpoint: null }
      await writeJsonFile(anchorPath, anchor)
    }
    let current = anchor
    return this.openFile(join(this.deps.config.dataDir, SERVER_AUDIT_LOG), () => current, async (next) => {
      await writeJsonFile(anchorPath, next)
      current = next
    })
  }

  private async openFile(path: string, readAnchor: () => ChainAnchor, writeAnchor: (anchor: ChainAnchor) => Promise<void>): Promise<OpenLog> {
    const anchor = readAnchor()
    const file = AuditLogFile.open<AuditEvent>(path, (last) => (last === null ? null : parseLine(last))?.event.hash ?? anchor.checkpoint ?? anchor.start, sealLine, this.deps.dataSync)
    const log: OpenLog = { file, path, gate: null, compactedAt: 0, readAnchor, writeAnchor }
    await this.compact(log)
    return log
  }

  /** Drops the events older than SVC_AUDIT_RETENTION; the file then starts from a recorded checkpoint. */
  private async compact(log: OpenLog): Promise<void> {
    log.compactedAt = this.deps.now()
    await this.noteHead(log)
    const cutoff = this.deps.now() - this.deps.config.audit.retentionMs
    // Nothing to drop while the oldest event is recent (no read of the whole file).
    const first = readFirstAuditLine(log.path)
    if (first === null || !(Date.parse(parseLine(first)?.event.time ?? '') < cutoff)) return
    await log.file.dropBefore(
      (line) => !(timeOf(line) < cutoff),
      // The checkpoint is recorded first: should the rewrite not happen, the verifier finds the
      // checkpoint inside the old file and checks the chain from there.
      (lastDropped) => {
        const checkpoint = parseLine(lastDropped)?.event.hash
        // An old line that is not a chain line was edited: nothing is dropped (audit-verify names it).
        if (!checkpoint) throw new Error('a line to drop is not a chain line; run audit-verify')
        return log.writeAnchor({ ...log.readAnchor(), checkpoint, head: log.file.durableHead })
      },
    )
  }

  /** Compacts every open log (runs every few hours); appends wait meanwhile. */
  async compactOpenLogs(): Promise<void> {
    for (const opening of this.logs.values()) {
      const log = await opening.catch(() => null)
      if (!log || log.gate) continue
      log.gate = this.compact(log)
        .catch((error) => this.deps.log(`error: could not compact ${log.path}: ${(error as Error).message}`))
        .finally(() => {
          log.gate = null
        })
      await log.gate
    }
  }

  /** Records the log's last durable line in its anchor, so that cutting lines from its end shows. */
  private async noteHead(log: OpenLog): Promise<void> {
    const head = log.file.durableHead
    const anchor = log.readAnchor()
    if (anchor.head === head) return
    await log.writeAnchor({ ...anchor, head }).catch((error) => this.deps.log(`error: could not record the head of ${log.path}: ${(error as Error).message}`))
  }

  /** A deleted account's log goes with it: closed (pending lines written first) and removed. */
  async discard(userId: string): Promise<void> {
    this.unauthenticated.forget(userId)
    this.closeUserLog(userId)
    await this.closing.get(userId)
    deleteAuditLogFile(userAuditLogPath(this.deps.config.dataDir, userId))
  }

  /** Waits for every queued event and every log being closed (tests, shutdown). */
  async settle(): Promise<void> {
    await Promise.all(this.closing.values())
    for (const log of this.openLogs.values()) await log.file.settle()
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.unauthenticated.stop()
    // The counts of failed sign-ins not yet written go in before the logs close.
    await this.unauthenticated.flushAll().catch(() => {})
    for (const opening of this.logs.values()) {
      const log = await opening.catch(() => null)
      if (!log) continue
      await log.file.close()
      await this.noteHead(log)
    }
    await Promise.all(this.closing.values())
    this.logs.clear()
    this.openLogs.clear()
  }
}
