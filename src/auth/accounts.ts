// The accounts document's users and sessions, and the account operations that change them. The
// in-memory indexes live in users.ts and sessions.ts, password handling in passwords.ts; this
// class keeps the document and both indexes in step, one write per operation. Writes touch only
// the records they change (through the document's writer: store/writer.ts).
import type { Config } from '../config'
import { constantTimeEqual, sha256Hex } from '../crypto/tokens'
import { AppError } from '../http/errors'
import type { StoredDocument } from '../store/data-store'
import type { Change } from '../store/changes'
import type { AccountsDocument, Draft, SessionRecord, UserRecord } from '../store/records'
import { MemoryState, type SharedState } from '../store/shared-state'
import type { Writer } from '../store/writer'
import type { LoginThrottle } from './login-throttle'
import { Passwords } from './passwords'
import { LAST_SEEN_FLUSH_MS, newSession, SessionIndex, type SessionMeta } from './sessions'
import { normalizeEmail, UserIndex } from './users'

export { REGISTER_WINDOW_MS } from './passwords'
export { MAX_SESSIONS_PER_USER, SESSION_SWEEP_MS, type SessionMeta } from './sessions'
export { normalizeEmail } from './users'

/**
 * A sign-in, or a re-authentication (POST /api/auth/reauth), this recent counts as a fresh proof
 * (what outlives a session; a first password; account deletion).
 */
export const FRESH_SIGN_IN_MS = 10 * 60_000

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

/** The user as GET /api/auth/me shows them: with whether two-factor sign-in is on . */
export const signedInUser = (user: UserRecord): PublicUser & { twoFactorEnabled: boolean; recoveryCodesLeft?: number } => ({
  ...publicUser(user),
  twoFactorEnabled: Boolean(user.twoFactor),
  // How many unused recovery codes remain, so a person knows when to make new ones.
  ...(user.twoFactor ? { recoveryCodesLeft: user.twoFactor.recoveryCodeHashes.length } : {}),
})

export interface SignedIn {
  user: UserRecord
  /** The cookie token; returned once, stored only as its hash. */
  token: string
  expiresAt: Date
}

/** What lets an account be made while sign-up is closed (an invite): checked, then applied in the same write. */
export interface Admission {
  /** Throws when it no longer admits (used, expired, revoked). */
  check(data: AccountsDocument): void
  apply(write: Writer<AccountsDocument>, user: UserRecord): void
}

export class Accounts {
  private readonly userIndex = new UserIndex()
  private readonly sessionIndex: SessionIndex
  private readonly passwords: Passwords
  /** Told, after its write, that an account was deleted (pending device sign-ins, the notifier). */
  private readonly removedListeners: ((userId: string) => void)[] = []

  constructor(
    private readonly doc: StoredDocument<AccountsDocument>,
    private readonly config: Pick<Config, 'signup' | 'sessionTtlMs'> & Partial<Pick<Config, 'registerLimit' | 'passwordCost'>>,
    private readonly now: () => number = Date.now,
    /** Throttle and sign-up counts: the store's (shared by instances on a database). */
    readonly state: SharedState = new MemoryState(now),
  ) {
    this.sessionIndex = new SessionIndex(() => doc.data.sessions, now)
    this.passwords = new Passwords(state, config.registerLimit ?? 0, config.passwordCost)
    this.reindex(doc.data)
  }

  get throttle(): LoginThrottle {
    return this.passwords.throttle
  }

  /** Password hashes verified so far (tests count them: the throttle must act before them). */
  get passwordChecks(): number {
    return this.passwords.checks
  }

  /**
   * Takes in what other instances wrote to the accounts (PostgreSQL store), once per request:
   * each request reads them fresh. Nothing to do on the file store (one writer).
   */
  fresh(request: Request): Promise<void> | undefined {
    if (!this.doc.refresh) return undefined
    let done = this.freshFor.get(request)
    if (!done) this.freshFor.set(request, (done = this.doc.refresh()))
    return done
  }
  private readonly freshFor = new WeakMap<Request, Promise<void>>()

  /** Rebuilds the indexes from the document (at start, and after a failed write reloaded it). */
  reindex(data: AccountsDocument): void {
    this.userIndex.reset(data.users)
    this.sessionIndex.reset(data.sessions)
  }

