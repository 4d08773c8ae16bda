// Account settings (issue 16): re-authentication for sensitive changes, the session list,
// password changes and account deletion.
import type { AccessKeys } from '../../auth/access-keys'
import type { Accounts } from '../../auth/accounts'
import type { AuthContext } from '../../auth/guard'
import { deviceName } from '../../auth/device'
import { AppError } from '../../http/errors'
import type { Store } from '../../store/store'

export interface SessionView {
  id: string
  createdAt: string
  lastSeenAt: string
  clientAddress: string
  device: string
  current: boolean
}

export class AccountSettings {
  constructor(
    private readonly accounts: Accounts,
    private readonly accessKeys: AccessKeys,
    private readonly store: Store,
  ) {}

  /**
   * Proves the caller is the account's owner again: its password (throttled like sign-in), or for
   * an account without one, a single sign-on sign-in of this session within the last 10 minutes.
   */
  async reauthenticate(auth: AuthContext, password: string | undefined, client: string): Promise<void> {
    const user = auth.user
    if (user.passwordHash !== null) {
      if (password === undefined) throw new AppError(401, 'INVALID_CREDENTIALS', 'The password is required')
      await this.accounts.confirmPassword(user, password, client)
      return
    }
    if (!this.accounts.isFreshOidcSession(auth.sessionTokenHash)) {
      throw new AppError(403, 'REAUTHENTICATION_REQUIRED', 'This account has no password: sign in with single sign-on again (within 10 minutes) first')
    }
  }

  sessions(auth: AuthContext): SessionView[] {
    return this.accounts
      .liveSessions(auth.userId)
      .sort((a, b) => Date.parse(b.lastSeenAt ?? b.createdAt) - Date.parse(a.lastSeenAt ?? a.createdAt))
      .map((s) => ({
        id: s.id!,
        createdAt: s.createdAt,
        lastSeenAt: s.lastSeenAt ?? s.createdAt,
        clientAddress: s.clientAddress ?? 'unknown',
        device: deviceName(s.userAgent),
        current: s.tokenHash === auth.sessionTokenHash,
      }))
  }

  /** Sets a new password; every other session of the account ends. */
  async changePassword(auth: AuthContext, input: { currentPassword?: string; newPassword: string }, client: string): Promise<void> {
    await this.reauthenticate(auth, input.currentPassword, client)
    const hash = await Bun.password.hash(input.newPassword, 'argon2id')
    await this.accounts.setPasswordHash(auth.user, hash, auth.sessionTokenHash)
  }

  /**
   * Deletes the account: the user, their sessions and access keys (one write of the accounts
   * document, after which nothing of theirs authenticates), then their vault file and change log.
   */
  async deleteAccount(auth: AuthContext, password: string | undefined, client: string): Promise<void> {
    await this.reauthenticate(auth, password, client)
    await this.accounts.removeUser(auth.user)
    this.accessKeys.reindex(this.store.accounts.data)
    await this.store.deleteVault(auth.userId)
  }
}
