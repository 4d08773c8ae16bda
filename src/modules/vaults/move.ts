// Moving or copying a project between a member's personal vault and a shared vault.
//
// A project is: the entries whose `name` is the project, one env project (the one named so, or
// `envProjectId`) with its env files, and the 2FA tokens named by `twoFactorIds`; each with its
// history (versions). The trash stays where it is. Values are opened under the source vault's
// data key and sealed again under the target's (AAD = target owner + kind + id). Categories the
// entries need are matched in the target by the twin rule (same key type, sameName) or created.
//
// Two documents cannot change in one write, so a move is journalled in the accounts document:
//   1. the intent (a MoveRecord naming every id on both sides) is written;
//   2. the target gets the records (one write: all or none);
//   3. the source loses them (one write), unless one changed since it was read: then the intent
//      turns `back`, the target loses what step 2 added, and the caller gets 409 MOVE_CONFLICT;
//   4. the intent is removed.
// After a crash, start-up (recover) looks at each intent left: `forward` with the target holding
// any of its records -> step 3 and 4 again; otherwise (or `back`) -> the target's records go and
// the intent with them. So the project is whole on exactly one side. A copy is one write to the
// target (new ids): it needs no journal.
import { createHash, randomUUID } from 'node:crypto'
import { sameName } from '../../domain/rules'
import { AppError, conflict, NotFound, notFound } from '../../http/errors'
import type { StoredDocument } from '../../store/data-store'
import { indexById } from '../../store/by-id'
import type {
  AccountsDocument,
  CategoryRecord,
  EntryRecord,
  EnvFileRecord,
  EnvProjectRecord,
  MoveRecord,
  MoveRecordIds,
  TwoFactorRecord,
  VaultDocument,
  VersionRecord,
} from '../../store/records'
import type { Writer } from '../../store/writer'
import type { OpenVault, Vaults } from '../vault-access'
import { versionId } from '../lifecycle/versions'

export interface MoveRequest {
  /** Owner ids: the vault the project leaves (or is copied from) and the one it goes to. */
  from: string
  to: string
  project: string
  envProjectId?: string
  twoFactorIds?: readonly string[]
  copy: boolean
}

export interface MoveResult {
  copy: boolean
  project: string
  /** Ids in the target vault. */
  entryIds: string[]
  envProjectId: string | null
  envFileIds: string[]
  twoFactorIds: string[]
  versions: number
  categoriesCreated: string[]
}

/** Where a fault-injection test kills the process (SVC_TEST_MOVE_CRASH_AT, NODE_ENV=test only). */
export type MoveCrashPoint = 'after-intent' | 'after-target' | 'after-source'

export interface MovesDeps {
  accountsDoc: StoredDocument<AccountsDocument>
  vaults: Vaults
  now: () => number
  log: (line: string) => void
  /** Called at each step (fault injection: the crash test kills the process there). */
  faultAt?: (point: MoveCrashPoint) => void
}

const LISTS = ['categories', 'entries', 'twoFactor', 'envProjects', 'envFiles', 'versions'] as const
type MovedList = (typeof LISTS)[number]

const noIds = (): { -readonly [K in keyof MoveRecordIds]: string[] } => ({
  categories: [],
  entries: [],
  twoFactor: [],
  envProjects: [],
  envFiles: [],
  versions: [],
})

export const moveConflict = () => conflict('MOVE_CONFLICT', 'The project changed while it was being moved: nothing was moved; try again')

interface Plan {
  intent: MoveRecord
  /** The source's records as read: the move goes ahead only while they are still these. */
  read: Map<string, unknown>
  added: {
    categories: CategoryRecord[]
    entries: EntryRecord[]
    twoFactor: TwoFactorRecord[]
    envProjects: EnvProjectRecord[]
    envFiles: EnvFileRecord[]
    versions: VersionRecord[]
  }
  result: MoveResult
}

