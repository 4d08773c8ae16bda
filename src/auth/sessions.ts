// The accounts' sessions, indexed in memory: by the SHA-256 of the cookie token (only the hash is
// stored; a lookup is one Map hit), and per account, oldest first, so that no write walks every
// account's sessions. One index, kept in step with the document's list by this class only.
import { randomToken, sha256Hex } from '../crypto/tokens'
import type { AccountsDocument, SessionMethod, SessionRecord } from '../store/records'
import type { Writer } from '../store/writer'
import { admitSession, MAX_SESSIONS_PER_ACCOUNT, removeExpiredSessions } from '../store/sessions'

/** Live sessions one account may hold; the oldest goes when a new one starts (store/sessions.ts). */
export const MAX_SESSIONS_PER_USER = MAX_SESSIONS_PER_ACCOUNT
/** How often expired sessions of every account are swept out (each account's go at its next sign-in anyway). */
export const SESSION_SWEEP_MS = 60 * 60_000
/** lastSeenAt moves at most this often (a replaced record, staged), and reaches disk lazily (within LAST_SEEN_FLUSH_MS). */
const LAST_SEEN_STEP_MS = 60_000
export const LAST_SEEN_FLUSH_MS = 30_000

/** Where and how a session started: shown in the session list. */
export interface SessionMeta {
  client?: string
  userAgent?: string | null
  method?: SessionMethod
}

/** A new session for the user: the cookie token (returned once) and the record holding its hash. */
export function newSession(userId: string, meta: SessionMeta, now: number, ttlMs: number): { token: string; session: SessionRecord } {
  const token = randomToken(32)
  const at = new Date(now).toISOString()
  const session: SessionRecord = {
    id: crypto.randomUUID(),
    tokenHash: sha256Hex(token),
    userId,
    createdAt: at,
    expiresAt: new Date(now + ttlMs).toISOString(),
    lastSeenAt: at,
    clientAddress: meta.client ?? 'unknown',
    userAgent: (meta.userAgent ?? '').slice(0, 300),
    signInMethod: meta.method ?? 'password',
  }
  return { token, session }
}

export class SessionIndex {
  private readonly byHash = new Map<string, SessionRecord>()
  /**
   * Each account's sessions, oldest first. Built on the first session write rather than at start
   * (a pass over every session is start-up time on a large vault); null until then.
   */
  private byUserBuilt: Map<string, SessionRecord[]> | null = null
  private lastSweep: number

  constructor(
    /** The document's session list as it is now. */
    private readonly stored: () => readonly SessionRecord[],
    private readonly now: () => number,
  ) {
    this.lastSweep = now()
  }

  /** Indexes these sessions only (at start, and after a failed write reloaded the document). */
  reset(sessions: readonly SessionRecord[]): void {
    this.byHash.clear()
    this.byUserBuilt = null
    for (const session of sessions) this.byHash.set(session.tokenHash, session)
  }

  get(tokenHash: string): SessionRecord | undefined {
    return this.byHash.get(tokenHash)
  }

  private get byUser(): Map<string, SessionRecord[]> {
    if (this.byUserBuilt) return this.byUserBuilt
    const byUser = new Map<string, SessionRecord[]>()
    // The list is in creation order (sessions are pushed, removed in place, or filtered).
    for (const session of this.stored()) {
      const ofUser = byUser.get(session.userId)
      if (ofUser) ofUser.push(session)
      else byUser.set(session.userId, [session])
    }
    return (this.byUserBuilt = byUser)
  }

  /** The account's sessions, oldest first (expired ones included until they are removed). */
  ofUser(userId: string): readonly SessionRecord[] {
    return this.byUser.get(userId) ?? []
  }

  /** Adds a session; the account's expired sessions, and its oldest beyond the cap, leave with it. */
  admit(write: Writer<AccountsDocument>, session: SessionRecord): void {
    const now = this.now()
    let ofUser = this.byUser.get(session.userId)
    if (!ofUser) this.byUser.set(session.userId, (ofUser = []))
    for (const gone of admitSession(write.sessions, ofUser, session, now)) this.forget(gone.tokenHash)
    this.byHash.set(session.tokenHash, session)
    // Every account's: once in a while, one pass that logs a deletion per expired session.
    if (now - this.lastSweep >= SESSION_SWEEP_MS) {
      this.lastSweep = now
      for (const gone of removeExpiredSessions(write.sessions, now)) this.unindex(gone)
    }
  }

  remove(write: Writer<AccountsDocument>, session: SessionRecord): void {
    write.sessions.remove(session.id)
    this.unindex(session)
  }

  /** Ends every session of the user except the one with `keepHash`; answers how many ended. */
  removeAllOf(write: Writer<AccountsDocument>, userId: string, keepHash: string | null): number {
    let ended = 0
    for (const session of [...this.ofUser(userId)]) {
      if (session.tokenHash === keepHash) continue
      this.remove(write, session)
      ended++
    }
    return ended
  }

  /** Changes the stored session with this token hash (replaced whole); undefined when it ended. */
  replace(write: Writer<AccountsDocument>, tokenHash: string, fields: Partial<SessionRecord>): SessionRecord | undefined {
    const session = this.byHash.get(tokenHash)
    if (!session) return undefined
    const next = { ...session, ...fields }
    write.sessions.replace(next)
    this.reindex(session, next)
    return next
  }

  private reindex(session: SessionRecord, next: SessionRecord): void {
    this.byHash.set(next.tokenHash, next)
    const ofUser = this.byUserBuilt?.get(next.userId)
    const position = ofUser?.indexOf(session) ?? -1
    if (position >= 0) ofUser![position] = next
  }

  /** A session written by another instance (new, or replaced): indexed; each account's list is rebuilt when next needed. */
  takeIn(session: SessionRecord): void {
    this.byHash.set(session.tokenHash, session)
    this.byUserBuilt = null
  }

  /** Sessions other instances ended, by id: one pass over the index. */
  forgetIds(ids: ReadonlySet<string>): void {
    for (const [hash, session] of this.byHash) if (ids.has(session.id)) this.byHash.delete(hash)
    this.byUserBuilt = null
  }

  private forget(tokenHash: string): void {
    this.byHash.delete(tokenHash)
  }

  private unindex(session: SessionRecord): void {
    this.forget(session.tokenHash)
    const ofUser = this.byUser.get(session.userId)
    const at = ofUser?.indexOf(session) ?? -1
    if (at >= 0) ofUser!.splice(at, 1)
    if (ofUser?.length === 0) this.byUser.delete(session.userId)
  }

  /**
   * When a use now should move the session's lastSeenAt (at most once a minute per session):
   * the time to store, else null (the caller stages it: written with the next write, lazily).
   */
  seenDue(tokenHash: string): string | null {
    const now = this.now()
    const seen = this.byHash.get(tokenHash)?.lastSeenAt
    if (seen && now - Date.parse(seen) < LAST_SEEN_STEP_MS) return null
    return new Date(now).toISOString()
  }

  /** The user's live sessions, oldest first, with their latest use. */
  live(userId: string): SessionRecord[] {
    const now = this.now()
    return this.ofUser(userId).filter((s) => Date.parse(s.expiresAt) > now)
  }
}
