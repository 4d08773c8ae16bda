// Users and sessions, kept in the accounts document and indexed in memory. Only SHA-256 of a
// session token is stored; a lookup is one Map hit plus an expiry check. Writes touch only the
// records they change (the document logs changes: store/changes.ts), and each account's sessions
// are indexed apart, so no write walks every account's sessions.
import type { Config } from '../config'
import { constantTimeEqual, randomToken, sha256Hex } from '../crypto/tokens'
import { AppError } from '../http/errors'
import type { StoredDocument } from '../store/data-store'
import { removeRecord, replaceRecord, replaceRecords } from '../store/by-id'
import type { AccountsDocument, SessionRecord, SignInMethod, UserRecord } from '../store/records'
import { admitSession, MAX_SESSIONS_PER_ACCOUNT, removeExpiredSessions } from '../store/sessions'
import { LoginThrottle, SlidingWindow } from './login-throttle'

export const REGISTER_WINDOW_MS = 60 * 60_000
/** Live sessions one account may hold; the oldest goes when a new one starts (issue 16; store/sessions.ts). */
export const MAX_SESSIONS_PER_USER = MAX_SESSIONS_PER_ACCOUNT
/** How often expired sessions of every account are swept out (each account's go at its next sign-in anyway). */
export const SESSION_SWEEP_MS = 60 * 60_000
/** lastSeenAt moves at most this often, and reaches disk lazily (within LAST_SEEN_FLUSH_MS). */
const LAST_SEEN_STEP_MS = 60_000
const LAST_SEEN_FLUSH_MS = 30_000
/**
 * A sign-in, or a re-authentication (POST /api/auth/reauth), this recent counts as a fresh proof
 * (issue 36: what outlives a session; a first password; account deletion).
 */
export const FRESH_SIGN_IN_MS = 10 * 60_000

/** Where and how a session started: shown in the session list. */
export interface SessionMeta {
  client?: string
  userAgent?: string | null
  method?: SignInMethod
}

export interface PublicUser {
  id: string
  email: string
  name: string | null
  createdAt: string
}

export const publicUser = (user: UserRecord): PublicUser => ({
  id: user.id,
  email: user.email,
  name: user.name,
  createdAt: user.createdAt,
})

/** The user as GET /api/auth/me shows them: with whether two-factor sign-in is on (issue 16). */
export const signedInUser = (user: UserRecord): PublicUser & { twoFactorEnabled: boolean; recoveryCodesLeft?: number } => ({
  ...publicUser(user),
  twoFactorEnabled: Boolean(user.twoFactor),
  // Issue 32: how many unused recovery codes remain, so a person knows when to make new ones.
  ...(user.twoFactor ? { recoveryCodesLeft: user.twoFactor.recoveryCodeHashes.length } : {}),
})

export const normalizeEmail = (email: string) => email.trim().toLowerCase()

// Verified against for unknown e-mails, so a login costs the same whether or not the account exists.
// Made on first use, not at start-up (start-up time counts on small machines).
let dummyHash: Promise<string> | undefined
const getDummyHash = () => (dummyHash ??= Bun.password.hash('svc-vault-dummy-password', 'argon2id'))

export interface SignedIn {
  user: UserRecord
  /** The cookie token; returned once, stored only as its hash. */
  token: string
  expiresAt: Date
}

export class Accounts {
  private readonly usersById = new Map<string, UserRecord>()
  private readonly usersByEmail = new Map<string, UserRecord>()
  /** By identity-provider issuer and subject: a single sign-on does not scan every user. */
  private readonly usersByIdentity = new Map<string, UserRecord>()
  /** Owner of each passkey by its WebAuthn credential id: an anonymous passkey attempt does not scan every user. */
  private readonly usersByCredential = new Map<string, UserRecord>()
  /** Told, after its write, that an account was deleted (pending device sign-ins, the notifier). */
  private readonly removedListeners: ((userId: string) => void)[] = []
  private readonly sessions = new Map<string, SessionRecord>()
  /**
   * Each account's sessions, oldest first. Built on the first session write rather than at start
   * (a pass over every session is start-up time on a large vault); null until then.
   */
  private byUser: Map<string, SessionRecord[]> | null = null
  private lastSweep: number
  /**
   * Uses not yet in the stored sessions (frozen: store/changes.ts), by token hash: the session
   * list shows them at once; they go into the records with the document's next write.
   */
  private readonly lastSeen = new Map<string, string>()
  readonly throttle: LoginThrottle
  /** Accounts created per client address in the last hour (SVC_REGISTER_LIMIT). */
  private readonly registrations: SlidingWindow
  /** Password hashes verified so far (tests count them: the throttle must act before them). */
  passwordChecks = 0