  /**
   * Follows other instances' changes to the accounts (PostgreSQL), already applied to the
   * document: the indexes take in each changed user and session instead of being rebuilt.
   */
  takeIn(changes: readonly Change[]): void {
    const endedSessions = new Set<string>()
    for (const change of changes) {
      if (change[0] === 'put' && change[1] === 'users') this.userIndex.put(change[2] as UserRecord)
      else if (change[0] === 'del' && change[1] === 'users') {
        const gone = this.userIndex.id(change[2])
        if (gone) this.userIndex.remove(gone)
      } else if (change[0] === 'put' && change[1] === 'sessions') this.sessionIndex.takeIn(change[2] as SessionRecord)
      else if (change[0] === 'del' && change[1] === 'sessions') endedSessions.add(change[2])
    }
    if (endedSessions.size > 0) this.sessionIndex.forgetIds(endedSessions)
  }

  /** The user holding the passkey with this WebAuthn credential id (one Map hit). */
  userByCredential(credentialId: string): UserRecord | undefined {
    return this.userIndex.credential(credentialId)
  }

  /** Runs `listener` with the id of each account deleted from now on, once its deletion is written. */
  onUserRemoved(listener: (userId: string) => void): void {
    this.removedListeners.push(listener)
  }

  userById(id: string): UserRecord | undefined {
    return this.userIndex.id(id)
  }

  userByEmail(email: string): UserRecord | undefined {
    return this.userIndex.email(normalizeEmail(email))
  }

  userByIdentity(issuer: string, subject: string): UserRecord | undefined {
    return this.userIndex.identity(issuer, subject)
  }

