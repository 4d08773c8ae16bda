// The audit log: one event per action, appended to the user's `vaults/<user>.audit.log`
// (failed sign-ins for e-mails without an account: the server's `audit.log`), hash-chained
// (chain.ts), durable before the call resolves. A read of a secret awaits its event before it
// answers: when the event cannot be written, the request fails and the secret is not sent.
import type { Config } from '../config'
import { clientAddress } from '../http/client-address'
import type { Logger } from '../http/error-handler'
import type { AuditKeys } from '../crypto/audit-mac'
import type { DataSync } from '../store/audit-log'
import { FileAuditLogStore, newAnchor, type AnchorHolder, type AuditLog, type AuditLogStore } from '../store/audit-log-store'
import type { DataStore } from '../store/data-store'
import { freeDiskBytes } from '../store/disk-space'
import type { Vaults } from '../vault-access'
import { lineEvent, parseLine, sealLine, type ChainAnchor } from './chain'
import type { AuditAction } from './actions'
import type { AuditOutcome, AuditRecordRef } from './schema'
export type { AuditActor, AuditRecordRef } from './schema'
import { checkLog } from './anchor-check'
import { RepeatWindows } from './repeats'
import { UnauthenticatedEvents } from './unauthenticated'
import {
  actorOf,
  pageOf,
  sessionActor,
  timeOf,
  type AuditCaller,
  type AuditEvent,
  type AuditEventInput,
  type AuditQueryInput,
  type AuditSource,
  type ChainBreak,
  type SignInMethod,
} from './events'
export * from './events'

const COMPACT_EVERY_MS = 6 * 3_600_000
/** How often each log's head goes to the server's own log (a log collector keeps it). */
const HEAD_EVERY_MS = 3_600_000
const MAX_USER_AGENT = 300
/** How long a reading of the free disk space is used (a flood of failed sign-ins asks on each). */
const DISK_CHECK_EVERY_MS = 1000

export const userAuditLogPath = (dataDir: string, userId: string) => new FileAuditLogStore(dataDir).nameOf(userId)

interface OpenLog {
  file: AuditLog<AuditEvent>
  /** The file's path (on a database, the log's name): messages, and the logs checked in this run. */
  path: string
  /** The vault id (null: the server's log), for the head lines in the server's log. */
  userId: string | null
  /** The file no longer reaches its anchor: the anchor is kept as it was (never moved) until an operator looks. */
  broken: ChainBreak | null
  /** Set while a compaction runs: appends wait for it. */
  gate: Promise<void> | null
  /** The anchor being brought up to date (hourly): closing waits for it. */
  noting: Promise<void> | null
  compactedAt: number
}

export class AuditService {
  /** Events that could not be written (the metrics' "audit failures"). */
  failures = 0
  /** Logs found not to reach their anchor when opened (the metrics' "audit chain broken"). */
  chainBroken = 0
  /** Logs checked from their first line since this process started: a re-open checks the anchor's line only. */
  private readonly verified = new Set<string>()
  /** Breaks already recorded in this run (a re-open after idle does not record the same one again). */
  private readonly reported = new Map<string, ChainBreak>()
  /** Heads of logs closed since the last hourly line. */
  private readonly closedHeads = new Map<string, { head: string; lines: number }>()
  private readonly headTimer: ReturnType<typeof setInterval> | null = null
  /** Repeated reads of one token's code (repeats.ts). */
  private readonly repeats: RepeatWindows
  private readonly mac: AuditKeys | null
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
  /** Where the logs are kept: the data folder's files, or the database. */
  private readonly logStore: AuditLogStore