export class Moves {
  constructor(private readonly deps: MovesDeps) {}

  async move(request: MoveRequest): Promise<MoveResult> {
    const source = await this.deps.vaults.open(request.from)
    const target = await this.deps.vaults.open(request.to)
    const plan = this.plan(request, source, target)
    if (request.copy) {
      await target.doc.update((data, write) => this.addToTarget(data, write, plan))
      return plan.result
    }
    const { intent } = plan
    await this.deps.accountsDoc.update((_, write) => write.moves.push(intent))
    this.crashPoint('after-intent')
    try {
      await target.doc.update((data, write) => this.addToTarget(data, write, plan))
    } catch (error) {
      await this.forget(intent.id)
      throw error
    }
    this.crashPoint('after-target')
    try {
      await source.doc.update((data, write) => {
        // Changed since read (a value set, a rename): undone below rather than lost.
        for (const list of LISTS) {
          const byId = indexById(data[list] as readonly { id: string }[])
          for (const id of intent.source[list]) if (byId[id] !== plan.read.get(`${list}:${id}`)) throw moveConflict()
        }
        removeIds(write, intent.source)
      })
    } catch (error) {
      await this.undo(intent)
      throw error
    }
    this.crashPoint('after-source')
    await this.forget(intent.id)
    return plan.result
  }

  /** Finishes or undoes every move a crash left (start-up, before any request). */
  async recover(): Promise<number> {
    // A copy: forgetting one removes it from the stored list in place.
    const left = [...(this.deps.accountsDoc.data.moves ?? [])]
    const exists = (owner: string) => {
      const data = this.deps.accountsDoc.data
      return Boolean(indexById(data.users)[owner] ?? indexById(data.sharedVaults)[owner])
    }
    for (const intent of left) {
      // A vault deleted since (an account, a shared vault) is not opened (that would create it
      // again): whatever the other side holds stays there.
      if (!exists(intent.to) || !exists(intent.from)) {
        await this.forget(intent.id)
        continue
      }
      const target = await this.deps.vaults.open(intent.to)
      const source = await this.deps.vaults.open(intent.from)
      // Forward only when the target holds the copy and the source is as it was copied: a write
      // acknowledged on the source since (before the crash) is kept by undoing the move instead.
      const landed = intent.phase === 'forward' && holdsAny(target.data, intent.target)
      const sourceGone = !holdsAny(source.data, intent.source)
      if (landed && (sourceGone || digestOf(source.data, intent.source) === intent.sourceDigest)) {
        await source.doc.update((_, write) => removeIds(write, intent.source))
        this.deps.log(`info: finished the project move ${intent.id} a stop interrupted (${intent.from} -> ${intent.to})`)
      } else {
        await target.doc.update((_, write) => removeIds(write, intent.target))
        this.deps.log(`info: undid the project move ${intent.id} a stop interrupted (${intent.from} -> ${intent.to})`)
      }
      await this.forget(intent.id)
    }
    return left.length
  }

  private async undo(intent: MoveRecord): Promise<void> {
    const back: MoveRecord = { ...intent, phase: 'back' }
    await this.deps.accountsDoc.update((data, write) => {
      if (indexById(data.moves)[intent.id]) write.moves.replace(back)
    })
    const target = await this.deps.vaults.open(intent.to)
    await target.doc.update((_, write) => removeIds(write, intent.target))
    await this.forget(intent.id)
  }

  private async forget(id: string): Promise<void> {
    await this.deps.accountsDoc.update((_, write) => {
      write.moves.remove(id)
    })
  }

  private crashPoint(point: MoveCrashPoint): void {
    this.deps.faultAt?.(point)
  }