  constructor(
    private readonly doc: StoredDocument<AccountsDocument>,
    private readonly config: Pick<Config, 'signup' | 'sessionTtlMs'> & Partial<Pick<Config, 'registerLimit'>>,
    private readonly now: () => number = Date.now,
  ) {
    this.throttle = new LoginThrottle(now)
    this.registrations = new SlidingWindow(REGISTER_WINDOW_MS, now)
    this.lastSweep = now()
    this.reindex(doc.data)
    doc.beforeWrite((data) => this.storeLastSeen(data))
  }

  /** Rebuilds the indexes from the document (at start, and after a failed write reloaded it). */
  reindex(data: AccountsDocument): void {
    this.usersById.clear()
    this.usersByEmail.clear()
    this.usersByIdentity.clear()
    this.usersByCredential.clear()
    this.sessions.clear()
    this.byUser = null
    for (const user of data.users) this.indexUser(user)
    for (const session of data.sessions) this.sessions.set(session.tokenHash, session)
  }

  private get sessionsByUser(): Map<string, SessionRecord[]> {
    if (this.byUser) return this.byUser
    const byUser = new Map<string, SessionRecord[]>()
    // The list is in creation order (sessions are pushed, removed in place, or filtered).
    for (const session of this.doc.data.sessions) {
      const ofUser = byUser.get(session.userId)
      if (ofUser) ofUser.push(session)
      else byUser.set(session.userId, [session])
    }
    return (this.byUser = byUser)
  }

  private unindexSession(session: SessionRecord): void {
    this.sessions.delete(session.tokenHash)
    this.lastSeen.delete(session.tokenHash)
    const ofUser = this.sessionsByUser.get(session.userId)
    const at = ofUser?.indexOf(session) ?? -1
    if (at >= 0) ofUser!.splice(at, 1)
    if (ofUser?.length === 0) this.sessionsByUser.delete(session.userId)
  }

  /** Puts the uses noted by touchSession into the session records (replaced: they are frozen), just before a write. */
  private storeLastSeen(data: AccountsDocument): void {
    if (this.lastSeen.size === 0) return
    const replacements = new Map<SessionRecord, SessionRecord>()
    for (const [tokenHash, at] of this.lastSeen) {
      const session = this.sessions.get(tokenHash)
      if (!session || session.lastSeenAt === at) continue
      const next = { ...session, lastSeenAt: at }
      replacements.set(session, next)
      this.sessions.set(tokenHash, next)
      const ofUser = this.byUser?.get(next.userId)
      const position = ofUser?.indexOf(session) ?? -1
      if (position >= 0) ofUser![position] = next
    }
    this.lastSeen.clear()
    replaceRecords(data.sessions, replacements)
  }

  private indexUser(user: UserRecord): void {
    // A replaced user's old identities leave the identity index first.
    const before = this.usersById.get(user.id)
    if (before) this.unindexCredentials(before)
    this.usersById.set(user.id, user)
    this.usersByEmail.set(user.email, user)
    for (const id of user.identities) this.usersByIdentity.set(identityKey(id.issuer, id.subject), user)
    for (const passkey of user.passkeys ?? []) this.usersByCredential.set(passkey.credentialId, user)
  }

  private unindexCredentials(user: UserRecord): void {
    for (const id of user.identities) this.usersByIdentity.delete(identityKey(id.issuer, id.subject))
    for (const passkey of user.passkeys ?? []) if (this.usersByCredential.get(passkey.credentialId)?.id === user.id) this.usersByCredential.delete(passkey.credentialId)
  }

