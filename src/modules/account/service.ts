// Account settings: re-authentication for sensitive changes, the session list,
// password changes and account deletion.
import type { AccessKeys } from '../../auth/access-keys'
import type { Accounts } from '../../auth/accounts'
import type { AuthContext } from '../../auth/guard'
import { deviceName } from '../../auth/device'
import { AppError, NotFound } from '../../http/errors'
import type { UserRecord } from '../../store/records'
import type { DataStore } from '../../store/data-store'

/** How far back "recently added" reaches (sign out everywhere, password change). */
export const RECENT_ADDITIONS_MS = 30 * 86_400_000

export interface RemoveAdditions {
  passkeys?: string[]
  accessKeys?: string[]
  oidcLink?: boolean
}

/** What a removal took away, for the audit log (names, never a key). */
export interface Removed {
  passkeys: { id: string; name: string }[]
  accessKeys: { id: string; name: string }[]
  oidcLink: boolean
}

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
    private readonly store: DataStore,
    private readonly now: () => number = Date.now,
  ) {}

  /** The passkeys, access keys and single sign-on links added in the last 30 days (a stolen session may have added them). */
  recentAdditions(user: UserRecord, providerName: string | null) {
    const since = this.now() - RECENT_ADDITIONS_MS
    const recent = (at: string | null | undefined) => typeof at === 'string' && Date.parse(at) >= since
    return {
      since: new Date(since).toISOString(),
      passkeys: (user.passkeys ?? []).filter((p) => recent(p.createdAt)).map((p) => ({ id: p.id, name: p.name, createdAt: p.createdAt })),
      accessKeys: this.accessKeys
        .list(user.id)
        .filter((k) => recent(k.createdAt))
        .map((k) => ({ id: k.id, name: k.name, keyPrefix: k.keyPrefix, createdAt: k.createdAt, lastUsedAt: k.lastUsedAt })),
      oidcLinks: user.identities.filter((i) => recent(i.linkedAt)).map((i) => ({ name: providerName, linkedAt: i.linkedAt! })),
    }
  }

  /** Checks a removal before anything changes: every id the user's own (404 otherwise); the only way in stays (409). */
  checkRemoval(user: UserRecord, remove: RemoveAdditions | undefined, passwordComing = false) {
    const passkeyIds = [...new Set(remove?.passkeys ?? [])]
    const keyIds = [...new Set(remove?.accessKeys ?? [])]
    const passkeys = passkeyIds.map((id) => (user.passkeys ?? []).find((p) => p.id === id))
    if (passkeys.some((p) => !p)) throw new AppError(404, 'PASSKEY_NOT_FOUND', 'Passkey not found')
    const owned = this.accessKeys.list(user.id)
    const keys = keyIds.map((id) => owned.find((k) => k.id === id))
    if (keys.some((k) => !k)) throw NotFound.accessKey()
    const hasPassword = passwordComing || (this.accounts.userById(user.id) ?? user).passwordHash !== null
    if (remove?.oidcLink && user.identities.length > 0 && !hasPassword) {
      throw new AppError(409, 'LAST_SIGN_IN_METHOD', 'Single sign-on is the only way into this account: it cannot be unlinked')
    }
    return { passkeyIds, passkeys, keys }
  }

  /**
   * Removes the chosen passkeys, access keys and single sign-on link. Every id is checked first
   * (a foreign or unknown one: 404, nothing removed); unlinking the only way in is 409.
   */
  async removeAdditions(user: UserRecord, remove: RemoveAdditions | undefined): Promise<Removed> {
    const removed: Removed = { passkeys: [], accessKeys: [], oidcLink: false }
    if (!remove) return removed
    const { passkeyIds, passkeys, keys } = this.checkRemoval(user, remove)
    if (passkeys.length > 0) {
      await this.accounts.updateUser(user, (u) => {
        u.passkeys = (u.passkeys ?? []).filter((p) => !passkeyIds.includes(p.id))
      })
      removed.passkeys = passkeys.map((p) => ({ id: p!.id, name: p!.name }))
    }
    for (const key of keys) {
      await this.accessKeys.revoke(user.id, key!.id).catch((error) => {
        // Revoked meanwhile by another request: gone either way.
        if (!(error instanceof AppError && error.status === 404)) throw error
      })
      removed.accessKeys.push({ id: key!.id, name: key!.name })
    }
    if (remove.oidcLink && user.identities.length > 0) {
      await this.accounts.unlinkIdentities(this.accounts.userById(user.id) ?? user)
      removed.oidcLink = true
    }
    return removed
  }

  /**
   * Proves the caller is the account's owner again: its password (throttled like sign-in), or for
   * an account without one, a sign-in (single sign-on, passkey) or a passkey re-authentication of
   * this session within the last 10 minutes.
   */
  async reauthenticate(auth: AuthContext, password: string | undefined, client: string): Promise<void> {
    const user = auth.user
    if (user.passwordHash !== null) {
      if (password === undefined) throw new AppError(401, 'INVALID_CREDENTIALS', 'The password is required')
      await this.accounts.confirmPassword(user, password, client)
      return
    }
    if (!this.accounts.isFreshSession(auth.sessionTokenHash)) {
      throw new AppError(
        403,
        'REAUTHENTICATION_REQUIRED',
        'This account has no password: sign in with single sign-on again, or confirm with a passkey (within 10 minutes), first',
      )
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
    await this.accounts.setPassword(auth.user, input.newPassword, auth.sessionTokenHash)
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
