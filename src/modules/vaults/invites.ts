// Invites into a shared vault: by e-mail (a pending invite the account with that e-mail lists,
// accepts or declines) or by link (a random token answered once; only its SHA-256 is stored).
// Single use: accepting, declining or revoking removes the invite in the same durable write that
// adds the member, inside the synchronous mutation, so of two parallel accepts exactly one wins.
import type { Admission } from '../../auth/accounts'
import { normalizeEmail } from '../../auth/users'
import { constantTimeEqual, randomToken, sha256Hex } from '../../crypto/tokens'
import { AppError, NotFound } from '../../http/errors'
import { indexById } from '../../store/by-id'
import type { StoredDocument } from '../../store/data-store'
import type { AccountsDocument, SharedVaultRecord, UserRecord, VaultInviteRecord, VaultRole } from '../../store/records'
import type { Writer } from '../../store/writer'
import type { SharedVaults, VaultCaller } from './service'

export const INVITE_TTL_MS = 7 * 24 * 60 * 60 * 1000
const TOKEN_PREFIX = 'svc_inv_'

/** An invite as an admin lists it: never its token. */
export interface VaultInvite {
  id: string
  vaultId: string
  role: VaultRole
  /** The e-mail it is for; null for a link invite. */
  email: string | null
  kind: 'email' | 'link'
  createdAt: string
  createdBy: string
  expiresAt: string
}

/** A pending invite as its invitee lists it (GET /api/invites). */
export interface ReceivedInvite {
  id: string
  vaultId: string
  vaultName: string
  role: VaultRole
  invitedBy: string | null
  createdAt: string
  expiresAt: string
}

export interface InviteDeps {
  accountsDoc: StoredDocument<AccountsDocument>
  sharedVaults: Pick<SharedVaults, 'require'>
  userById: (id: string) => UserRecord | undefined
  baseUrl: string
  now: () => number
}

const alreadyMember = () => new AppError(409, 'ALREADY_MEMBER', 'You are already a member of this vault')
const alreadyInvitee = () => new AppError(409, 'ALREADY_MEMBER', 'That account is already a member of this vault')

export class VaultInvites {
  constructor(private readonly deps: InviteDeps) {}

  private pending(invite: VaultInviteRecord, now = this.deps.now()): boolean {
    return Date.parse(invite.expiresAt) > now
  }

  private view(invite: VaultInviteRecord): VaultInvite {
    return {
      id: invite.id,
      vaultId: invite.vaultId,
      role: invite.role,
      email: invite.email,
      kind: invite.tokenHash === null ? 'email' : 'link',
      createdAt: invite.createdAt,
      createdBy: invite.createdBy,
      expiresAt: invite.expiresAt,
    }
  }

  /**
   * Makes an invite (admin). With `email`: for the account with that e-mail (also one made later);
   * an earlier pending one for the same e-mail is replaced. Without: a link invite whose token is
   * answered here, once. Expired invites of every vault are pruned in the same write.
   */
  async create(
    caller: VaultCaller,
    vaultId: string,
    input: { role: VaultRole; email?: string },
  ): Promise<{ invite: VaultInvite; token?: string; url?: string }> {
    this.deps.sharedVaults.require(caller, vaultId, 'admin')
    const now = this.deps.now()
    const email = input.email === undefined ? null : normalizeEmail(input.email)
    const token = email === null ? TOKEN_PREFIX + randomToken(32) : undefined
    const record: VaultInviteRecord = {
      id: crypto.randomUUID(),
      vaultId,
      role: input.role,
      email,
      tokenHash: token === undefined ? null : sha256Hex(token),
      createdAt: new Date(now).toISOString(),
      createdBy: caller.userId,
      expiresAt: new Date(now + INVITE_TTL_MS).toISOString(),
    }
    await this.deps.accountsDoc.update((data, write) => {
      const vault = indexById(data.sharedVaults)[vaultId]
      if (!vault) throw NotFound.vault()
      if (email !== null && vault.members.some((member) => this.deps.userById(member.userId)?.email === email)) throw alreadyInvitee()
      write.vaultInvites.removeWhere((invite) => !this.pending(invite, now) || (email !== null && invite.vaultId === vaultId && invite.email === email))
      write.vaultInvites.push(record)
    })
    const invite = this.view(record)
    return token === undefined ? { invite } : { invite, token, url: `${this.deps.baseUrl}/invite/${token}` }
  }

  /** The vault's pending invites (admin), without tokens. */
  list(caller: VaultCaller, vaultId: string): VaultInvite[] {
    this.deps.sharedVaults.require(caller, vaultId, 'admin')
    const now = this.deps.now()
    return this.deps.accountsDoc.data.vaultInvites.filter((invite) => invite.vaultId === vaultId && this.pending(invite, now)).map((each) => this.view(each))
  }

