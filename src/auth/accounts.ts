// Users and sessions, kept in the accounts document and indexed in memory. Only SHA-256 of a
// session token is stored; a lookup is one Map hit plus an expiry check.
import type { Config } from '../config'
import { constantTimeEqual, randomToken, sha256Hex } from '../crypto/tokens'
import { AppError } from '../http/errors'
import type { Document } from '../store/document'
import type { AccountsDocument, SessionRecord, SignInMethod, UserRecord } from '../store/records'
import { LoginThrottle, SlidingWindow } from './login-throttle'

export const REGISTER_WINDOW_MS = 60 * 60_000
/** Live sessions one account may hold; the oldest goes when a new one starts (issue 16). */
export const MAX_SESSIONS_PER_USER = 50
/** lastSeenAt moves at most this often, and reaches disk lazily (within LAST_SEEN_FLUSH_MS). */
const LAST_SEEN_STEP_MS = 60_000
const LAST_SEEN_FLUSH_MS = 30_000
/** A single sign-on session this young counts as a fresh sign-in (first password, account deletion). */
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
export const signedInUser = (user: UserRecord): PublicUser & { twoFactorEnabled: boolean } => ({
  ...publicUser(user),
  twoFactorEnabled: Boolean(user.twoFactor),
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
  private readonly sessions = new Map<string, SessionRecord>()
  private readonly sessionsById = new Map<string, SessionRecord>()
  readonly throttle: LoginThrottle
  /** Accounts created per client address in the last hour (SVC_REGISTER_LIMIT). */
  private readonly registrations: SlidingWindow
  /** Password hashes verified so far (tests count them: the throttle must act before them). */
  passwordChecks = 0

  constructor(
    private readonly doc: Document<AccountsDocument>,
    private readonly config: Pick<Config, 'signup' | 'sessionTtlMs'> & Partial<Pick<Config, 'registerLimit'>>,
    private readonly now: () => number = Date.now,
  ) {
    this.throttle = new LoginThrottle(now)
    this.registrations = new SlidingWindow(REGISTER_WINDOW_MS, now)
    this.reindex(doc.data)
  }

  /** Rebuilds the indexes from the document (at start, and after a failed write reloaded it). */
  reindex(data: AccountsDocument): void {
    this.usersById.clear()
    this.usersByEmail.clear()
    for (const user of data.users) this.indexUser(user)
    this.reindexSessions(data)
  }

  private reindexSessions(data: AccountsDocument): void {
    this.sessions.clear()
    this.sessionsById.clear()
    for (const session of data.sessions) this.indexSession(session)
  }

  private indexSession(session: SessionRecord): void {
    // Sessions from before issue 16 get their public id here (stored with the next write).
    session.id ??= crypto.randomUUID()
    this.sessions.set(session.tokenHash, session)
    this.sessionsById.set(session.id, session)
  }

  private unindexSession(session: SessionRecord): void {
    this.sessions.delete(session.tokenHash)
    if (session.id) this.sessionsById.delete(session.id)
  }

  private indexUser(user: UserRecord): void {
    this.usersById.set(user.id, user)
    this.usersByEmail.set(user.email, user)
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
      user.identities = [...user.identities.filter((id) => id.issuer !== identity.issuer), identity]
      this.dropSessions(data, (s) => s.userId === user.id && s.tokenHash !== keepSessionHash)
    })
  }

  /** Removes the user's provider identities (one provider is configured); refused while they are the account's only way in. */
  async unlinkIdentities(user: UserRecord): Promise<void> {
    if (user.identities.length === 0) return
    await this.doc.update(() => {
      if (!user.passwordHash) {
        throw new AppError(409, 'LAST_SIGN_IN_METHOD', 'Single sign-on is the only way into this account: it cannot be unlinked')
      }
      user.identities = []
    })
  }

  private dropSessions(data: AccountsDocument, drop: (session: SessionRecord) => boolean): void {
    data.sessions = data.sessions.filter((s) => {
      if (!drop(s)) return true
      this.unindexSession(s)
      return false
    })
  }

  userByIdentity(issuer: string, subject: string): UserRecord | undefined {
    return this.doc.data.users.find((user) => user.identities.some((id) => id.issuer === issuer && id.subject === subject))
  }

  private newSession(userId: string, meta: SessionMeta = {}): { token: string; session: SessionRecord } {
    const token = randomToken(32)
    const now = this.now()
    const at = new Date(now).toISOString()
    const session: SessionRecord = {
      tokenHash: sha256Hex(token),
      userId,
      createdAt: at,
      expiresAt: new Date(now + this.config.sessionTtlMs).toISOString(),
      id: crypto.randomUUID(),
      lastSeenAt: at,
      clientAddress: meta.client ?? 'unknown',
      userAgent: (meta.userAgent ?? '').slice(0, 300),
      signInMethod: meta.method ?? 'password',
    }
    return { token, session }
  }

  private addSession(data: AccountsDocument, session: SessionRecord): void {
    // Expired sessions leave with a write that happens anyway (this one): never a write of their own.
    // The indexes lose only what leaves, rather than being rebuilt.
    const now = this.now()
    const own = data.sessions.filter((s) => s.userId === session.userId && Date.parse(s.expiresAt) > now)
    // At most MAX_SESSIONS_PER_USER live ones: the oldest go first.
    own.sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt))
    const evicted = new Set(own.slice(0, Math.max(0, own.length - MAX_SESSIONS_PER_USER + 1)))
    this.dropSessions(data, (s) => evicted.has(s) || Date.parse(s.expiresAt) <= now)
    data.sessions.push(session)
    this.indexSession(session)
  }

  /** Notes that a session was used now (in memory at once; on disk lazily, at most once a minute per session). */
  touchSession(session: SessionRecord): void {
    const now = this.now()
    if (session.lastSeenAt && now - Date.parse(session.lastSeenAt) < LAST_SEEN_STEP_MS) return
    session.lastSeenAt = new Date(now).toISOString()
    this.doc.commitSoon(LAST_SEEN_FLUSH_MS)
  }

  /** The user's live sessions, oldest first. */
  liveSessions(userId: string): SessionRecord[] {
    const now = this.now()
    return this.doc.data.sessions.filter((s) => s.userId === userId && Date.parse(s.expiresAt) > now)
  }

  /** Ends one of the user's sessions by its public id; a foreign or unknown id is 404 alike. */
  async endSessionById(userId: string, id: string): Promise<void> {
    const session = this.sessionsById.get(id)
    if (!session || session.userId !== userId || Date.parse(session.expiresAt) <= this.now()) {
      throw new AppError(404, 'SESSION_NOT_FOUND', 'Session not found')
    }
    await this.doc.update((data) => this.dropSessions(data, (s) => s === session))
  }

  /** Ends every session of the user but `keepHash` (the caller's own). */
  async endOtherSessions(userId: string, keepHash: string | null): Promise<number> {
    let ended = 0
    await this.doc.update((data) =>
      this.dropSessions(data, (s) => {
        const drop = s.userId === userId && s.tokenHash !== keepHash
        if (drop) ended++
        return drop
      }),
    )
    return ended
  }

  /** Whether this session signed in through single sign-on within FRESH_SIGN_IN_MS. */
  isFreshOidcSession(tokenHash: string | null): boolean {
    const session = tokenHash ? this.sessions.get(tokenHash) : undefined
    return session?.signInMethod === 'oidc' && this.now() - Date.parse(session.createdAt) <= FRESH_SIGN_IN_MS
  }

  /** Applies a change to a user and writes it (2FA, passkeys). The mutation runs synchronously. */
  async updateUser<R>(user: UserRecord, mutate: (user: UserRecord) => R): Promise<R> {
    return this.doc.update(() => {
      if (this.usersById.get(user.id) !== user) throw new AppError(401, 'AUTH_REQUIRED', 'This account no longer exists')
      return mutate(user)
    })
  }

  /** Sets a new password hash and ends every other session of the user, in one write. */
  async setPasswordHash(user: UserRecord, passwordHash: string, keepSessionHash: string | null): Promise<void> {
    await this.doc.update((data) => {
      user.passwordHash = passwordHash
      this.dropSessions(data, (s) => s.userId === user.id && s.tokenHash !== keepSessionHash)
    })
  }

  /** Removes the user, their sessions and their access keys from the accounts document, in one write. */
  async removeUser(user: UserRecord): Promise<void> {
    await this.doc.update((data) => {
      data.users = data.users.filter((u) => u.id !== user.id)
      data.accessKeys = data.accessKeys.filter((k) => k.userId !== user.id)
      this.dropSessions(data, (s) => s.userId === user.id)
      this.usersById.delete(user.id)
      if (this.usersByEmail.get(user.email) === user) this.usersByEmail.delete(user.email)
    })
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
    await this.doc.update((data) => this.dropSessions(data, (s) => s.tokenHash === tokenHash))
  }
}

const emailTaken = () => new AppError(409, 'EMAIL_TAKEN', 'An account with this e-mail already exists')
