// Version history and trash over the vault document. A version or trash item is reached
// only through its owner's vault, and a version only through its live record: a foreign, missing
// or trashed record answers its kind's 404, as everywhere.
import type { Scope } from '../../auth/scopes'
import { AppError, conflict } from '../../http/errors'
import { byId } from '../../store/by-id'
import type { TrashRecord, VaultDocument } from '../../store/records'
import type { DataStore } from '../../store/data-store'
import type { Writer } from '../../store/writer'
import { categoryExists, findCategory, findCategoryTwin } from '../categories/service'
import { EntryService, entryExists, entryLabel, findEntry, findEntryTwin, type PublicEntry } from '../entries/service'
import { entryValue } from '../entries/values'
import { EnvProjectService, envProjectExists, findFile, findFileOfType, findProject, findProjectTwin, type PublicEnvFile } from '../envs/service'
import { findToken, TwoFactorService, type PublicTwoFactor } from '../two-factor/service'
import { hotpCode, normalizedBase32, steamCode, totpCode } from '../two-factor/totp-code'
import type { Vaults } from '../vault-access'
import { expiredItems, findTrashItem, purgeItems, TRASH_SCOPES, type LifecyclePolicy } from './trash'
import { findVersion, listVersions, openVersion, type VersionSummary } from './versions'

export class HistoryService {
  private readonly entries: EntryService
  private readonly envs: EnvProjectService
  private readonly tokens: TwoFactorService

  constructor(
    private readonly vaults: Vaults,
    private readonly now: () => number,
    policy: LifecyclePolicy,
  ) {
    this.entries = new EntryService(vaults, now, policy)
    this.envs = new EnvProjectService(vaults, now, policy)
    this.tokens = new TwoFactorService(vaults, now, policy)
  }

  async entryVersions(userId: string, id: string): Promise<VersionSummary[]> {
    const { data } = await this.vaults.open(userId)
    return listVersions(data, 'entry', findEntry(data, id).id)
  }

  async revealEntryVersion(userId: string, id: string, version: number) {
    const { data, cipher } = await this.vaults.open(userId)
    const entry = findEntry(data, id)
    const found = findVersion(data, 'entry', entry.id, version)
    const value = entryValue(findCategory(data, entry.categoryId), openVersion(cipher, found))
    // A group value that no longer parses (tampering) is not revealed.
    if (value === null) throw new AppError(404, 'VERSION_NOT_FOUND', 'Version not found')
    return { id: entry.id, name: entry.name, environment: entry.environment, version, createdAt: found.createdAt, actor: found.actor, value }
  }

  /** Sets the entry's value to that of the version: a change like any other, so a new version. */
  async restoreEntryVersion(userId: string, id: string, version: number, actor: string): Promise<PublicEntry> {
    const { data, cipher } = await this.vaults.open(userId)
    const entry = findEntry(data, id)
    const plaintext = openVersion(cipher, findVersion(data, 'entry', entry.id, version))
    return this.entries.update(userId, id, { value: plaintext }, actor)
  }

  async envFileVersions(userId: string, projectId: string, fileId: string): Promise<VersionSummary[]> {
    const { data } = await this.vaults.open(userId)
    findProject(data, projectId)
    return listVersions(data, 'envfile', findFile(data, projectId, fileId).id)
  }

  async revealEnvFileVersion(userId: string, projectId: string, fileId: string, version: number) {
    const { data, cipher } = await this.vaults.open(userId)
    findProject(data, projectId)
    const file = findFile(data, projectId, fileId)
    const found = findVersion(data, 'envfile', file.id, version)
    const content = openVersion(cipher, found)
    return { id: file.id, projectId: file.projectId, fileType: file.fileType, version, createdAt: found.createdAt, actor: found.actor, content }
  }

  async restoreEnvFileVersion(userId: string, projectId: string, fileId: string, version: number, actor: string): Promise<PublicEnvFile> {
    const { data, cipher } = await this.vaults.open(userId)
    findProject(data, projectId)
    const file = findFile(data, projectId, fileId)
    const content = openVersion(cipher, findVersion(data, 'envfile', file.id, version))
    return (await this.envs.upsertFile(userId, projectId, { fileType: file.fileType, content }, actor)).file
  }

  async tokenVersions(userId: string, id: string): Promise<VersionSummary[]> {
    const { data } = await this.vaults.open(userId)
    return listVersions(data, 'totp', findToken(data, id).id)
  }

