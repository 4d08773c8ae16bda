// Shared vaults: their records and members (the accounts document's `sharedVaults` list), and
// the resolver that turns (caller, vault id, role needed) into the owner id the resource services
// take. A shared vault's documents live under its own id exactly like a user's vault (its own
// data key, AAD = vault id + kind + record id, its own audit log), so those services stay unchanged.
import type { AccessKeys } from '../../auth/access-keys'
import type { Accounts } from '../../auth/accounts'
import { AppError, NotFound } from '../../http/errors'
import { indexById } from '../../store/by-id'
import type { StoredDocument } from '../../store/data-store'
import { departure } from './rotation'
import type { AccountsDocument, SharedVaultRecord, VaultMemberRecord, VaultRole } from '../../store/records'

export const VAULT_ROLES = ['viewer', 'editor', 'admin'] as const satisfies readonly VaultRole[]
const RANK: Record<VaultRole, number> = { viewer: 1, editor: 2, admin: 3 }

/** Whether `role` includes what `need` allows (admin > editor > viewer). */
export const roleAllows = (role: VaultRole, need: VaultRole): boolean => RANK[role] >= RANK[need]

export const roleRequired = (need: VaultRole) => new AppError(403, 'ROLE_REQUIRED', `This operation needs the ${need} role in this vault`)
const lastAdmin = () =>
  new AppError(409, 'LAST_ADMIN', 'The last admin of a vault cannot leave or be demoted: make another member admin first, or delete the vault')

/** Who asks: the caller's own user id and, for an access key, the vault it is bound to. */
export interface VaultCaller {
  userId: string
  accessKey?: { vaultId?: string | null } | null
}

export interface VaultSummary {
  id: string
  name: string
  role: VaultRole
  createdAt: string
  createdBy: string
  memberCount: number
}

export interface VaultMember {
  userId: string
  email: string
  name: string | null
  role: VaultRole
  addedAt: string
  addedBy: string
}

export interface SharedVaultsDeps {
  accountsDoc: StoredDocument<AccountsDocument>
  accounts: Pick<Accounts, 'userById'>
  accessKeys: Pick<AccessKeys, 'revokeWhere'>
  /** Removes a deleted vault's document and its audit log (store.deleteVault, audit.discard). */
  discardVault: (vaultId: string) => Promise<void>
  now: () => number
}

export class SharedVaults {
  constructor(private readonly deps: SharedVaultsDeps) {}

  private get data(): AccountsDocument {
    return this.deps.accountsDoc.data
  }

  /** The vault's record, or undefined (unknown id). */
  record(vaultId: string): SharedVaultRecord | undefined {
    return indexById(this.data.sharedVaults)[vaultId]
  }

  /** The user's role in the vault; null for a non-member or an unknown vault. */
  roleOf(userId: string, vaultId: string): VaultRole | null {
    return this.record(vaultId)?.members.find((member) => member.userId === userId)?.role ?? null
  }

  /** How many shared vaults there are (stats, metrics). */
  get count(): number {
    return this.data.sharedVaults.length
  }

  /**
   * The caller's role when it holds `need`: a vault the caller is not in (or that a key is not
   * bound to) answers 404 exactly as an unknown one; a member without the role 403 ROLE_REQUIRED.
   */
  require(caller: VaultCaller, vaultId: string, need: VaultRole): { vault: SharedVaultRecord; role: VaultRole } {
    const vault = this.record(vaultId)
    const role = vault?.members.find((member) => member.userId === caller.userId)?.role
    if (!vault || !role) throw NotFound.vault()
    if (caller.accessKey && (caller.accessKey.vaultId ?? null) !== vaultId) throw NotFound.vault()
    if (!roleAllows(role, need)) throw roleRequired(need)
    return { vault, role }
  }

  /** The owner id a resource service takes for this vault (the vault id), once the caller holds `need`. */
  ownerFor(caller: VaultCaller, vaultId: string, need: VaultRole): string {
    this.require(caller, vaultId, need)
    return vaultId
  }

  listFor(userId: string): VaultSummary[] {
    const out: VaultSummary[] = []
    for (const vault of this.data.sharedVaults) {
      const member = vault.members.find((each) => each.userId === userId)
      if (member) out.push(summary(vault, member.role))
    }
    return out
  }

  get(caller: VaultCaller, vaultId: string): VaultSummary {
    const { vault, role } = this.require(caller, vaultId, 'viewer')
    return summary(vault, role)
  }

  async create(userId: string, name: string): Promise<VaultSummary> {
    const at = new Date(this.deps.now()).toISOString()
    const record: SharedVaultRecord = {
      id: crypto.randomUUID(),
      name: name.trim(),
      createdAt: at,
      createdBy: userId,
      members: [{ userId, role: 'admin', addedAt: at, addedBy: userId }],
    }
    await this.deps.accountsDoc.update((data, write) => {
      if (!data.users.some((user) => user.id === userId)) throw new AppError(401, 'AUTH_REQUIRED', 'This account no longer exists')
      write.sharedVaults.push(record)
    })
    return summary(record, 'admin')
  }

