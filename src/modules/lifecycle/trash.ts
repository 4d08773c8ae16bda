// The trash: a deleted entry, category (with its entries), 2FA token, env project
// (with its files) or env file leaves the live lists and is kept, records unchanged (still sealed,
// same ids, so same AADs), in one trash record of the vault document until it expires. Lists,
// details, stats and export read only the live lists, so it disappears from them at once. Its
// versions stay in `versions`, unreachable while their record is not live, and go with it when
// it is purged. A restore (service.ts) checks each owning service's twin rule.
import { NotFound } from '../../http/errors'
import type { Config } from '../../config'
import type { Scope } from '../../auth/scopes'
import type { TrashKind, TrashRecord, VaultDocument } from '../../store/records'
import type { Writer } from '../../store/writer'
import { dropVersions } from './versions'

export interface LifecyclePolicy {
  /** Previous values kept per record (SVC_HISTORY_VERSIONS). */
  historyVersions: number
  /** How long deleted items are kept (SVC_TRASH_DAYS), in ms. */
  trashMs: number
}

export const DEFAULT_POLICY: LifecyclePolicy = { historyVersions: 20, trashMs: 30 * 86_400_000 }

export function policyOf(config: Partial<Pick<Config, 'historyVersions' | 'trashMs'>> | undefined): LifecyclePolicy {
  return { historyVersions: config?.historyVersions ?? DEFAULT_POLICY.historyVersions, trashMs: config?.trashMs ?? DEFAULT_POLICY.trashMs }
}

/** The scopes an access key needs to see (read) and to restore (write) trash items of a kind. */
export const TRASH_SCOPES: Record<TrashKind, { read: Scope; write: Scope }> = {
  entry: { read: 'entries:read', write: 'entries:write' },
  category: { read: 'categories:read', write: 'categories:write' },
  twoFactor: { read: '2fa:read', write: '2fa:write' },
  envProject: { read: 'envs:read', write: 'envs:write' },
  envFile: { read: 'envs:read', write: 'envs:write' },
}

export interface Deletion {
  kind: TrashKind
  name: string
  actor: string
  at: number
  policy: LifecyclePolicy
  records: Partial<Pick<TrashRecord, 'categories' | 'entries' | 'twoFactor' | 'envProjects' | 'envFiles'>>
}

/**
 * Moves these records (already found in the live lists) to the trash. Call it once every check
 * has passed: it changes the vault.
 */
export function moveToTrash(write: Writer<VaultDocument>, deletion: Deletion): TrashRecord {
  const { records } = deletion
  const ids = (list?: readonly { id: string }[]) => new Set((list ?? []).map((r) => r.id))
  const gone = {
    categories: ids(records.categories),
    entries: ids(records.entries),
    twoFactor: ids(records.twoFactor),
    envProjects: ids(records.envProjects),
    envFiles: ids(records.envFiles),
  }
  if (gone.categories.size) write.categories.removeWhere((r) => gone.categories.has(r.id))
  if (gone.entries.size) write.entries.removeWhere((r) => gone.entries.has(r.id))
  if (gone.twoFactor.size) write.twoFactor.removeWhere((r) => gone.twoFactor.has(r.id))
  if (gone.envProjects.size) write.envProjects.removeWhere((r) => gone.envProjects.has(r.id))
  if (gone.envFiles.size) write.envFiles.removeWhere((r) => gone.envFiles.has(r.id))
  const item: TrashRecord = {
    id: crypto.randomUUID(),
    kind: deletion.kind,
    name: deletion.name,
    deletedAt: new Date(deletion.at).toISOString(),
    deletedBy: deletion.actor,
    expiresAt: new Date(deletion.at + deletion.policy.trashMs).toISOString(),
    categories: records.categories ?? [],
    entries: records.entries ?? [],
    twoFactor: records.twoFactor ?? [],
    envProjects: records.envProjects ?? [],
    envFiles: records.envFiles ?? [],
  }
  write.trash.push(item)
  return item
}

const isLive = (item: TrashRecord, now: number) => Date.parse(item.expiresAt) > now

/** The trash item with this id that has not expired yet, or TRASH_ITEM_NOT_FOUND. */
export function findTrashItem(data: VaultDocument, id: string, now: number): TrashRecord {
  const item = data.trash.find((t) => t.id === id)
  if (!item || !isLive(item, now)) throw NotFound.trashItem()
  return item
}

/** Ids of the records whose versions go with a purged item. */
function versionedIds(item: TrashRecord): Set<string> {
  return new Set([...item.entries, ...item.twoFactor, ...item.envFiles].map((r) => r.id))
}

/** Purges these items (and their versions) for good. */
export function purgeItems(data: VaultDocument, write: Writer<VaultDocument>, items: readonly TrashRecord[]): void {
  if (items.length === 0) return
  const purged = new Set(items)
  write.trash.removeWhere((t) => purged.has(t))
  const ids = new Set<string>()
  for (const item of items) for (const id of versionedIds(item)) ids.add(id)
  dropVersions(data, write, ids)
}

/** The items whose time in the trash is over. */
export const expiredItems = (data: VaultDocument, now: number) => data.trash.filter((t) => !isLive(t, now))
