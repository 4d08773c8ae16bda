// After a member leaves: what they could have taken. Every secret of the vault whose current value
// their audit events show them reading (reveals of entries, env files and 2FA codes, version
// reveals, exports) becomes a rotation item, `rotation_due` until someone changes its value and
// marks it rotated. The removal writes a `departed` note in its own write; the scan of the vault's
// log turns it into items in a second write, and is redone (on the next list) when a crash fell between.
import { AppError, NotFound } from '../../http/errors'
import { indexById } from '../../store/by-id'
import type { StoredDocument } from '../../store/data-store'
import type { AccountsDocument, DepartedMemberRecord, RotationItemRecord, RotationKind, SharedVaultRecord, VaultDocument } from '../../store/records'
import type { AuditEvent } from '../../audit/events'
import type { Vaults } from '../vault-access'

/** Actions whose records' values the actor read; their records name what (kind, id). */
const REVEALS: Readonly<Record<string, RotationKind>> = {
  'entry.reveal': 'entry',
  'entry.version_reveal': 'entry',
  'twofa.reveal': 'twofa',
  'twofa.version_reveal': 'twofa',
  'envfile.read': 'envfile',
  'envfile.version_reveal': 'envfile',
  // AI extract answers the values of every entry it names.
  'ai.extract': 'entry',
}

export interface RotationItem {
  kind: RotationKind
  id: string
  name: string | null
  revealedBy: { userId: string; email: string }[]
  since: string
  rotatedAt: string | null
  status: 'rotation_due' | 'rotated'
}

interface RotationDeps {
  accountsDoc: StoredDocument<AccountsDocument>
  vaults: Pick<Vaults, 'withVault'>
  /** Every event of the vault's log, newest first (audit.list paged). */
  events: (vaultId: string, memberUserId: string) => AsyncIterable<AuditEvent>
  now: () => number
}

/** A departed member's read of a secret's current value. */
interface Read {
  kind: RotationKind
  id: string
  name: string | null
  by: DepartedMemberRecord
  valueVersion: number
}

interface SecretRecord {
  name: string | null
  createdAt: string
  rotatedAt?: string
  valueVersion?: number
}

/** A departure note, for the removal's own write (SharedVaults.removeMember, Accounts.removeUser). */
export const departure = (vault: SharedVaultRecord, userId: string, email: string, at: string): SharedVaultRecord => ({
  ...vault,
  members: vault.members.filter((member) => member.userId !== userId),
  departed: [...(vault.departed ?? []), { userId, email, at }],
})

export class VaultRotation {
  /** One scan per vault at a time (a second removal waits for the first's). */
  private readonly scanning = new Map<string, Promise<void>>()

  constructor(private readonly deps: RotationDeps) {}

  /** The vault's rotation list (after the scan of every departure not yet scanned). */
  async list(vaultId: string): Promise<RotationItem[]> {
    await this.scanDepartures(vaultId)
    return (this.vault(vaultId).rotation ?? []).map(publicItem)
  }

  /**
   * Marks one item rotated: only once its value changed after it became due (409 NOT_ROTATED
   * before), or its record is no longer in the vault (deleted: nothing left to change here).
   * Marking an item already rotated answers it as it is.
   */
  async markRotated(vaultId: string, kind: RotationKind, id: string, by: string): Promise<{ item: RotationItem; changed: boolean }> {
    await this.scanDepartures(vaultId)
    const record = await this.deps.vaults.withVault(vaultId, (vault) => secretOf(vault.data, kind, id))
    const at = new Date(this.deps.now()).toISOString()
    let changed = false
    const next = await this.deps.accountsDoc.update((data, write) => {
      const vault = indexById(data.sharedVaults)[vaultId]
      if (!vault) throw NotFound.vault()
      const item = (vault.rotation ?? []).find((each) => each.kind === kind && each.id === id)
      if (!item) throw NotFound.rotationItem()
      if (item.rotatedAt !== null) return item
      if (record && (record.valueVersion ?? 1) <= item.valueVersion)
        throw new AppError(409, 'NOT_ROTATED', 'Its value has not changed since it became due: change the value first, then mark it rotated')
      const rotated: RotationItemRecord = { ...item, rotatedAt: at, rotatedBy: by }
      write.sharedVaults.replace({ ...vault, rotation: vault.rotation!.map((each) => (each === item ? rotated : each)) })
      changed = true
      return rotated
    })
    return { item: publicItem(next), changed }
  }

  /** Turns the vault's departure notes into rotation items (one scan at a time per vault). */
  scanDepartures(vaultId: string): Promise<void> {
    const vault = this.vault(vaultId)
    if (!vault.departed?.length) return this.scanning.get(vaultId) ?? Promise.resolve()
    const previous = this.scanning.get(vaultId) ?? Promise.resolve()
    const run = previous.then(() => this.scanOnce(vaultId))
    const settled = run.finally(() => {
      if (this.scanning.get(vaultId) === settled) this.scanning.delete(vaultId)
    })
    this.scanning.set(vaultId, settled)
    return settled
  }

  private vault(vaultId: string): SharedVaultRecord {
    const vault = indexById(this.deps.accountsDoc.data.sharedVaults)[vaultId]
    if (!vault) throw NotFound.vault()
    return vault
  }