  /** The code of the version's secret now: 2FA secrets never leave the vault, old ones neither. */
  async revealTokenVersion(userId: string, id: string, version: number) {
    const { data, cipher } = await this.vaults.open(userId)
    const token = findToken(data, id)
    const found = findVersion(data, 'totp', token.id, version)
    const secret = normalizedBase32(openVersion(cipher, found))
    if (secret === null) throw new AppError(404, 'VERSION_NOT_FOUND', 'Version not found')
    const { type, counter, ...parameters } = found.totp ?? { algorithm: 'SHA1' as const, digits: 6, period: 30 }
    // An HOTP version shows the code its counter was at (nothing is advanced: restoring it skips that code).
    const code =
      type === 'steam'
        ? steamCode(secret, this.now())
        : type === 'hotp'
          ? { code: hotpCode(secret, counter ?? 0, parameters), remainingSeconds: parameters.period }
          : totpCode(secret, this.now(), parameters)
    return {
      id: token.id,
      service: token.service,
      accountName: token.accountName,
      version,
      createdAt: found.createdAt,
      actor: found.actor,
      ...code,
      ...parameters,
    }
  }

  async restoreTokenVersion(userId: string, id: string, version: number, actor: string): Promise<PublicTwoFactor> {
    const { data, cipher } = await this.vaults.open(userId)
    const token = findToken(data, id)
    const found = findVersion(data, 'totp', token.id, version)
    const secret = openVersion(cipher, found)
    const { algorithm, digits, period, type, counter } = found.totp ?? { algorithm: 'SHA1', digits: 6, period: 30 }
    // As an otpauth URI, so that the secret's own code parameters (and kind) come back with it. An
    // HOTP counter resumes one past the version's: its code there may have been shown by a version reveal.
    const uri =
      type === 'steam'
        ? `otpauth://steam/restored?secret=${encodeURIComponent(secret)}`
        : type === 'hotp'
          ? `otpauth://hotp/restored?secret=${encodeURIComponent(secret)}&algorithm=${algorithm}&digits=${digits}&counter=${(counter ?? 0) + 1}`
          : `otpauth://totp/restored?secret=${encodeURIComponent(secret)}&algorithm=${algorithm}&digits=${digits}&period=${period}`
    return this.tokens.update(userId, id, { secret: uri }, actor)
  }
}

export interface TrashItemSummary {
  id: string
  kind: TrashRecord['kind']
  name: string
  label: string
  recordId: string
  deletedAt: string
  deletedBy: string
  expiresAt: string
  contains: { categories: number; entries: number; twoFactor: number; envProjects: number; envFiles: number }
}

/** The id the deleted record itself had. */
function recordIdOf(item: TrashRecord): string {
  const lists = { entry: item.entries, category: item.categories, twoFactor: item.twoFactor, envProject: item.envProjects, envFile: item.envFiles }
  return lists[item.kind][0]?.id ?? ''
}

/**
 * How a person tells the item apart: an entry by its variable, project and environment
 * ("OPENAI_API_KEY of blog (production)"), since its name is only the project's; others by name.
 */
function labelOf(item: TrashRecord, data: VaultDocument): string {
  const entry = item.kind === 'entry' ? item.entries[0] : undefined
  if (!entry) return item.name
  const category = data.categories.find((c) => c.id === entry.categoryId) ?? data.trash.flatMap((t) => t.categories).find((c) => c.id === entry.categoryId)
  return entryLabel(category, entry)
}

const summary = (item: TrashRecord, data: VaultDocument): TrashItemSummary => ({
  id: item.id,
  kind: item.kind,
  name: item.name,
  label: labelOf(item, data),
  recordId: recordIdOf(item),
  deletedAt: item.deletedAt,
  deletedBy: item.deletedBy,
  expiresAt: item.expiresAt,
  contains: {
    categories: item.categories.length,
    entries: item.entries.length,
    twoFactor: item.twoFactor.length,
    envProjects: item.envProjects.length,
    envFiles: item.envFiles.length,
  },
})

/** An access key sees the kinds it may read, and restores those it may write; a session, all. */
const mayRead = (scopes: readonly string[] | null, item: TrashRecord) => scopes === null || scopes.includes(TRASH_SCOPES[item.kind].read)

/**
 * Puts an item's records back in the live lists. A twin of what lives there now is 409 by the
 * owning service's rule (CATEGORY_EXISTS, ENTRY_EXISTS, ENV_PROJECT_EXISTS, ENV_FILE_EXISTS); an
 * entry or env file whose category or project is gone is 409 TRASH_PARENT_MISSING. Checked
 * before anything changes.
 */