  /** The user holding the passkey with this WebAuthn credential id (one Map hit). */
  userByCredential(credentialId: string): UserRecord | undefined {
    return this.usersByCredential.get(credentialId)
  }

  /** Runs `listener` with the id of each account deleted from now on, once its deletion is written. */
  onUserRemoved(listener: (userId: string) => void): void {
    this.removedListeners.push(listener)
  }

  userById(id: string): UserRecord | undefined {
    return this.usersById.get(id)
  }

  userByEmail(email: string): UserRecord | undefined {
    return this.usersByEmail.get(normalizeEmail(email))
  }

  users(): UserRecord[] {
    return this.doc.data.users
  }

  /** Whether a new account may register now: `first` is open until the first account exists. */
  signupOpen(): boolean {
    if (this.config.signup === 'first') return this.doc.data.users.length === 0
    return this.config.signup === 'open'
  }

  assertSignupOpen(): void {
    if (!this.signupOpen()) throw new AppError(403, 'SIGNUP_DISABLED', 'Sign-up is closed on this vault')
  }

  async register(input: { email: string; password: string; name?: string }, client = 'unknown', userAgent: string | null = null): Promise<SignedIn> {
    this.assertSignupOpen()
    const email = normalizeEmail(input.email)
    if (this.usersByEmail.has(email)) throw emailTaken()
    return this.withRegistrationSlot(client, async () => {
      const passwordHash = await Bun.password.hash(input.password, 'argon2id')
      return this.createUser({ email, name: input.name?.trim() || null, passwordHash, identities: [] }, { client, userAgent, method: 'register' })
    })
  }

  /**
   * Runs an account creation within the per-address limit (SVC_REGISTER_LIMIT an hour). The slot
   * is taken before any await, so parallel sign-ups cannot pass the limit; a creation that fails
   * gives it back.
   */
  async withRegistrationSlot<T>(client: string, create: () => Promise<T>): Promise<T> {
    const limit = this.config.registerLimit ?? 0
    if (limit === 0) return create()
    const key = `r:${client}`
    const wait = this.registrations.wait(key, limit)
    if (wait > 0) {
      throw new AppError(429, 'TOO_MANY_ATTEMPTS', 'Too many accounts created from this address; try again later', { 'retry-after': String(wait) })
    }
    const at = this.registrations.add(key)
    try {
      return await create()
    } catch (error) {
      this.registrations.remove(key, at)
      throw error
    }
  }

  /** Creates a user and their first session in one write. */
  async createUser(fields: Omit<UserRecord, 'id' | 'createdAt'>, meta: SessionMeta = {}): Promise<SignedIn> {
    const user: UserRecord = { id: crypto.randomUUID(), ...fields, createdAt: new Date(this.now()).toISOString() }
    const { token, session } = this.newSession(user.id, meta)
    await this.doc.update((data) => {
      // Checked again inside the synchronous mutation: two racing sign-ups cannot both win, and
      // with SVC_SIGNUP=first only one of two racing first accounts is made.
      this.assertSignupOpen()
      if (this.usersByEmail.has(user.email)) throw emailTaken()
      data.users.push(user)
      this.indexUser(user)
      this.addSession(data, session)
    })
    return { user, token, expiresAt: new Date(session.expiresAt) }
  }

  async login(emailInput: string, password: string, client: string, userAgent: string | null = null): Promise<SignedIn> {
    const user = await this.checkPassword(emailInput, password, client)
    return this.startSession(user, { client, userAgent, method: 'password' })
  }

  /** The user whose e-mail and password these are (throttled, counted before the check), else 401/429. */
  async checkPassword(emailInput: string, password: string, client: string): Promise<UserRecord> {
    const email = normalizeEmail(emailInput)
    // Counted before the check (synchronously, before any await): parallel guesses cannot pass.
    const attempt = this.throttle.begin(email, client)
    if ('retryAfter' in attempt) {
      throw new AppError(429, 'TOO_MANY_ATTEMPTS', 'Too many failed sign-in attempts; try again later', {
        'retry-after': String(attempt.retryAfter),
      })
    }
    const user = this.usersByEmail.get(email)
    const hash = user?.passwordHash ?? (await getDummyHash())
    this.passwordChecks++
    const valid = await Bun.password.verify(password, hash)
    if (!user || !user.passwordHash || !valid) {
      throw new AppError(401, 'INVALID_CREDENTIALS', 'The e-mail or the password is wrong')
    }
    attempt.succeeded()
    return user
  }