  /** Reads the project in the source and builds its copy for the target (values sealed again). */
  private plan(request: MoveRequest, source: OpenVault, target: OpenVault): Plan {
    const src = source.data
    const dst = target.data
    const at = new Date(this.deps.now()).toISOString()
    const read = new Map<string, unknown>()
    const sourceIds = noIds()
    const targetIds = noIds()
    const taken = new Set<string>(LISTS.flatMap((list) => (dst[list] as readonly { id: string }[]).map((r) => r.id)))
    // A move keeps a record's id (links to it still work) unless the target holds it already; a copy gets new ones.
    const idFor = (id: string) => {
      const next = request.copy || taken.has(id) ? randomUUID() : id
      taken.add(next)
      return next
    }
    const remember = (list: MovedList, record: { id: string }) => {
      read.set(`${list}:${record.id}`, record)
      sourceIds[list].push(record.id)
    }
    const added: Plan['added'] = { categories: [], entries: [], twoFactor: [], envProjects: [], envFiles: [], versions: [] }
    const reseal = (kind: 'entry' | 'envfile' | 'totp', oldId: string, newId: string, sealed: string): string => {
      const plain = source.cipher.open(kind, oldId, sealed)
      if (plain === null) throw new AppError(500, 'INTERNAL_ERROR', 'A value of the project does not open under its vault key')
      return target.cipher.seal(kind, newId, plain)
    }
    const moveVersions = (kind: 'entry' | 'envfile' | 'totp', oldId: string, newId: string) => {
      for (const version of src.versions) {
        if (version.kind !== kind || version.recordId !== oldId) continue
        const plain = source.cipher.openVersion(kind, oldId, version.version, version.encryptedValue)
        if (plain === null) throw new AppError(500, 'INTERNAL_ERROR', 'A previous value of the project does not open under its vault key')
        remember('versions', version)
        const copy: VersionRecord = {
          ...version,
          id: versionId(kind, newId, version.version),
          recordId: newId,
          encryptedValue: target.cipher.sealVersion(kind, newId, version.version, plain),
        }
        added.versions.push(copy)
        targetIds.versions.push(copy.id)
      }
    }

    // Entries named as the project, their categories matched or created in the target.
    const categoryFor = new Map<string, string>()
    const sourceCategories = indexById(src.categories)
    const entries = src.entries.filter((entry) => entry.name === request.project)
    for (const entry of entries) {
      let categoryId = categoryFor.get(entry.categoryId)
      if (!categoryId) {
        const category = sourceCategories[entry.categoryId]
        if (!category) throw NotFound.category()
        const twin = [...dst.categories, ...added.categories].find((c) => c.keyType === category.keyType && sameName(c.name, category.name))
        if (twin) categoryId = twin.id
        else {
          const created: CategoryRecord = { ...category, id: randomUUID(), userId: request.to, createdAt: at, updatedAt: at }
          added.categories.push(created)
          targetIds.categories.push(created.id)
          categoryId = created.id
        }
        categoryFor.set(entry.categoryId, categoryId)
      }
      const environment = entry.environment
      if (dst.entries.some((e) => e.categoryId === categoryId && e.name === entry.name && e.environment === environment))
        throw conflict('ENTRY_EXISTS', `The target vault has an entry "${entry.name}" in this category and environment already: nothing was moved`)
      remember('entries', entry)
      const id = idFor(entry.id)
      added.entries.push({ ...entry, id, categoryId, encryptedValue: reseal('entry', entry.id, id, entry.encryptedValue) })
      targetIds.entries.push(id)
      moveVersions('entry', entry.id, id)
    }

    // The env project: the one given, or the one named as the project.
    const project = request.envProjectId ? indexById(src.envProjects)[request.envProjectId] : src.envProjects.find((p) => sameName(p.name, request.project))
    if (request.envProjectId && !project) throw NotFound.envProject()
    let envProjectId: string | null = null
    if (project) {
      if (dst.envProjects.some((p) => sameName(p.name, project.name)))
        throw conflict('ENV_PROJECT_EXISTS', `The target vault has an env project "${project.name}" already: nothing was moved`)
      remember('envProjects', project)
      envProjectId = idFor(project.id)
      added.envProjects.push({ ...project, id: envProjectId, userId: request.to })
      targetIds.envProjects.push(envProjectId)
      for (const file of src.envFiles) {
        if (file.projectId !== project.id) continue
        remember('envFiles', file)
        const id = idFor(file.id)
        added.envFiles.push({ ...file, id, projectId: envProjectId, encryptedContent: reseal('envfile', file.id, id, file.encryptedContent) })
        targetIds.envFiles.push(id)
        moveVersions('envfile', file.id, id)
      }
    }

    // The 2FA tokens named.
    const tokens = indexById(src.twoFactor)
    for (const tokenId of new Set(request.twoFactorIds ?? [])) {
      const token = tokens[tokenId]
      if (!token) throw NotFound.twoFactor()
      remember('twoFactor', token)
      const id = idFor(token.id)
      added.twoFactor.push({ ...token, id, userId: request.to, encryptedSecret: reseal('totp', token.id, id, token.encryptedSecret) })
      targetIds.twoFactor.push(id)
      moveVersions('totp', token.id, id)
    }

    if (targetIds.entries.length + targetIds.envProjects.length + targetIds.twoFactor.length === 0)
      throw notFound('PROJECT_NOT_FOUND', `Nothing to move: no entry, env project or 2FA token of the project "${request.project}"`)
    return {
      intent: {
        id: randomUUID(),
        from: request.from,
        to: request.to,
        startedAt: at,
        phase: 'forward',
        source: sourceIds,
        sourceDigest: digestOf(src, sourceIds),
        target: targetIds,
      },
      read,
      added,
      result: {
        copy: request.copy,
        project: request.project,
        entryIds: targetIds.entries,
        envProjectId,
        envFileIds: targetIds.envFiles,
        twoFactorIds: targetIds.twoFactor,
        versions: targetIds.versions.length,
        categoriesCreated: targetIds.categories,
      },
    }
  }