function restoreItem(data: VaultDocument, write: Writer<VaultDocument>, item: TrashRecord): void {
  for (const category of item.categories) {
    const twin = findCategoryTwin(data.categories, category)
    if (twin) throw categoryExists(twin, '; rename it, then restore')
  }
  const restoredCategories = new Set(item.categories.map((c) => c.id))
  for (const entry of item.entries) {
    if (!restoredCategories.has(entry.categoryId) && !byId(data.categories, entry.categoryId)) {
      throw conflict('TRASH_PARENT_MISSING', `The category of "${entry.name}" is no longer there; restore the category first`)
    }
    if (findEntryTwin(data.entries, entry)) throw entryExists(entry, 'in its category; rename or delete it, then restore')
  }
  for (const project of item.envProjects) {
    const twin = findProjectTwin(data.envProjects, project)
    if (twin) throw envProjectExists(twin, '; rename it, then restore')
  }
  const restoredProjects = new Set(item.envProjects.map((p) => p.id))
  for (const file of item.envFiles) {
    if (restoredProjects.has(file.projectId)) continue
    if (!byId(data.envProjects, file.projectId)) {
      throw conflict('TRASH_PARENT_MISSING', 'The project of this env file is no longer there; restore the project first')
    }
    if (findFileOfType(data.envFiles, file.projectId, file.fileType)) {
      throw conflict('ENV_FILE_EXISTS', `The project has a .${file.fileType} file already; delete it, then restore`)
    }
  }
  write.categories.push(...item.categories)
  write.entries.push(...item.entries)
  write.twoFactor.push(...item.twoFactor)
  write.envProjects.push(...item.envProjects)
  write.envFiles.push(...item.envFiles)
  write.trash.remove(item.id)
}

export class TrashService {
  constructor(
    private readonly vaults: Vaults,
    private readonly now: () => number,
  ) {}

  /** Purges what has expired, durably, before anything is answered from the trash. */
  private async swept(userId: string) {
    const vault = await this.vaults.open(userId)
    if (expiredItems(vault.data, this.now()).length > 0) await vault.doc.update((data, write) => purgeItems(data, write, expiredItems(data, this.now())))
    return vault
  }

  /** Newest first. */
  async list(userId: string, scopes: readonly string[] | null): Promise<TrashItemSummary[]> {
    const { data } = await this.swept(userId)
    return data.trash
      .filter((item) => mayRead(scopes, item))
      .map((item) => summary(item, data))
      .sort((a, b) => b.deletedAt.localeCompare(a.deletedAt))
  }

  /** `deny` gives the 403 for a key without the write scope (and records the attempt). */
  async restore(userId: string, id: string, scopes: readonly string[] | null, deny?: (scope: Scope) => Promise<Error>) {
    const { doc, data: before } = await this.swept(userId)
    if (deny && scopes !== null) {
      const item = before.trash.find((t) => t.id === id)
      const need = item && mayRead(scopes, item) ? TRASH_SCOPES[item.kind].write : null
      if (need && !scopes.includes(need)) throw await deny(need)
    }
    return doc.update((data, write) => {
      const item = findTrashItem(data, id, this.now())
      if (!mayRead(scopes, item)) throw new AppError(404, 'TRASH_ITEM_NOT_FOUND', 'Trash item not found')
      const need = TRASH_SCOPES[item.kind].write
      if (scopes !== null && !scopes.includes(need)) throw new AppError(403, 'AUTH_SCOPE_REQUIRED', `This access key lacks the scope ${need}`)
      restoreItem(data, write, item)
      const ids = (list: readonly { id: string }[]) => list.map((r) => r.id)
      return {
        id: item.id,
        kind: item.kind,
        name: item.name,
        recordId: recordIdOf(item),
        restored: {
          categories: ids(item.categories),
          entries: ids(item.entries),
          twoFactor: ids(item.twoFactor),
          envProjects: ids(item.envProjects),
          envFiles: ids(item.envFiles),
        },
      }
    })
  }

  /** Purges one item now, with its versions; answers what it was. */
  async purge(userId: string, id: string): Promise<TrashItemSummary> {
    const { doc } = await this.swept(userId)
    return doc.update((data, write) => {
      const item = findTrashItem(data, id, this.now())
      const purged = summary(item, data)
      purgeItems(data, write, [item])
      return purged
    })
  }

  /** Purges every item now; answers what they were. */
  async purgeAll(userId: string): Promise<TrashItemSummary[]> {
    const { doc, data } = await this.swept(userId)
    if (data.trash.length === 0) return []
    return doc.update((current, write) => {
      const purged = current.trash.map((item) => summary(item, current))
      purgeItems(current, write, current.trash)
      return purged
    })
  }

  /** Purges the expired items of every vault on disk (the background pass); the number purged. */
  async sweepAll(store: DataStore): Promise<number> {
    let purged = 0
    for (const userId of await store.vaultIds()) {
      // Deleted since the listing: not opened (that would fail; nothing re-creates it).
      if (store.wasDeleted(userId)) continue
      const { data, doc } = await this.vaults.open(userId)
      const expired = expiredItems(data, this.now())
      if (expired.length === 0) continue
      purged += expired.length
      await doc.update((current, write) => purgeItems(current, write, expiredItems(current, this.now())))
    }
    return purged
  }
}