  constructor(
    private readonly deps: {
      config: Pick<Config, 'trustProxy' | 'audit' | 'dataDir'> & Partial<Pick<Config, 'diskFloorBytes'>>
      store: DataStore
      vaults: Vaults
      now: () => number
      log: Logger
      dataSync?: DataSync
      /** Gives the audit key's MAC (crypto/audit-mac.ts; the key stays in crypto/): lines are keyed with it; absent: unkeyed. */
      keyring?: { auditKeys(sealed?: readonly string[]): AuditKeys }
      /** Free bytes of the data folder's filesystem (tests stand in for a full disk). */
      freeBytes?: () => number | null
      /** Where the logs are kept (openVault gives the store's own); default: the data folder. */
      auditLogs?: (dataSync?: DataSync) => AuditLogStore
    },
  ) {
    this.enabled = deps.config.audit.enabled
    this.logStore = deps.auditLogs ? deps.auditLogs(deps.dataSync) : new FileAuditLogStore(deps.config.dataDir, deps.dataSync)
    this.repeats = new RepeatWindows({
      now: deps.now,
      record: (userId, event) => this.record(userId, event),
      recordQuietly: (userId, event) => this.recordQuietly(userId, event),
    })
    this.unauthenticated = new UnauthenticatedEvents({
      now: deps.now,
      write: (userId, event) => this.record(userId, event),
      diskLow: () => this.disk().low,
      state: deps.store.state,
    })
    // With the audit keys of earlier master keys (rotate-master-key keeps them in accounts.json).
    this.mac = deps.keyring?.auditKeys(deps.store.accounts.data.auditKeys ?? []) ?? null
    if (this.enabled) {
      this.timer = setInterval(() => void this.compactOpenLogs(), COMPACT_EVERY_MS)
      this.timer.unref?.()
      this.headTimer = setInterval(() => void this.logHeads(), HEAD_EVERY_MS)
      this.headTimer.unref?.()
    }
  }

  /**
   * Start-up: the server's anchor (audit.chain.json) records when keying began, so that a log
   * rewritten unkeyed later is caught even if its own anchor was rewritten too.
   */
  async start(): Promise<void> {
    if (!this.enabled || !this.mac) return
    const anchor = await this.logStore.serverAnchor()
    if (anchor?.keyedSince) return
    const log = this.openLogs.get('')
    const next: ChainAnchor = {
      ...(anchor ?? { start: newAnchor().start, checkpoint: null }),
      keyedSince: new Date(this.deps.now()).toISOString(),
    }
    if (log) await log.file.writeAnchor(next)
    else await this.logStore.writeServerAnchor(next)
  }

  /** The hash of the user's last durable line and how many lines lead there (GET /api/audit). */
  async headOf(userId: string): Promise<{ head: string; lines: number }> {
    const log = await this.open(userId)
    // Another instance on the same database may have appended since: the store's head, not this one's.
    return log.file.current()
  }

  /** The break opening the user's log found in this run, if any (the Activity page, the dashboard). */
  brokenOf(userId: string): ChainBreak | null {
    return this.reported.get(this.logStore.nameOf(userId)) ?? null
  }

  /**
   * One line per log in the server's own log: its vault id, head and line count (no user data), so
   * that a log collector holds anchors the data folder cannot rewrite (hourly and at shutdown).
   */
  async logHeads(): Promise<void> {
    const heads = new Map(this.closedHeads)
    this.closedHeads.clear()
    for (const [key, opening] of this.logs) {
      const log = await opening.catch(() => null)
      if (!log) continue
      if (!log.gate && !log.noting) {
        log.noting = this.noteHead(log).finally(() => {
          log.noting = null
        })
        await log.noting
      }
      heads.set(key, { head: log.file.durableHead, lines: log.file.durableLines })
    }
    for (const [key, { head, lines }] of heads) this.deps.log(`info: audit head ${key === '' ? 'server' : key} ${head} lines=${lines}`)
  }

