// The variables a command works with: the export's selection (-e environment, -n entry name),
// plus, with --project, the variables of that env project's file, which win on conflict.
import { errorBody, type VaultClient } from './client'
import { CliError } from './errors'

/** dotenv's parser, loaded when first needed: svc run's start (run-plan.ts) rarely needs it. */
const parseDotenv = (text: string): Variables => (require('dotenv') as typeof import('dotenv')).parse(text)

export interface Selection {
  environment?: string
  name?: string
  project?: string
  file?: string
}

export type Variables = Record<string, string>

export const FILE_TYPES = ['env', 'env.local', 'env.production', 'env.development'] as const

/** The export's path; dotenv, the default, is asked for without a format (every vault knows it). */
export function exportQuery(selection: Selection, format: string): string {
  const query = new URLSearchParams(format === 'dotenv' ? {} : { format })
  if (selection.environment) query.set('environment', selection.environment)
  if (selection.name) query.set('name', selection.name)
  return `/api/export?${query}`
}

/** The export's answer as name -> value: the JSON format, or the .env text of a server without it. */
function exportVariables(text: string, contentType: string): Variables {
  if (contentType.includes('json')) {
    const parsed = JSON.parse(text) as unknown
    const object = isStringRecord(parsed) ? parsed : isStringRecord((parsed as { data?: unknown })?.data) ? (parsed as { data: Variables }).data : null
    if (!object) throw new CliError('the vault answered the export in a form svc does not know (expected name to value)')
    return object
  }
  return parseDotenv(text)
}

const isStringRecord = (value: unknown): value is Variables =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === 'string')

export interface Fetched {
  variables: Variables
  /** The export's ETag, for the next conditional request. */
  etag: string | null
  /** The answer's text when it was .env (a vault without the JSON format). */
  dotenv: string | null
  /** The answer's text as it came. */
  text: string
}

/**
 * The export's variables. With `etag`, a conditional request: null when the vault answers 304
 * (nothing changed).
 */
export async function fetchExport(client: VaultClient, selection: Selection, etag: string | null = null): Promise<Fetched | null> {
  const fetched = await fetchExportUnparsed(client, selection, etag)
  // Parsed, and its form checked, here: the callers expect a failure from this call.
  if (fetched) void fetched.variables
  return fetched
}

/**
 * As fetchExport, but the answer's text is parsed when `variables` is first read (and fails
 * there): svc run need not parse an answer its offline copy already holds.
 */
export async function fetchExportUnparsed(client: VaultClient, selection: Selection, etag: string | null = null): Promise<Fetched | null> {
  const conditional: Record<string, string> = etag ? { 'if-none-match': etag } : {}
  let answer = await client.raw('GET', exportQuery(selection, 'json'), undefined, conditional)
  // A vault from before the JSON format refuses the parameter: its .env text will do.
  if (answer.status === 400 && /^format\b/.test(errorBody(answer.text).error ?? '')) {
    answer = await client.raw('GET', exportQuery(selection, 'dotenv'), undefined, conditional)
  }
  if (answer.status !== 200 && answer.status !== 304) throw client.failure(answer)
  if (answer.status === 304) return null
  const type = answer.headers.get('content-type') ?? ''
  let variables: Variables | undefined
  const fetched = answer
  return {
    get variables() {
      variables ??= exportVariables(fetched.text, type)
      return variables
    },
    etag: answer.headers.get('etag'),
    get dotenv() {
      return type.includes('json') ? null : fetched.text
    },
    get text() {
      return fetched.text
    },
  }
}

/** The .env text of the selection, for finding one variable the JSON export cannot hold alone. */
export async function fetchExportText(client: VaultClient, selection: Selection): Promise<string> {
  return (await client.send('GET', exportQuery(selection, 'dotenv'))).text
}

interface ProjectItem {
  id: string
  name: string
}
interface FileItem {
  id: string
  fileType: string
}

/** The variables of env project `project`'s file `file` (default `env`), by name or id. */
export async function fetchProjectFile(client: VaultClient, project: string, file = 'env'): Promise<Variables> {
  const fileType = file.replace(/^\./, '')
  if (!(FILE_TYPES as readonly string[]).includes(fileType)) {
    throw new CliError(`--file must be one of ${FILE_TYPES.join(', ')}, got ${file}`, 2)
  }
  const list = await client.json<{ data: ProjectItem[] }>('GET', `/api/envs?search=${encodeURIComponent(project)}`)
  let matches = list.data.filter((item) => item.name === project)
  if (matches.length === 0) matches = list.data.filter((item) => item.name.toLowerCase() === project.toLowerCase())
  if (matches.length === 0) {
    // An id works too (the search is by name, so look it up directly).
    const byId = await client.raw('GET', `/api/envs/${encodeURIComponent(project)}`)
    if (byId.status === 200) matches = [(JSON.parse(byId.text) as { data: ProjectItem }).data]
  }
  if (matches.length === 0) throw new CliError(`no env project named ${project}`)
  if (matches.length > 1) throw new CliError(`several env projects are named ${project}: use its id with --project`)
  const detail = await client.json<{ data: ProjectItem & { files: FileItem[] } }>('GET', `/api/envs/${matches[0].id}`)
  const item = detail.data.files.find((f) => f.fileType === fileType)
  if (!item) {
    const has = detail.data.files.map((f) => f.fileType).join(', ') || 'none'
    throw new CliError(`env project ${detail.data.name} has no .${fileType} file (it has: ${has})`)
  }
  const revealed = await client.json<{ data: { content: string } }>('POST', `/api/envs/${matches[0].id}/files/${item.id}/reveal`)
  return parseDotenv(revealed.data.content)
}

/** The project file's variables on top of the export's (they win on conflict). */
export async function withProject(client: VaultClient, selection: Selection, exported: Variables): Promise<Variables> {
  if (!selection.project) return exported
  return { ...exported, ...(await fetchProjectFile(client, selection.project, selection.file)) }
}

export function describeSelection(selection: Selection): string {
  const parts: string[] = []
  if (selection.name) parts.push(`entry ${selection.name}`)
  if (selection.environment) parts.push(`environment ${selection.environment}`)
  return parts.length ? parts.join(', ') : 'the whole vault'
}