  /**
   * Checks a signed-in user's own password again (account settings), throttled like sign-in:
   * counted before the check, 429 past the limits, 401 INVALID_CREDENTIALS when wrong.
   */
  async confirmPassword(user: UserRecord, password: string, client: string): Promise<void> {
    await this.throttled(user.email, client, async () => {
      this.passwordChecks++
      return user.passwordHash !== null && (await Bun.password.verify(password, user.passwordHash))
    }, () => new AppError(401, 'INVALID_CREDENTIALS', 'The password is wrong'))
  }

  /**
   * Runs a check counted by the sign-in throttle under `key` (an e-mail, or another key such as a
   * user's second factor): 429 when over the limits; `refused` is thrown when the check fails.
   */
  async throttled(key: string, client: string, check: () => Promise<boolean> | boolean, refused: () => AppError): Promise<void> {
    const attempt = this.throttle.begin(key, client)
    if ('retryAfter' in attempt) {
      throw new AppError(429, 'TOO_MANY_ATTEMPTS', 'Too many failed attempts; try again later', { 'retry-after': String(attempt.retryAfter) })
    }
    if (!(await check())) throw refused()
    attempt.succeeded()
  }

  async startSession(user: UserRecord, meta: SessionMeta = {}): Promise<SignedIn> {
    const { token, session } = this.newSession(user.id, meta)
    await this.doc.update((data) => this.addSession(data, session))
    return { user, token, expiresAt: new Date(session.expiresAt) }
  }

  /**
   * Links an identity-provider identity to a user (replacing the user's earlier identity at the
   * same issuer) and ends every other session of the user, in one write. Refused when the
   * identity already belongs to another account.
   */
  async linkIdentity(user: UserRecord, identity: { issuer: string; subject: string }, keepSessionHash: string | null = null): Promise<void> {
    await this.doc.update((data) => {
      const owner = this.userByIdentity(identity.issuer, identity.subject)
      if (owner && owner.id !== user.id) {
        throw new AppError(400, 'OIDC_FAILED', 'This identity is already linked to another account of this vault')
      }
      const current = this.usersById.get(user.id) ?? user
      const linkedAt = new Date(this.now()).toISOString()
      this.replaceUser(data, current, { identities: [...current.identities.filter((id) => id.issuer !== identity.issuer), { ...identity, linkedAt }] })
      this.dropSessions(data, user.id, keepSessionHash)
    })
  }

  /** Removes the user's provider identities (one provider is configured); refused while they are the account's only way in. */
  async unlinkIdentities(user: UserRecord): Promise<void> {
    if (user.identities.length === 0) return
    await this.doc.update((data) => {
      // The current record: a password set meanwhile replaced the one the caller holds.
      if (!(this.usersById.get(user.id) ?? user).passwordHash) {
        throw new AppError(409, 'LAST_SIGN_IN_METHOD', 'Single sign-on is the only way into this account: it cannot be unlinked')
      }
      this.replaceUser(data, user, { identities: [] })
    })
  }

  /** Users are frozen once stored (store/changes.ts): a change replaces the record. */
  private replaceUser(data: AccountsDocument, user: UserRecord, fields: Partial<UserRecord>): UserRecord {
    const current = this.usersById.get(user.id) ?? user
    const next = replaceRecord(data.users, current, { ...current, ...fields })
    this.indexUser(next)
    return next
  }

  /** Ends every session of the user except the one with `keepHash`; answers how many ended. */
  private dropSessions(data: AccountsDocument, userId: string, keepHash: string | null): number {
    let ended = 0
    for (const session of [...(this.sessionsByUser.get(userId) ?? [])]) {
      if (session.tokenHash === keepHash) continue
      removeRecord(data.sessions, session)
      this.unindexSession(session)
      ended++
    }
    return ended
  }

  userByIdentity(issuer: string, subject: string): UserRecord | undefined {
    return this.usersByIdentity.get(identityKey(issuer, subject))
  }