  /** The event's common fields for a request: actor, client address, user agent. */
  origin(source: AuditSource, auth: AuditCaller | null) {
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
  async record(userId: string | null, event: AuditEventInput): Promise<void> {
    if (!this.enabled) return
    const full = this.fullEvent(event)
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
  recordFor(
    auth: AuditCaller & { userId: string },
    source: AuditSource,
    action: AuditAction,
    records: AuditRecordRef[] = [],
    details: Record<string, unknown> = {},
    outcome: AuditOutcome = 'ok',
  ) {
    const event = { action, outcome, ...this.origin(source, auth), records, details }
    // The 2FA page reads each token's code as it changes: a session's repeated reads are counted.
    // An HOTP reveal (its `counter` in details) uses up a new code each time: recorded one by one.
    if (action === 'twofa.reveal' && event.actor.type === 'session' && records.length === 1 && details.counter === undefined)
      return this.repeats.read(auth.userId, event)
    return this.record(auth.userId, event)
  }

  /** The count events of a user's windows of repeated reads still open (null: every user's), taken out. */
  private takeRepeats(userId: string | null): AuditEvent[] {
    return this.repeats.take(userId).map((event) => this.fullEvent(event))
  }

  private fullEvent(event: AuditEventInput): AuditEvent {
    return {
      id: event.id ?? crypto.randomUUID(),
      time: new Date(this.deps.now()).toISOString(),
      action: event.action,
      outcome: event.outcome ?? 'ok',
      actor: event.actor,
      clientAddress: event.clientAddress,
      userAgent: event.userAgent,
      records: event.records ?? [],
      details: event.details ?? {},
    }
  }

  /**
   * A sign-in attempt, for every sign-in method (password, oidc, passkey, 2fa). `userId` null: no
   * account has the e-mail (the server's log). `sessionTokenHash`: the session it started.
   */
  signIn(input: {
    userId: string | null
    method: SignInMethod
    ok: boolean
    source: AuditSource
    sessionTokenHash?: string | null
    email?: string
    reason?: string
    outcome?: AuditOutcome
  }) {
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
      // On a database nothing is written to the data folder: its disk is not the one to guard.
      const freeBytes = this.deps.freeBytes ? this.deps.freeBytes() : this.logStore.kind === 'file' ? freeDiskBytes(this.deps.config.dataDir) : null
      this.diskReading = { at, freeBytes }
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
    return pageOf(this.eventsNewestFirst(userId), query)
  }

  /** The user's log as stored (JSON Lines), from `since` on, read as the client takes it. */
  exportLines(userId: string, since?: string): ReadableStream<Uint8Array> {
    const from = since ? Date.parse(since) : -Infinity
    // A line whose time cannot be read is kept: the export hides nothing the file holds.
    const keep = from === -Infinity ? undefined : (line: string) => !(timeOf(line) < from)
    return this.logStore.stream(userId, this.durableEnd(userId), keep)
  }

  /** How far the user's log may be read: a batch still syncing (and perhaps failing) is not shown. */
  private durableEnd(userId: string): number {
    const log = this.openLogs.get(userId)
    return log ? log.file.durableBytes : Infinity
  }

  private async *eventsNewestFirst(userId: string): AsyncGenerator<AuditEvent> {
    for await (const line of this.logStore.linesBackwards(userId, this.durableEnd(userId))) {
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
  closeUserLog(userId: string, keepHead = true): void {
    const opening = this.logs.get(userId)
    if (!opening) return
    this.logs.delete(userId)
    this.openLogs.delete(userId)
    const closed: Promise<void> = (async () => {
      const log = await opening.catch(() => null)
      if (log?.gate) await log.gate
      if (log) for (const event of this.takeRepeats(userId)) void log.file.append(event).catch(() => this.failures++)
      await log?.file.close()
      if (log?.noting) await log.noting
      if (log && keepHead) {
        await this.noteHead(log)
        this.closedHeads.set(userId, { head: log.file.durableHead, lines: log.file.durableLines })
      }
    })()
      .catch((error) => this.deps.log(`error: could not close the audit log of ${userId}: ${(error as Error).message}`))
      .finally(() => {
        if (this.closing.get(userId) === closed) this.closing.delete(userId)
      })
    this.closing.set(userId, closed)
  }

  private async openUserLog(userId: string): Promise<OpenLog> {
    // A deleted vault's log is not opened again (DeletedVaultError).
    const vault = await this.deps.vaults.open(userId)
    // The file store keeps a vault's anchor in its document; the database, in the log's row.
    return this.openFile(userId, {
      read: () => vault.doc.data.auditChain,
      write: async (anchor) => {
        await vault.doc.update((_, write) => write.set('auditChain', anchor))
      },
    })
  }

  private openServerLog(): Promise<OpenLog> {
    return this.openFile(null)
  }

  private async openFile(userId: string | null, holder?: AnchorHolder): Promise<OpenLog> {
    const seal = (event: AuditEvent, prev: string) => sealLine(event, prev, this.mac)
    const file = await this.logStore.open<AuditEvent>(userId, {
      headOf: (last, anchor) => (last === null ? null : lineEvent(last))?.hash ?? anchor.checkpoint ?? anchor.start,
      seal,
      holder,
    })
    const anchor = file.anchor()
    const path = file.name
    // Checked before it is taken up: a torn last line is seen before opening cuts it.
    const check = await checkLog(file, anchor, { verified: this.verified, mac: this.mac, serverAnchor: () => this.logStore.serverAnchor() })
    await file.begin()
    const log: OpenLog = { file, path, userId, broken: null, gate: null, noting: null, compactedAt: 0 }
    if (check.ok) {
      file.durableLines = check.lines
      await this.compact(log)
      return log
    }
    // Never move the anchor silently: it stays as it was, and the log itself says what was found.
    log.broken = check.found
    file.durableLines = (await file.read()).lines.length
    const who = userId ?? 'server'
    this.deps.log(`error: the audit log of ${who} (${path}) does not reach its anchor: ${check.found.message}; its anchor is kept, run audit-verify`)
    const before = this.reported.get(path)
    if (before?.message === check.found.message) return log
    this.reported.set(path, check.found)
    this.chainBroken++
    await file.append({
      id: crypto.randomUUID(),
      time: new Date(this.deps.now()).toISOString(),
      action: 'chain.broken',
      outcome: 'failed',
      actor: { type: 'anonymous', id: null, name: 'svc-vault' },
      clientAddress: '',
      userAgent: null,
      records: [],
      details: {
        problem: check.found.problem,
        line: check.found.line,
        message: check.found.message,
        anchorLines: anchor.lines ?? null,
        anchorHead: anchor.head ?? null,
      },
    })
    return log
  }

  /** Drops the events older than SVC_AUDIT_RETENTION; the file then starts from a recorded checkpoint. */
  private async compact(log: OpenLog): Promise<void> {
    // A broken log keeps its anchor as it was (a compaction would move it).
    if (log.broken) return
    // An anchor write after a batch would otherwise land after the checkpoint and undo it.
    while (log.noting) await log.noting
    log.compactedAt = this.deps.now()
    await this.noteHead(log)
    const cutoff = this.deps.now() - this.deps.config.audit.retentionMs
    // Nothing to drop while the oldest event is recent (no read of the whole file).
    const first = await log.file.firstLine()
    if (first === null || !(Date.parse(parseLine(first)?.event.time ?? '') < cutoff)) return
    await log.file.dropBefore(
      (line) => !(timeOf(line) < cutoff),
      (lastDropped) => {
        const checkpoint = lineEvent(lastDropped)?.hash
        // An old line that is not a chain line was edited: nothing is dropped (audit-verify names it).
        if (!checkpoint) throw new Error('a line to drop is not a chain line; run audit-verify')
        return checkpoint
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

  /**
   * Records the log's last durable line in its anchor, with the lines and bytes up to it, so that
   * cutting lines from its end shows (at open, close, compaction and hourly). A broken log's anchor stays.
   */
  private async noteHead(log: OpenLog): Promise<void> {
    if (log.broken) return
    const head = log.file.durableHead
    const anchor = log.file.anchor()
    const keyedSince = anchor.keyedSince ?? (this.mac ? new Date(this.deps.now()).toISOString() : null)
    if (anchor.head === head && anchor.lines === log.file.durableLines && anchor.bytes === log.file.durableBytes && (anchor.keyedSince ?? null) === keyedSince)
      return
    await log.file
      .writeAnchor({ ...anchor, head, lines: log.file.durableLines, bytes: log.file.durableBytes, keyedSince })
      .catch((error) => this.deps.log(`error: could not record the head of ${log.path}: ${(error as Error).message}`))
  }

  /** A deleted account's log goes with it: closed (pending lines written first) and removed. */
  async discard(userId: string): Promise<void> {
    this.unauthenticated.forget(userId)
    // Its anchor goes with the vault: nothing to record.
    this.closeUserLog(userId, false)
    this.reported.delete(this.logStore.nameOf(userId))
    await this.closing.get(userId)
    await this.logStore.delete(userId)
  }

  /** Waits for every queued event and every log being closed (tests, shutdown). */
  async settle(): Promise<void> {
    await Promise.all(this.closing.values())
    for (const log of this.openLogs.values()) {
      await log.file.settle()
      while (log.noting) await log.noting
    }
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    if (this.headTimer) clearInterval(this.headTimer)
    this.unauthenticated.stop()
    // The counts of failed sign-ins not yet written go in before the logs close.
    await this.unauthenticated.flushAll().catch(() => {})
    for (const opening of this.logs.values()) {
      const log = await opening.catch(() => null)
      if (!log) continue
      if (log.userId !== null) for (const event of this.takeRepeats(log.userId)) void log.file.append(event).catch(() => this.failures++)
      await log.file.close()
      if (log.noting) await log.noting
      await this.noteHead(log)
    }
    await Promise.all(this.closing.values())
    // The heads at shutdown, for a log collector.
    if (this.enabled) await this.logHeads()
    this.logs.clear()
    this.openLogs.clear()
  }
}
