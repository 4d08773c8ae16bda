// Env projects: named groups of encrypted `.env`-style files, at most one file per fileType.
import { sameName } from '../../domain/rules'
import { byId } from '../../store/by-id'
import { conflict, NotFound, validationError } from '../../http/errors'
import type { EnvFileRecord, EnvFileType, EnvProjectRecord, VaultDocument, Draft } from '../../store/records'
import type { Vaults } from '../vault-access'
import { DEFAULT_POLICY, moveToTrash, type LifecyclePolicy } from '../lifecycle/trash'
import { prepareVersion } from '../lifecycle/versions'
import { MAX_ENV_FILE_BYTES, type CreateEnvProjectInput, type UpdateEnvProjectInput, type UpsertEnvFileInput } from './model'

const filesOf = (data: VaultDocument, projectId: string) => data.envFiles.filter((f) => f.projectId === projectId)

export const publicEnvFile = (f: EnvFileRecord) => ({
  id: f.id,
  projectId: f.projectId,
  fileType: f.fileType,
  createdAt: f.createdAt,
  updatedAt: f.updatedAt,
})

export const publicEnvProject = (p: EnvProjectRecord, fileCount: number) => ({
  id: p.id,
  userId: p.userId,
  name: p.name,
  description: p.description,
  fileCount,
  createdAt: p.createdAt,
  updatedAt: p.updatedAt,
})

export type PublicEnvFile = ReturnType<typeof publicEnvFile>
export type PublicEnvProject = ReturnType<typeof publicEnvProject>
export type EnvProjectListItem = Omit<PublicEnvProject, 'userId'>
export type EnvProjectDetail = PublicEnvProject & { files: PublicEnvFile[] }
export interface RevealedEnvFile {
  id: string
  projectId: string
  fileType: EnvFileType
  content: string
}

/** The project with this id in the vault, or ENV_PROJECT_NOT_FOUND (missing and foreign alike). */
export function findProject(data: VaultDocument, id: string): EnvProjectRecord {
  const project = byId(data.envProjects, id)
  if (!project) throw NotFound.envProject()
  return project
}

/** A file of this very project; a file of another project is not found through this one. */
export function findFile(data: VaultDocument, projectId: string, fileId: string): EnvFileRecord {
  const file = byId(data.envFiles, fileId)
  if (!file || file.projectId !== projectId) throw NotFound.envFile()
  return file
}

/** The twin rule: no two env projects share a name (sameName: trimmed, any case); the twin of `project`, other than itself. */
export function findProjectTwin(
  projects: readonly EnvProjectRecord[],
  project: Pick<EnvProjectRecord, 'name'> & { id?: string },
): EnvProjectRecord | undefined {
  return projects.find((p) => p.id !== project.id && sameName(p.name, project.name))
}

/** 409 ENV_PROJECT_EXISTS naming the twin; `advice` follows (a restore says what to do). */
export const envProjectExists = (twin: Pick<EnvProjectRecord, 'name'>, advice = '') =>
  conflict('ENV_PROJECT_EXISTS', `An env project named "${twin.name}" exists already${advice}`)

/** A project holds at most one file per fileType: its file of this type, if any. */
export const findFileOfType = (files: readonly EnvFileRecord[], projectId: string, fileType: EnvFileType) =>
  files.find((f) => f.projectId === projectId && f.fileType === fileType)

function assertNoTwinProject(data: VaultDocument, project: Pick<EnvProjectRecord, 'id' | 'name'>): void {
  const twin = findProjectTwin(data.envProjects, project)
  if (twin) throw envProjectExists(twin)
}

export class EnvProjectService {
  constructor(
    private readonly vaults: Vaults,
    private readonly now: () => number = Date.now,
    private readonly policy: LifecyclePolicy = DEFAULT_POLICY,
  ) {}

  private timestamp(): string {
    return new Date(this.now()).toISOString()
  }

  async list(userId: string, search?: string): Promise<EnvProjectListItem[]> {
    const { data } = await this.vaults.open(userId)
    const needle = search?.toLowerCase() ?? ''
    return data.envProjects
      .filter((p) => p.name.toLowerCase().includes(needle))
      .map((p) => {
        const { userId: _owner, ...item } = publicEnvProject(p, filesOf(data, p.id).length)
        return item
      })
  }

  async get(userId: string, id: string): Promise<EnvProjectDetail> {
    const { data } = await this.vaults.open(userId)
    const project = findProject(data, id)
    const files = filesOf(data, id)
    return { ...publicEnvProject(project, files.length), files: files.map(publicEnvFile) }
  }