  private newSession(userId: string, meta: SessionMeta = {}): { token: string; session: SessionRecord } {
    const token = randomToken(32)
    const now = this.now()
    const at = new Date(now).toISOString()
    const session: SessionRecord = {
      id: crypto.randomUUID(),
      tokenHash: sha256Hex(token),
      userId,
      createdAt: at,
      expiresAt: new Date(now + this.config.sessionTtlMs).toISOString(),
      lastSeenAt: at,
      clientAddress: meta.client ?? 'unknown',
      userAgent: (meta.userAgent ?? '').slice(0, 300),
      signInMethod: meta.method ?? 'password',
    }
    return { token, session }
  }

  private addSession(data: AccountsDocument, session: SessionRecord): void {
    // The account's expired sessions, and its oldest beyond the cap, leave with this write.
    const now = this.now()
    let ofUser = this.sessionsByUser.get(session.userId)
    if (!ofUser) this.sessionsByUser.set(session.userId, (ofUser = []))
    for (const gone of admitSession(data.sessions, ofUser, session, now)) {
      this.sessions.delete(gone.tokenHash)
      this.lastSeen.delete(gone.tokenHash)
    }
    this.sessions.set(session.tokenHash, session)
    // Every account's: once in a while, one pass that logs a deletion per expired session.
    if (now - this.lastSweep >= SESSION_SWEEP_MS) {
      this.lastSweep = now
      for (const gone of removeExpiredSessions(data, now)) this.unindexSession(gone)
    }
  }

  /** Notes that a session was used now (in memory at once; on disk lazily, at most once a minute per session). */
  touchSession(session: SessionRecord): void {
    const now = this.now()
    const seen = this.lastSeen.get(session.tokenHash) ?? session.lastSeenAt
    if (seen && now - Date.parse(seen) < LAST_SEEN_STEP_MS) return
    // Not in the record itself (frozen once stored): storeLastSeen replaces it before the next write.
    this.lastSeen.set(session.tokenHash, new Date(now).toISOString())
    this.doc.commitSoon(LAST_SEEN_FLUSH_MS)
  }

  /** The user's live sessions, oldest first, with their latest use. */
  liveSessions(userId: string): SessionRecord[] {
    const now = this.now()
    return (this.sessionsByUser.get(userId) ?? [])
      .filter((s) => Date.parse(s.expiresAt) > now)
      .map((s) => {
        const seen = this.lastSeen.get(s.tokenHash)
        return seen === undefined ? s : { ...s, lastSeenAt: seen }
      })
  }

  /** Ends one of the user's sessions by its public id; a foreign or unknown id is 404 alike. */
  async endSessionById(userId: string, id: string): Promise<void> {
    // Looked up among the user's own sessions only: another account's id is simply not there.
    const find = () => this.sessionsByUser.get(userId)?.find((s) => s.id === id && Date.parse(s.expiresAt) > this.now())
    if (!find()) throw new AppError(404, 'SESSION_NOT_FOUND', 'Session not found')
    await this.doc.update((data) => {
      const session = find()
      if (!session) return
      removeRecord(data.sessions, session)
      this.unindexSession(session)
    })
  }

  /** Ends every session of the user but `keepHash` (the caller's own). */
  async endOtherSessions(userId: string, keepHash: string | null): Promise<number> {
    return this.doc.update((data) => this.dropSessions(data, userId, keepHash))
  }

  /**
   * Until when this session's last proof (its sign-in, or a re-authentication) counts as fresh;
   * null for an unknown session. Issue 36: see auth/fresh-proof.ts.
   */
  freshUntil(tokenHash: string | null): number | null {
    const session = tokenHash ? this.sessions.get(tokenHash) : undefined
    if (!session) return null
    const proved = Math.max(Date.parse(session.createdAt), session.reauthAt ? Date.parse(session.reauthAt) : 0)
    return proved + FRESH_SIGN_IN_MS
  }

  /** Whether this session signed in or re-authenticated within FRESH_SIGN_IN_MS. */
  isFreshSession(tokenHash: string | null): boolean {
    const until = this.freshUntil(tokenHash)
    return until !== null && this.now() <= until
  }