  private async scanOnce(vaultId: string): Promise<void> {
    const departed = this.vault(vaultId).departed ?? []
    if (departed.length === 0) return
    const found = new Map<string, Read[]>()
    for (const member of departed) {
      for (const [key, value] of await this.readBy(vaultId, member)) found.set(key, [...(found.get(key) ?? []), value])
    }
    await this.deps.accountsDoc.update((data, write) => {
      const vault = indexById(data.sharedVaults)[vaultId]
      if (!vault) return
      const items = [...(vault.rotation ?? [])]
      for (const reads of found.values()) {
        for (const read of reads) {
          const at = items.findIndex((item) => item.kind === read.kind && item.id === read.id)
          const current = at >= 0 ? items[at] : undefined
          const who = { userId: read.by.userId, email: read.by.email }
          if (current && current.rotatedAt === null) {
            if (!current.revealedBy.some((each) => each.userId === who.userId)) items[at] = { ...current, revealedBy: [...current.revealedBy, who] }
          } else {
            const item: RotationItemRecord = {
              kind: read.kind,
              id: read.id,
              name: read.name,
              revealedBy: [who],
              since: read.by.at,
              valueVersion: read.valueVersion,
              rotatedAt: null,
              rotatedBy: null,
            }
            if (current) items[at] = item
            else items.push(item)
          }
        }
      }
      // By who and when, not by object: a departure noted meanwhile waits for the next scan.
      const scanned = new Set(departed.map((each) => `${each.userId}|${each.at}`))
      write.sharedVaults.replace({ ...vault, rotation: items, departed: (vault.departed ?? []).filter((each) => !scanned.has(`${each.userId}|${each.at}`)) })
    })
  }

  /**
   * The secrets whose current value `member` read, by "kind:id". A read counts when it came after
   * the value last changed (one of an older value is a secret already replaced) and, for an item
   * marked rotated, after that mark was due again.
   */
  private async readBy(vaultId: string, member: DepartedMemberRecord) {
    const rotation = this.vault(vaultId).rotation ?? []
    const reads: { kind: RotationKind; id: string; time: number }[] = []
    const exports: { kind: 'entry' | 'twofa'; time: number; name: string | null; environment: string | null }[] = []
    for await (const event of this.deps.events(vaultId, member.userId)) {
      if (event.outcome !== 'ok' || event.actor.userId !== member.userId) continue
      const time = Date.parse(event.time)
      const kind = REVEALS[event.action]
      if (kind) {
        for (const record of event.records) if (record.kind === kind) reads.push({ kind, id: record.id, time })
      } else if (event.action === 'export.read') {
        const named = event.records.filter((record) => record.kind === 'entry')
        for (const record of named) reads.push({ kind: 'entry', id: record.id, time })
        // Over 50 entries the event names none: every entry its filters chose then.
        if (named.length === 0 && Number(event.details.entries ?? 0) > 0) {
          const filters = (event.details.filters ?? {}) as { name?: string | null; environment?: string | null }
          exports.push({ kind: 'entry', time, name: filters.name ?? null, environment: filters.environment ?? null })
        }
      } else if (event.action === 'twofa.export') {
        // The export names no token: every token there was.
        exports.push({ kind: 'twofa', time, name: null, environment: null })
      }
    }
    return this.deps.vaults.withVault(vaultId, (vault) => {
      const out = new Map<string, Read>()
      const take = (kind: RotationKind, id: string, time: number) => {
        const record = secretOf(vault.data, kind, id)
        if (!record) return
        // Read before the value last changed: that value is gone.
        if (time < Date.parse(record.rotatedAt ?? record.createdAt)) return
        const marked = rotation.find((item) => item.kind === kind && item.id === id)
        if (marked?.rotatedAt && time < Date.parse(marked.rotatedAt)) return
        out.set(`${kind}:${id}`, { kind, id, name: record.name, by: member, valueVersion: record.valueVersion ?? 1 })
      }
      for (const read of reads) take(read.kind, read.id, read.time)
      for (const exported of exports) {
        if (exported.kind === 'twofa') {
          for (const token of vault.data.twoFactor) take('twofa', token.id, exported.time)
          continue
        }
        for (const entry of vault.data.entries) {
          if (exported.name !== null && entry.name !== exported.name) continue
          if (exported.environment !== null && entry.environment !== null && entry.environment !== exported.environment) continue
          take('entry', entry.id, exported.time)
        }
      }
      return out
    })
  }
}

/** The record behind an item, with its name as the audit events give it; undefined once deleted. */
function secretOf(data: VaultDocument, kind: RotationKind, id: string): SecretRecord | undefined {
  if (kind === 'entry') {
    const entry = indexById(data.entries)[id]
    return entry && { ...entry, name: entry.name }
  }
  if (kind === 'twofa') {
    const token = indexById(data.twoFactor)[id]
    return token && { ...token, name: `${token.service} (${token.accountName})` }
  }
  const file = indexById(data.envFiles)[id]
  return file && { ...file, name: file.fileType }
}

const publicItem = (item: RotationItemRecord): RotationItem => ({
  kind: item.kind,
  id: item.id,
  name: item.name,
  revealedBy: item.revealedBy.map((each) => ({ userId: each.userId, email: each.email })),
  since: item.since,
  rotatedAt: item.rotatedAt,
  status: item.rotatedAt === null ? 'rotation_due' : 'rotated',
})