  /** The target write: every record of the plan, or none (a twin or an id that appeared meanwhile refuses it). */
  private addToTarget(data: VaultDocument, write: Writer<VaultDocument>, plan: Plan): void {
    for (const list of LISTS) {
      const byId = indexById(data[list] as readonly { id: string }[])
      if (plan.intent.target[list].some((id) => byId[id])) throw moveConflict()
    }
    for (const entry of plan.added.entries) {
      if (data.entries.some((e) => e.categoryId === entry.categoryId && e.name === entry.name && e.environment === entry.environment)) throw moveConflict()
    }
    for (const project of plan.added.envProjects) if (data.envProjects.some((p) => sameName(p.name, project.name))) throw moveConflict()
    write.categories.push(...plan.added.categories)
    write.entries.push(...plan.added.entries)
    write.twoFactor.push(...plan.added.twoFactor)
    write.envProjects.push(...plan.added.envProjects)
    write.envFiles.push(...plan.added.envFiles)
    write.versions.push(...plan.added.versions)
  }
}

/** SHA-256 of the source records named (sealed values included: never shown, only compared). */
function digestOf(data: VaultDocument, ids: MoveRecordIds): string {
  const hash = createHash('sha256')
  for (const list of LISTS) {
    const byId = indexById(data[list] as readonly { id: string }[])
    for (const id of ids[list]) hash.update(`${list}:${JSON.stringify(byId[id] ?? null)}\n`)
  }
  return hash.digest('hex')
}

function holdsAny(data: VaultDocument, ids: MoveRecordIds): boolean {
  return LISTS.some((list) => {
    const byId = indexById(data[list] as readonly { id: string }[])
    return ids[list].some((id) => byId[id])
  })
}

function removeIds(write: Writer<VaultDocument>, ids: MoveRecordIds): void {
  for (const list of LISTS) {
    const gone = new Set(ids[list])
    if (gone.size > 0) write[list].removeWhere((record: { id: string }) => gone.has(record.id))
  }
}