  /** Revokes a pending invite (admin); answers it. */
  async revoke(caller: VaultCaller, vaultId: string, inviteId: string): Promise<VaultInvite> {
    this.deps.sharedVaults.require(caller, vaultId, 'admin')
    const removed = await this.deps.accountsDoc.update((data, write) => {
      const invite = indexById(data.vaultInvites)[inviteId]
      if (!invite || invite.vaultId !== vaultId || !this.pending(invite)) throw NotFound.invite()
      write.vaultInvites.remove(inviteId)
      return invite
    })
    return this.view(removed)
  }

  /** The e-mail invites pending for this user, in vaults they are not yet in. */
  received(user: UserRecord): ReceivedInvite[] {
    const data = this.deps.accountsDoc.data
    const vaults = indexById(data.sharedVaults)
    const now = this.deps.now()
    const out: ReceivedInvite[] = []
    for (const invite of data.vaultInvites) {
      const vault = vaults[invite.vaultId]
      if (invite.email !== user.email || !vault || !this.pending(invite, now) || isMember(vault, user.id)) continue
      out.push({
        id: invite.id,
        vaultId: vault.id,
        vaultName: vault.name,
        role: invite.role,
        invitedBy: this.deps.userById(invite.createdBy)?.email ?? null,
        createdAt: invite.createdAt,
        expiresAt: invite.expiresAt,
      })
    }
    return out
  }

  /** Accepts an e-mail invite made for this user's e-mail. */
  acceptById(user: UserRecord, inviteId: string): Promise<Accepted> {
    return this.accept(user, (data) => {
      const invite = indexById(data.vaultInvites)[inviteId]
      return invite && invite.email === user.email ? invite : undefined
    })
  }

  /** Accepts a link invite by its token (any signed-in account holding it). */
  acceptByToken(user: UserRecord, token: string): Promise<Accepted> {
    return this.accept(user, (data) => this.byToken(data, token))
  }

  /** Declines an e-mail invite made for this user's e-mail: it is removed. */
  async decline(user: UserRecord, inviteId: string): Promise<{ invite: VaultInviteRecord; vault: SharedVaultRecord }> {
    return this.deps.accountsDoc.update((data, write) => {
      const invite = indexById(data.vaultInvites)[inviteId]
      const vault = invite && indexById(data.sharedVaults)[invite.vaultId]
      if (!invite || !vault || invite.email !== user.email || !this.pending(invite)) throw NotFound.invite()
      write.vaultInvites.remove(invite.id)
      return { invite, vault }
    })
  }

  /**
   * What lets POST /api/auth/register make an account while sign-up is closed: a pending link
   * invite, used up (and its vault joined) in the write that creates the account.
   */
  admission(token: string): Admission & { accepted: () => Accepted | undefined } {
    let accepted: Accepted | undefined
    const usable = (data: AccountsDocument) => {
      const invite = this.byToken(data, token)
      const vault = invite && indexById(data.sharedVaults)[invite.vaultId]
      if (!invite || !vault || !this.pending(invite)) throw NotFound.invite()
      return { invite, vault }
    }
    return {
      check: (data) => void usable(data),
      apply: (write, user) => {
        const { invite, vault } = usable(this.deps.accountsDoc.data)
        accepted = this.join(write, vault, invite, user)
      },
      accepted: () => accepted,
    }
  }

  private byToken(data: AccountsDocument, token: string): VaultInviteRecord | undefined {
    if (!token.startsWith(TOKEN_PREFIX)) return undefined
    const hash = sha256Hex(token)
    return data.vaultInvites.find((invite) => invite.tokenHash !== null && constantTimeEqual(invite.tokenHash, hash))
  }

  private accept(user: UserRecord, find: (data: AccountsDocument) => VaultInviteRecord | undefined): Promise<Accepted> {
    return this.deps.accountsDoc.update((data, write) => {
      const invite = find(data)
      const vault = invite && indexById(data.sharedVaults)[invite.vaultId]
      if (!invite || !vault || !this.pending(invite)) throw NotFound.invite()
      // Kept for later (an admin's own link is not used up by a click of theirs).
      if (isMember(vault, user.id)) throw alreadyMember()
      return this.join(write, vault, invite, user)
    })
  }

  /** Uses the invite up and adds the member, in the caller's write. */
  private join(write: Writer<AccountsDocument>, vault: SharedVaultRecord, invite: VaultInviteRecord, user: UserRecord): Accepted {
    const at = new Date(this.deps.now()).toISOString()
    write.vaultInvites.remove(invite.id)
    const next = { ...vault, members: [...vault.members, { userId: user.id, role: invite.role, addedAt: at, addedBy: invite.createdBy }] }
    write.sharedVaults.replace(next)
    return { invite, vault: next }
  }
}

export interface Accepted {
  invite: VaultInviteRecord
  vault: SharedVaultRecord
}

const isMember = (vault: SharedVaultRecord, userId: string) => vault.members.some((member) => member.userId === userId)