  /**
   * Notes a fresh proof on the session (written, with whatever the proof changed in the user's
   * record: a used code, a passkey counter); answers until when it counts.
   */
  async stampReauth(tokenHash: string): Promise<number> {
    const at = new Date(this.now()).toISOString()
    await this.doc.update((data) => {
      const session = this.sessions.get(tokenHash)
      if (!session) throw new AppError(401, 'AUTH_REQUIRED', 'The session has ended: sign in again')
      const next = replaceRecord(data.sessions, session, { ...session, reauthAt: at })
      this.sessions.set(tokenHash, next)
      const ofUser = this.byUser?.get(next.userId)
      const position = ofUser?.indexOf(session) ?? -1
      if (position >= 0) ofUser![position] = next
    })
    return this.freshUntil(tokenHash)!
  }

  /**
   * Applies a change to a user and writes it (2FA, passkeys). The stored record is frozen:
   * `mutate` gets a copy of the current one (its nested values still frozen: replace them whole),
   * which then replaces it. The mutation runs synchronously; what it answers is answered.
   */
  async updateUser<R>(user: UserRecord, mutate: (user: UserRecord) => R): Promise<R> {
    return this.doc.update((data) => {
      const current = this.usersById.get(user.id)
      if (!current) throw new AppError(401, 'AUTH_REQUIRED', 'This account no longer exists')
      const draft: UserRecord = { ...current }
      const result = mutate(draft)
      this.replaceUser(data, current, draft)
      return result
    })
  }

  /**
   * Replaces the user's record in memory now, unwritten: the caller's next write (a new session)
   * stores it, or updateUser(user, () => {}). For a sign-in's second factor, whose use (a TOTP
   * step, a recovery code, a passkey counter) must be seen by a racing request at once.
   */
  changeUser(user: UserRecord, fields: Partial<UserRecord>): UserRecord {
    return this.replaceUser(this.doc.data, user, fields)
  }

  /** Sets a new password hash and ends every other session of the user, in one write. */
  async setPasswordHash(user: UserRecord, passwordHash: string, keepSessionHash: string | null): Promise<void> {
    await this.doc.update((data) => {
      if (!this.usersById.has(user.id)) throw new AppError(401, 'AUTH_REQUIRED', 'This account no longer exists')
      this.replaceUser(data, user, { passwordHash })
      this.dropSessions(data, user.id, keepSessionHash)
    })
  }

  /**
   * Removes the user, their sessions and their access keys from the accounts document, in one
   * write (the caller reindexes AccessKeys).
   */
  async removeUser(user: UserRecord): Promise<void> {
    await this.doc.update((data) => {
      const current = this.usersById.get(user.id)
      if (!current) return
      removeRecord(data.users, current)
      for (const key of data.accessKeys.filter((k) => k.userId === current.id)) removeRecord(data.accessKeys, key)
      this.dropSessions(data, current.id, null)
      this.usersById.delete(current.id)
      if (this.usersByEmail.get(current.email)?.id === current.id) this.usersByEmail.delete(current.email)
      this.unindexCredentials(current)
    })
    for (const listener of this.removedListeners) {
      try {
        listener(user.id)
      } catch {
        // One listener's failure does not keep the others from cancelling their work.
      }
    }
  }

  /** The live session for a cookie token, or null. */
  session(token: string | undefined): SessionRecord | null {
    if (!token || token.length > 200) return null
    const hash = sha256Hex(token)
    const session = this.sessions.get(hash)
    if (!session || !constantTimeEqual(session.tokenHash, hash)) return null
    if (Date.parse(session.expiresAt) <= this.now()) return null
    return this.usersById.has(session.userId) ? session : null
  }

  async endSession(tokenHash: string): Promise<void> {
    if (!this.sessions.has(tokenHash)) return
    await this.doc.update((data) => {
      const session = this.sessions.get(tokenHash)
      if (!session) return
      removeRecord(data.sessions, session)
      this.unindexSession(session)
    })
  }
}

const identityKey = (issuer: string, subject: string) => `${issuer}\u0000${subject}`

const emailTaken = () => new AppError(409, 'EMAIL_TAKEN', 'An account with this e-mail already exists')
