// The accounts' users, indexed in memory: by id, e-mail, identity-provider identity and passkey
// credential id, so that no sign-in scans every user. One index, kept in step by `put` and
// `remove` only.
import type { UserRecord } from '../store/records'

export const normalizeEmail = (email: string) => email.trim().toLowerCase()

const identityKey = (issuer: string, subject: string) => `${issuer}\u0000${subject}`

export class UserIndex {
  private readonly byId = new Map<string, UserRecord>()
  private readonly byEmail = new Map<string, UserRecord>()
  private readonly byIdentity = new Map<string, UserRecord>()
  private readonly byCredential = new Map<string, UserRecord>()

  /** Indexes these users only (at start, and after a failed write reloaded the document). */
  reset(users: readonly UserRecord[]): void {
    this.byId.clear()
    this.byEmail.clear()
    this.byIdentity.clear()
    this.byCredential.clear()
    for (const user of users) this.put(user)
  }

  /** Indexes a new user, or the record that replaced a user (its old identities and passkeys leave first). */
  put(user: UserRecord): void {
    const before = this.byId.get(user.id)
    if (before) this.removeCredentials(before)
    this.byId.set(user.id, user)
    this.byEmail.set(user.email, user)
    for (const id of user.identities) this.byIdentity.set(identityKey(id.issuer, id.subject), user)
    for (const passkey of user.passkeys ?? []) this.byCredential.set(passkey.credentialId, user)
  }

  remove(user: UserRecord): void {
    this.byId.delete(user.id)
    if (this.byEmail.get(user.email)?.id === user.id) this.byEmail.delete(user.email)
    this.removeCredentials(user)
  }

  private removeCredentials(user: UserRecord): void {
    for (const id of user.identities) this.byIdentity.delete(identityKey(id.issuer, id.subject))
    for (const passkey of user.passkeys ?? []) if (this.byCredential.get(passkey.credentialId)?.id === user.id) this.byCredential.delete(passkey.credentialId)
  }

  id(id: string): UserRecord | undefined {
    return this.byId.get(id)
  }

  /** By an e-mail already normalized (normalizeEmail). */
  email(email: string): UserRecord | undefined {
    return this.byEmail.get(email)
  }

  identity(issuer: string, subject: string): UserRecord | undefined {
    return this.byIdentity.get(identityKey(issuer, subject))
  }

  /** The user holding the passkey with this WebAuthn credential id. */
  credential(credentialId: string): UserRecord | undefined {
    return this.byCredential.get(credentialId)
  }
}
