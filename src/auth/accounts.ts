// Users and sessions, kept in the accounts document and indexed in memory. Only SHA-256 of a
// session token is stored; a lookup is one Map hit plus an expiry check.
import type { Config } from '../config'
import { constantTimeEqual, randomToken, sha256Hex } from '../crypto/tokens'
import { AppError } from '../http/errors'
import type { Document } from '../store/document'
import type { AccountsDocument, SessionRecord, UserRecord } from '../store/records'
import { LoginThrottle } from './login-throttle'

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
  readonly throttle: LoginThrottle

  constructor(
    private readonly doc: Document<AccountsDocument>,
    private readonly config: Pick<Config, 'signup' | 'sessionTtlMs'>,
    private readonly now: () => number = Date.now,
  ) {
    this.throttle = new LoginThrottle(now)
    this.reindex(doc.data)
  }

  /** Rebuilds the indexes from the document (at start, and after a failed write reloaded it). */
  reindex(data: AccountsDocument): void {
    this.usersById.clear()
    this.usersByEmail.clear()
    this.sessions.clear()
    for (const user of data.users) this.indexUser(user)
    for (const session of data.sessions) this.sessions.set(session.tokenHash, session)
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

  assertSignupOpen(): void {
    if (this.config.signup === 'closed') throw new AppError(403, 'SIGNUP_DISABLED', 'Sign-up is closed on this vault')
  }

  async register(input: { email: string; password: string; name?: string }): Promise<SignedIn> {
    this.assertSignupOpen()
    const email = normalizeEmail(input.email)
    if (this.usersByEmail.has(email)) throw emailTaken()
    const passwordHash = await Bun.password.hash(input.password, 'argon2id')
    return this.createUser({ email, name: input.name?.trim() || null, passwordHash, identities: [] })
  }

  /** Creates a user and their first session in one write. */
  async createUser(fields: Omit<UserRecord, 'id' | 'createdAt'>): Promise<SignedIn> {
    const user: UserRecord = { id: crypto.randomUUID(), ...fields, createdAt: new Date(this.now()).toISOString() }
    const { token, session } = this.newSession(user.id)
    await this.doc.update((data) => {
      // Checked again inside the synchronous mutation: two racing sign-ups cannot both win.
      if (this.usersByEmail.has(user.email)) throw emailTaken()
      data.users.push(user)
      this.indexUser(user)
      this.addSession(data, session)
    })
    return { user, token, expiresAt: new Date(session.expiresAt) }
  }

  async login(emailInput: string, password: string, client: string): Promise<SignedIn> {
    const email = normalizeEmail(emailInput)
    const wait = this.throttle.retryAfter(email, client)
    if (wait > 0) {
      throw new AppError(429, 'TOO_MANY_ATTEMPTS', 'Too many failed sign-in attempts; try again later', {
        'retry-after': String(wait),
      })
    }
    const user = this.usersByEmail.get(email)
    const valid = await Bun.password.verify(password, user?.passwordHash ?? (await getDummyHash()))
    if (!user || !user.passwordHash || !valid) {
      this.throttle.recordFailure(email, client)
      throw new AppError(401, 'INVALID_CREDENTIALS', 'The e-mail or the password is wrong')
    }
    this.throttle.recordSuccess(email)
    return this.startSession(user)
  }

  async startSession(user: UserRecord): Promise<SignedIn> {
    const { token, session } = this.newSession(user.id)
    await this.doc.update((data) => this.addSession(data, session))
    return { user, token, expiresAt: new Date(session.expiresAt) }
  }

  /** Links an identity-provider identity to a user, in one write. */
  async linkIdentity(user: UserRecord, identity: { issuer: string; subject: string }): Promise<void> {
    await this.doc.update(() => {
      if (!user.identities.some((id) => id.issuer === identity.issuer && id.subject === identity.subject)) {
        user.identities.push(identity)
      }
    })
  }

  userByIdentity(issuer: string, subject: string): UserRecord | undefined {
    return this.doc.data.users.find((user) => user.identities.some((id) => id.issuer === issuer && id.subject === subject))
  }

  private newSession(userId: string): { token: string; session: SessionRecord } {
    const token = randomToken(32)
    const now = this.now()
    const session: SessionRecord = {
      tokenHash: sha256Hex(token),
      userId,
      createdAt: new Date(now).toISOString(),
      expiresAt: new Date(now + this.config.sessionTtlMs).toISOString(),
    }
    return { token, session }
  }

  private addSession(data: AccountsDocument, session: SessionRecord): void {
    // Expired sessions are dropped whenever a new one is written.
    const now = this.now()
    data.sessions = data.sessions.filter((s) => Date.parse(s.expiresAt) > now)
    data.sessions.push(session)
    this.sessions.clear()
    for (const s of data.sessions) this.sessions.set(s.tokenHash, s)
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
      data.sessions = data.sessions.filter((s) => s.tokenHash !== tokenHash)
      this.sessions.delete(tokenHash)
    })
  }
}

const emailTaken = () => new AppError(409, 'EMAIL_TAKEN', 'An account with this e-mail already exists')