  async create(userId: string, input: CreateEnvProjectInput): Promise<PublicEnvProject> {
    const at = this.timestamp()
    const project: EnvProjectRecord = {
      id: crypto.randomUUID(),
      userId,
      name: input.name,
      description: input.description ?? '',
      createdAt: at,
      updatedAt: at,
    }
    const { doc } = await this.vaults.open(userId)
    await doc.update((data, write) => {
      assertNoTwinProject(data, project)
      write.envProjects.push(project)
    })
    return publicEnvProject(project, 0)
  }

  async update(userId: string, id: string, input: UpdateEnvProjectInput): Promise<PublicEnvProject> {
    const { doc } = await this.vaults.open(userId)
    return doc.update((data, write) => {
      const project = findProject(data, id)
      const next: Draft<EnvProjectRecord> = { ...project, updatedAt: this.timestamp() }
      if (input.name !== undefined) next.name = input.name
      if (input.description !== undefined) next.description = input.description
      if (!sameName(next.name, project.name)) assertNoTwinProject(data, next)
      return publicEnvProject(write.envProjects.replace(next), filesOf(data, id).length)
    })
  }

  /** Moves the project and all of its files to the trash, as one item. */
  async remove(userId: string, id: string, actor = 'unknown'): Promise<void> {
    const { doc } = await this.vaults.open(userId)
    await doc.update((data, write) => {
      const project = findProject(data, id)
      const files = filesOf(data, id)
      moveToTrash(write, {
        kind: 'envProject',
        name: project.name,
        actor,
        at: this.now(),
        policy: this.policy,
        records: { envProjects: [project], envFiles: files },
      })
    })
  }

  /**
   * Stores the file of this fileType: a new file, or new content for the existing one (which
   * keeps its id). `created` tells which.
   */
  async upsertFile(userId: string, projectId: string, input: UpsertEnvFileInput, actor = 'unknown'): Promise<{ file: PublicEnvFile; created: boolean }> {
    // The schema counts UTF-16 units; the limit is in bytes.
    if (Buffer.byteLength(input.content, 'utf8') > MAX_ENV_FILE_BYTES) {
      throw validationError('content', `must be at most ${MAX_ENV_FILE_BYTES} bytes (1 MiB)`)
    }
    const { doc, cipher } = await this.vaults.open(userId)
    return doc.update((data, write) => {
      const project = findProject(data, projectId)
      const at = this.timestamp()
      const existing = findFileOfType(data.envFiles, projectId, input.fileType)
      // Sealed before anything changes, so a failure leaves the vault as it was.
      const id = existing?.id ?? crypto.randomUUID()
      const encryptedContent = cipher.seal('envfile', id, input.content)
      write.envProjects.replace({ ...project, updatedAt: at })
      if (existing) {
        // The content it had becomes a version.
        const version = prepareVersion(data, write, cipher, 'envfile', existing, { actor, at, limit: this.policy.historyVersions })
        version.apply()
        const next = write.envFiles.replace({ ...existing, encryptedContent, updatedAt: at, ...version.fields })
        return { file: publicEnvFile(next), created: false }
      }
      const file: EnvFileRecord = {
        id,
        projectId,
        fileType: input.fileType,
        encryptedContent,
        createdAt: at,
        updatedAt: at,
        valueVersion: 1,
        valueSetBy: actor,
      }
      write.envFiles.push(file)
      return { file: publicEnvFile(file), created: true }
    })
  }

  /** Moves the file to the trash. */
  async removeFile(userId: string, projectId: string, fileId: string, actor = 'unknown'): Promise<void> {
    const { doc } = await this.vaults.open(userId)
    await doc.update((data, write) => {
      const project = findProject(data, projectId)
      const file = findFile(data, projectId, fileId)
      moveToTrash(write, {
        kind: 'envFile',
        name: `${project.name} / .${file.fileType}`,
        actor,
        at: this.now(),
        policy: this.policy,
        records: { envFiles: [file] },
      })
      write.envProjects.replace({ ...project, updatedAt: this.timestamp() })
    })
  }

  /** The plaintext of a file; ENV_FILE_NOT_FOUND when its ciphertext does not open. */
  async revealFile(userId: string, projectId: string, fileId: string): Promise<RevealedEnvFile> {
    const { data, cipher } = await this.vaults.open(userId)
    findProject(data, projectId)
    const file = findFile(data, projectId, fileId)
    const content = cipher.open('envfile', file.id, file.encryptedContent)
    if (content === null) throw NotFound.envFile()
    return { id: file.id, projectId: file.projectId, fileType: file.fileType, content }
  }
}