  users(): readonly UserRecord[] {
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

  /**
   * With `admission` (an invite), the account is made even when sign-up is closed: the admission
   * is checked first and again inside the write that creates the user, and applied in that write.
   */
  async register(
    input: { email: string; password: string; name?: string },
    client = 'unknown',
    userAgent: string | null = null,
    admission?: Admission,
  ): Promise<SignedIn> {
    if (admission) admission.check(this.doc.data)
    else this.assertSignupOpen()
    const email = normalizeEmail(input.email)
    if (this.userIndex.email(email)) throw emailTaken()
    return this.withRegistrationSlot(client, async () => {
      const passwordHash = await this.passwords.hash(input.password)
      return this.createUser({ email, name: input.name?.trim() || null, passwordHash, identities: [] }, { client, userAgent, method: 'register' }, admission)
    })
  }

  /** Runs an account creation within the per-address limit (SVC_REGISTER_LIMIT an hour): passwords.ts. */
  withRegistrationSlot<T>(client: string, create: () => Promise<T>): Promise<T> {
    return this.passwords.withRegistrationSlot(client, create)
  }

  /** Creates a user and their first session in one write. */
  async createUser(fields: Omit<UserRecord, 'id' | 'createdAt'>, meta: SessionMeta = {}, admission?: Admission): Promise<SignedIn> {
    const user: UserRecord = { id: crypto.randomUUID(), ...fields, createdAt: new Date(this.now()).toISOString() }
    const { token, session } = newSession(user.id, meta, this.now(), this.config.sessionTtlMs)
    await this.doc.update((data, write) => {
      // Checked again inside the synchronous mutation: two racing sign-ups cannot both win, and
      // with SVC_SIGNUP=first only one of two racing first accounts is made; an invite is used once.
      if (admission) admission.check(data)
      else this.assertSignupOpen()
      if (this.userIndex.email(user.email)) throw emailTaken()
      write.users.push(user)
      this.userIndex.put(user)
      this.sessionIndex.admit(write, session)
      admission?.apply(write, user)
    })
    return { user, token, expiresAt: new Date(session.expiresAt) }
  }

  async login(emailInput: string, password: string, client: string, userAgent: string | null = null): Promise<SignedIn> {
    const user = await this.checkPassword(emailInput, password, client)
    return this.startSession(user, { client, userAgent, method: 'password' })
  }

  /** The user whose e-mail and password these are (throttled, counted before the check), else 401/429. */
  checkPassword(emailInput: string, password: string, client: string): Promise<UserRecord> {
    return this.passwords.signIn(normalizeEmail(emailInput), password, client, (email) => this.userIndex.email(email))
  }

  /**
   * Checks a signed-in user's own password again (account settings), throttled like sign-in:
   * counted before the check, 429 past the limits, 401 INVALID_CREDENTIALS when wrong.
   */
  confirmPassword(user: UserRecord, password: string, client: string): Promise<void> {
    return this.passwords.confirm(user, password, client)
  }

  /**
   * Runs a check counted by the sign-in throttle under `key` (an e-mail, or another key such as a
   * user's second factor): 429 when over the limits; `refused` is thrown when the check fails.
   */
  throttled(key: string, client: string, check: () => Promise<boolean> | boolean, refused: () => AppError): Promise<void> {
    return this.passwords.throttled(key, client, check, refused)
  }

  async startSession(user: UserRecord, meta: SessionMeta = {}): Promise<SignedIn> {
    const { token, session } = newSession(user.id, meta, this.now(), this.config.sessionTtlMs)
    await this.doc.update((_, write) => this.sessionIndex.admit(write, session))
    return { user, token, expiresAt: new Date(session.expiresAt) }
  }

  /**
   * Links an identity-provider identity to a user (replacing the user's earlier identity at the
   * same issuer) and ends every other session of the user, in one write. Refused when the
   * identity already belongs to another account.
   */
  async linkIdentity(user: UserRecord, identity: { issuer: string; subject: string }, keepSessionHash: string | null = null): Promise<void> {
    await this.doc.update((_, write) => {
      const owner = this.userByIdentity(identity.issuer, identity.subject)
      if (owner && owner.id !== user.id) {
        throw new AppError(400, 'OIDC_FAILED', 'This identity is already linked to another account of this vault')
      }
      const current = this.userIndex.id(user.id) ?? user
      const linkedAt = new Date(this.now()).toISOString()
      this.replaceUser(write, current, { identities: [...current.identities.filter((id) => id.issuer !== identity.issuer), { ...identity, linkedAt }] })
      this.sessionIndex.removeAllOf(write, user.id, keepSessionHash)
    })
  }

  /** Removes the user's provider identities (one provider is configured); refused while they are the account's only way in. */
  async unlinkIdentities(user: UserRecord): Promise<void> {
    if (user.identities.length === 0) return
    await this.doc.update((_, write) => {
      // The current record: a password set meanwhile replaced the one the caller holds.
      if (!(this.userIndex.id(user.id) ?? user).passwordHash) {
        throw new AppError(409, 'LAST_SIGN_IN_METHOD', 'Single sign-on is the only way into this account: it cannot be unlinked')
      }
      this.replaceUser(write, user, { identities: [] })
    })
  }

  /** A change to a user replaces the record (a copy of the current one with `fields`). */
  private replaceUser(write: Writer<AccountsDocument>, user: UserRecord, fields: Partial<UserRecord>): UserRecord {
    const current = this.userIndex.id(user.id) ?? user
    const next = { ...current, ...fields }
    write.users.replace(next)
    this.userIndex.put(next)
    return next
  }

  /**
   * Notes that a session was used now, at most once a minute per session: the record changes in
   * memory at once (staged) and reaches disk with the next write, at the latest LAST_SEEN_FLUSH_MS later.
   */
  touchSession(session: SessionRecord): void {
    const at = this.sessionIndex.seenDue(session.tokenHash)
    if (at === null) return
    this.doc.stage((_, write) => this.sessionIndex.replace(write, session.tokenHash, { lastSeenAt: at }))
    this.doc.commitSoon(LAST_SEEN_FLUSH_MS)
  }

  /** The user's live sessions, oldest first, with their latest use. */
  liveSessions(userId: string): SessionRecord[] {
    return this.sessionIndex.live(userId)
  }

  /** Ends one of the user's sessions by its public id; a foreign or unknown id is 404 alike. */
  async endSessionById(userId: string, id: string): Promise<void> {
    // Looked up among the user's own sessions only: another account's id is simply not there.
    const find = () => this.sessionIndex.ofUser(userId).find((s) => s.id === id && Date.parse(s.expiresAt) > this.now())
    if (!find()) throw new AppError(404, 'SESSION_NOT_FOUND', 'Session not found')
    await this.doc.update((_, write) => {
      const session = find()
      if (session) this.sessionIndex.remove(write, session)
    })
  }

  /** Ends every session of the user but `keepHash` (the caller's own). */
  async endOtherSessions(userId: string, keepHash: string | null): Promise<number> {
    return this.doc.update((_, write) => this.sessionIndex.removeAllOf(write, userId, keepHash))
  }

  /**
   * Until when this session's last proof (its sign-in, or a re-authentication) counts as fresh;
   * null for an unknown session. See auth/fresh-proof.ts.
   */
  freshUntil(tokenHash: string | null): number | null {
    const session = tokenHash ? this.sessionIndex.get(tokenHash) : undefined
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
    await this.doc.update((_, write) => {
      if (!this.sessionIndex.replace(write, tokenHash, { reauthAt: at })) throw new AppError(401, 'AUTH_REQUIRED', 'The session has ended: sign in again')
    })
    return this.freshUntil(tokenHash)!
  }

  /**
   * Applies a change to a user and writes it (2FA, passkeys). The stored record is frozen:
   * `mutate` gets a copy of the current one (its nested values still frozen: replace them whole),
   * which then replaces it. The mutation runs synchronously; what it answers is answered.
   */
  async updateUser<R>(user: UserRecord, mutate: (user: Draft<UserRecord>) => R): Promise<R> {
    return this.doc.update((_, write) => {
      const current = this.userIndex.id(user.id)
      if (!current) throw new AppError(401, 'AUTH_REQUIRED', 'This account no longer exists')
      const draft: Draft<UserRecord> = { ...current }
      const result = mutate(draft)
      this.replaceUser(write, current, draft)
      return result
    })
  }

  /**
   * Replaces the user's record in memory now, unwritten: the caller's next write (a new session)
   * stores it, or updateUser(user, () => {}). For a sign-in's second factor, whose use (a TOTP
   * step, a recovery code, a passkey counter) must be seen by a racing request at once.
   */
  changeUser(user: UserRecord, fields: Partial<UserRecord>): UserRecord {
    return this.doc.stage((_, write) => this.replaceUser(write, user, fields))
  }

  /** Sets a new password (hashed here) and ends every session of the user but `keepSessionHash`, in one write. */
  async setPassword(user: UserRecord, password: string, keepSessionHash: string | null): Promise<void> {
    const passwordHash = await this.passwords.hash(password)
    await this.doc.update((_, write) => {
      if (!this.userIndex.id(user.id)) throw new AppError(401, 'AUTH_REQUIRED', 'This account no longer exists')
      this.replaceUser(write, user, { passwordHash })
      this.sessionIndex.removeAllOf(write, user.id, keepSessionHash)
    })
  }

  /**
   * Removes the user, their sessions and their access keys from the accounts document, in one
   * write (the caller reindexes AccessKeys).
   */
  async removeUser(user: UserRecord): Promise<void> {
    await this.doc.update((data, write) => {
      const current = this.userIndex.id(user.id)
      if (!current) return
      // A shared vault keeps an admin: its last one hands it over or deletes it first.
      const isAdmin = (member: { userId: string; role: string }) => member.role === 'admin'
      const led = data.sharedVaults.find(
        (vault) => vault.members.some((m) => m.userId === current.id && isAdmin(m)) && vault.members.filter(isAdmin).length === 1,
      )
      if (led)
        throw new AppError(409, 'LAST_ADMIN', `You are the last admin of the shared vault "${led.name}": make another member admin, or delete the vault, first`)
      for (const vault of data.sharedVaults)
        if (vault.members.some((m) => m.userId === current.id))
          // With a departure note, as for a removal: what they read becomes the vault's rotation list.
          write.sharedVaults.replace({
            ...vault,
            members: vault.members.filter((m) => m.userId !== current.id),
            departed: [...(vault.departed ?? []), { userId: current.id, email: current.email, at: new Date(this.now()).toISOString() }],
          })
      write.users.remove(current.id)
      write.accessKeys.removeWhere((key) => key.userId === current.id)
      this.sessionIndex.removeAllOf(write, current.id, null)
      this.userIndex.remove(current)
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
    const session = this.sessionIndex.get(hash)
    if (!session || !constantTimeEqual(session.tokenHash, hash)) return null
    if (Date.parse(session.expiresAt) <= this.now()) return null
    return this.userIndex.id(session.userId) ? session : null
  }

  async endSession(tokenHash: string): Promise<void> {
    if (!this.sessionIndex.get(tokenHash)) return
    await this.doc.update((_, write) => {
      const session = this.sessionIndex.get(tokenHash)
      if (session) this.sessionIndex.remove(write, session)
    })
  }
}

const emailTaken = () => new AppError(409, 'EMAIL_TAKEN', 'An account with this e-mail already exists')
