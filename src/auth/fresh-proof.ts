// Re-authentication for what outlives a session. A stolen session cookie must not turn
// into lasting access: adding a passkey, linking single sign-on, creating an access key,
// approving a device sign-in, changing the webhook, exporting 2FA secrets and deleting the
// account need a fresh proof: the session signed in, or re-authenticated (POST /api/auth/reauth),
// within the last 10 minutes (FRESH_SIGN_IN_MS). A proof is what a sign-in asks for: the password
// plus the second factor when two-factor sign-in is on, or a passkey (a sign-in of its own).
//
// Two ways to use it (docs/account.md, "Re-authentication"):
//   requireFreshProof(accounts, auth)            a route whose body carries no proof: 403 when stale
//   freshProof.requireOrProve(auth, body, client) a route whose body may carry the proof itself
//                                                (password, code or recoveryCode), as exporting
//                                                2FA secrets does: checked like a sign-in
import type { UserRecord } from '../store/records'
import { AppError, validationError } from '../http/errors'
import type { Accounts } from './accounts'
import type { AuthContext } from './guard'
import type { TwoFactorSignIn } from './second-factor'

export const reauthRequired = () =>
  new AppError(
    403,
    'REAUTHENTICATION_REQUIRED',
    'Confirm it is you first: re-authenticate (POST /api/auth/reauth) with your password, plus a two-factor code when it is on, or with a passkey; the proof lasts 10 minutes',
  )

/**
 * Throws 403 REAUTHENTICATION_REQUIRED unless the caller is a session that signed in or
 * re-authenticated within the last 10 minutes. An access key never counts: it holds no proof of
 * its own (the routes guarded this way accept sessions only anyway).
 */
export function requireFreshProof(accounts: Pick<Accounts, 'isFreshSession'>, auth: Pick<AuthContext, 'method' | 'sessionTokenHash'>): void {
  if (auth.method !== 'session' || !accounts.isFreshSession(auth.sessionTokenHash)) throw reauthRequired()
}

/** What a request may carry as a proof (a passkey goes through POST /api/auth/reauth instead). */
export interface PasswordProof {
  password?: string
  code?: string
  recoveryCode?: string
}

export class FreshProof {
  constructor(private readonly deps: { accounts: Accounts; twoFactor: TwoFactorSignIn }) {}

  /**
   * Checks the password, and the second factor when it is on (each throttled like a sign-in,
   * counted before the check): 401 INVALID_CREDENTIALS, 401 INVALID_TWO_FACTOR_CODE, 429
   * TOO_MANY_ATTEMPTS; 400 when a part is missing; 403 REAUTHENTICATION_REQUIRED for an account
   * without a password (a passkey, or a new single sign-on sign-in, proves it instead). What the
   * check used up (a code's step, a recovery code) is written by the caller's next write.
   */
  async checkPassword(user: UserRecord, proof: PasswordProof, client: string): Promise<void> {
    if (user.passwordHash === null) {
      throw new AppError(403, 'REAUTHENTICATION_REQUIRED', 'This account has no password: confirm with a passkey, or sign in with single sign-on again')
    }
    if (typeof proof.password !== 'string' || proof.password === '') throw validationError('password', 'is required (or confirm with a passkey)')
    const secondFactor = user.twoFactor ? { code: proof.code || undefined, recoveryCode: proof.recoveryCode || undefined } : null
    if (secondFactor && !secondFactor.code && !secondFactor.recoveryCode) {
      throw validationError('code', 'two-factor sign-in is on: send code or recoveryCode with the password')
    }
    await this.deps.accounts.confirmPassword(user, proof.password, client)
    if (secondFactor) await this.deps.twoFactor.verify(user, secondFactor, client)
  }

  /**
   * For a route that takes the proof in its own body: a password proof when one is sent
   * (checked, and noted on the session as a re-authentication), else a fresh session; else 403
   * REAUTHENTICATION_REQUIRED. In a fresh session the password alone is checked (the session's
   * proof covers the second factor); otherwise, with two-factor sign-in on, a code or recovery
   * code must come with it. With an access key the proof must be in the request.
   */
  async requireOrProve(auth: AuthContext, proof: PasswordProof | undefined, client: string): Promise<void> {
    if (proof && typeof proof.password === 'string' && proof.password !== '') {
      const fresh = auth.method === 'session' && this.deps.accounts.isFreshSession(auth.sessionTokenHash)
      if (fresh && auth.user.passwordHash !== null && !proof.code && !proof.recoveryCode) {
        // A fresh session proved the second factor already: the password confirms the intent.
        await this.deps.accounts.confirmPassword(auth.user, proof.password, client)
        return
      }
      await this.checkPassword(auth.user, proof, client)
      if (auth.method === 'session' && auth.sessionTokenHash) await this.deps.accounts.stampReauth(auth.sessionTokenHash)
      else await this.deps.twoFactor.persist(auth.user)
      return
    }
    requireFreshProof(this.deps.accounts, auth)
  }
}
