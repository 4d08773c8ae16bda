// Password handling: hashing (argon2id), the throttled check of a sign-in or of a signed-in
// user's own password, and the per-address limit on new accounts. Every check is counted by the
// throttle before it runs, in one atomic step, so parallel guesses cannot slip in under the limits.
import type { PasswordCost } from '../config'
import { AppError } from '../http/errors'
import type { UserRecord } from '../store/records'
import type { SharedState, WindowCounter } from '../store/shared-state'
import { LoginThrottle, tooManyAttempts } from './login-throttle'

export const REGISTER_WINDOW_MS = 60 * 60_000

/** argon2id's cost for every new hash a server makes: 64 MiB and 2 passes (Bun's defaults, spelled out). */
export const PASSWORD_COST: PasswordCost = { memoryCost: 65_536, timeCost: 2 }

export class Passwords {
  readonly throttle: LoginThrottle
  /** Accounts created per client address in the last hour (SVC_REGISTER_LIMIT). */
  private readonly registrations: WindowCounter
  /** Password hashes verified so far (tests count them: the throttle must act before them). */
  checks = 0
  /**
   * Verified against for unknown e-mails, so a login costs the same whether or not the account
   * exists. Made on first use, not at start-up (start-up time counts on small machines).
   */
  private dummyHash: Promise<string> | undefined

  constructor(
    state: SharedState,
    private readonly registerLimit: number,
    private readonly cost: PasswordCost = PASSWORD_COST,
  ) {
    this.throttle = new LoginThrottle(state)
    this.registrations = state.window('register', REGISTER_WINDOW_MS)
  }

  /** A new password's hash (argon2id at this server's cost; a check reads the cost from the hash). */
  hash(password: string): Promise<string> {
    return Bun.password.hash(password, { algorithm: 'argon2id', ...this.cost })
  }

  /**
   * The user whose e-mail (normalized) and password these are, else 401 INVALID_CREDENTIALS;
   * 429 past the throttle's limits. An unknown e-mail costs a hash check all the same.
   */
  async signIn(email: string, password: string, client: string, find: (email: string) => UserRecord | undefined): Promise<UserRecord> {
    let user: UserRecord | undefined
    await this.throttled(
      email,
      client,
      async () => {
        user = find(email)
        const hash = user?.passwordHash ?? (await (this.dummyHash ??= this.hash('svc-vault-dummy-password')))
        this.checks++
        const valid = await Bun.password.verify(password, hash)
        return Boolean(user?.passwordHash) && valid
      },
      () => new AppError(401, 'INVALID_CREDENTIALS', 'The e-mail or the password is wrong'),
      'Too many failed sign-in attempts; try again later',
    )
    return user!
  }

  /** Checks a signed-in user's own password again (account settings), throttled like sign-in. */
  async confirm(user: UserRecord, password: string, client: string): Promise<void> {
    await this.throttled(
      user.email,
      client,
      async () => {
        this.checks++
        return user.passwordHash !== null && (await Bun.password.verify(password, user.passwordHash))
      },
      () => new AppError(401, 'INVALID_CREDENTIALS', 'The password is wrong'),
    )
  }

  /**
   * Runs a check counted by the sign-in throttle under `key` (an e-mail, or another key such as a
   * user's second factor): 429 when over the limits; `refused` is thrown when the check fails.
   */
  async throttled(
    key: string,
    client: string,
    check: () => Promise<boolean> | boolean,
    refused: () => AppError,
    tooMany = 'Too many failed attempts; try again later',
  ): Promise<void> {
    const attempt = await this.throttle.begin(key, client)
    if ('retryAfter' in attempt) throw tooManyAttempts(tooMany, attempt.retryAfter)
    if (!(await check())) throw refused()
    await attempt.succeeded()
  }

  /**
   * Runs an account creation within the per-address limit (SVC_REGISTER_LIMIT an hour). The slot
   * is taken (checked and counted in one step of the shared state, across instances on a
   * database) before the account is made, so parallel sign-ups cannot pass the limit; a creation
   * that fails gives it back.
   */
  async withRegistrationSlot<T>(client: string, create: () => Promise<T>): Promise<T> {
    if (this.registerLimit === 0) return create()
    const key = `r:${client}`
    const slot = await this.registrations.take([{ key, max: this.registerLimit }])
    if ('retryAfter' in slot) throw tooManyAttempts('Too many accounts created from this address; try again later', slot.retryAfter)
    try {
      return await create()
    } catch (error) {
      await this.registrations.remove([key], slot.at)
      throw error
    }
  }
}