  async rename(caller: VaultCaller, vaultId: string, name: string): Promise<VaultSummary> {
    this.require(caller, vaultId, 'admin')
    const next = await this.change(vaultId, (vault) => ({ ...vault, name: name.trim() }))
    return summary(next, 'admin')
  }

  /** Deletes the vault: its record and the keys bound to it in one write, then its document and audit log. */
  async delete(caller: VaultCaller, vaultId: string): Promise<SharedVaultRecord> {
    const { vault } = this.require(caller, vaultId, 'admin')
    await this.deps.accountsDoc.update((data, write) => {
      if (!indexById(data.sharedVaults)[vaultId]) throw NotFound.vault()
      write.sharedVaults.remove(vaultId)
      write.vaultInvites.removeWhere((invite) => invite.vaultId === vaultId)
      this.deps.accessKeys.revokeWhere(write, (key) => key.vaultId === vaultId)
    })
    await this.deps.discardVault(vaultId)
    return vault
  }

  members(caller: VaultCaller, vaultId: string): VaultMember[] {
    const { vault } = this.require(caller, vaultId, 'viewer')
    return vault.members.map((member) => this.publicMember(member))
  }

  /** Changes a member's role (admin only); the last admin cannot be demoted (409 LAST_ADMIN). */
  async setRole(caller: VaultCaller, vaultId: string, memberId: string, role: VaultRole): Promise<VaultMember> {
    this.require(caller, vaultId, 'admin')
    const next = await this.change(vaultId, (vault) => {
      const member = vault.members.find((each) => each.userId === memberId)
      if (!member) throw NotFound.member()
      if (member.role === role) return vault
      if (member.role === 'admin' && adminCount(vault) === 1) throw lastAdmin()
      return { ...vault, members: vault.members.map((each) => (each.userId === memberId ? { ...each, role } : each)) }
    })
    return this.publicMember(next.members.find((each) => each.userId === memberId)!)
  }

  /**
   * Removes a member (admin), or the caller themself (leaving: any role). Their access keys bound
   * to the vault are revoked in the same durable change. The last admin cannot leave (409 LAST_ADMIN).
   */
  async removeMember(caller: VaultCaller, vaultId: string, memberId: string): Promise<VaultMemberRecord> {
    this.require(caller, vaultId, memberId === caller.userId ? 'viewer' : 'admin')
    let removed: VaultMemberRecord | undefined
    await this.change(
      vaultId,
      (vault) => {
        removed = vault.members.find((each) => each.userId === memberId)
        if (!removed) throw NotFound.member()
        if (removed.role === 'admin' && adminCount(vault) === 1) throw lastAdmin()
        // The departure note, in the same write: their reads become rotation items (rotation.ts).
        return departure(vault, memberId, this.deps.accounts.userById(memberId)?.email ?? '', new Date(this.deps.now()).toISOString())
      },
      (write) => this.deps.accessKeys.revokeWhere(write, (key) => key.userId === memberId && key.vaultId === vaultId),
    )
    return removed!
  }

  /** Adds a member (invites build on this); an existing member keeps their place with the new role. */
  async addMember(vaultId: string, userId: string, role: VaultRole, addedBy: string): Promise<VaultMember> {
    const at = new Date(this.deps.now()).toISOString()
    const next = await this.change(vaultId, (vault) => {
      const others = vault.members.filter((each) => each.userId !== userId)
      return { ...vault, members: [...others, { userId, role, addedAt: at, addedBy }] }
    })
    return this.publicMember(next.members.find((each) => each.userId === userId)!)
  }

  /** One write that replaces the vault's record with `next(current)` (read inside the write: no lost update). */
  private async change(
    vaultId: string,
    next: (vault: SharedVaultRecord) => SharedVaultRecord,
    alongside?: (write: Parameters<Parameters<StoredDocument<AccountsDocument>['update']>[0]>[1]) => void,
  ): Promise<SharedVaultRecord> {
    return this.deps.accountsDoc.update((data, write) => {
      const current = indexById(data.sharedVaults)[vaultId]
      if (!current) throw NotFound.vault()
      const changed = next(current)
      if (changed !== current) write.sharedVaults.replace(changed)
      alongside?.(write)
      return changed
    })
  }

  private publicMember(member: VaultMemberRecord): VaultMember {
    const user = this.deps.accounts.userById(member.userId)
    return { userId: member.userId, email: user?.email ?? '', name: user?.name ?? null, role: member.role, addedAt: member.addedAt, addedBy: member.addedBy }
  }
}

const adminCount = (vault: SharedVaultRecord) => vault.members.filter((member) => member.role === 'admin').length

const summary = (vault: SharedVaultRecord, role: VaultRole): VaultSummary => ({
  id: vault.id,
  name: vault.name,
  role,
  createdAt: vault.createdAt,
  createdBy: vault.createdBy,
  memberCount: vault.members.length,
})
