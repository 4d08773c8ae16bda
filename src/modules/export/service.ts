// The plaintext export of a user's entries: which entries (selection), then one of three
// renderings. CONTRACT.md "Export" (inheritance, ambiguity) (formats).
import { AppError } from '../../http/errors'
import type { Environment, EntryRecord } from '../../store/records'
import type { Vaults } from '../vault-access'
import {
  bunValue,
  dockerValue,
  dotenvValue,
  exportRows,
  isRefusal,
  nodeValue,
  pythonValue,
  renderJson,
  renderWith,
  renderYaml,
  shellValue,
  systemdValue,
  yamlValue,
  type ExportRow,
  type Refusal,
} from './render'

/** One format per reader family; `env` is `dotenv` under its old name. */
export const EXPORT_FORMATS = ['dotenv', 'bun', 'node', 'python', 'docker', 'systemd', 'shell', 'json', 'yaml'] as const
export type ExportFormat = (typeof EXPORT_FORMATS)[number] | 'env'

export interface ExportFilter {
  /**
   * The entries of this environment and the entries without one (shared); an environment's own
   * entry wins over a shared one for the same variable, and a variable then written by two
   * entries is 409 AMBIGUOUS_EXPORT.
   */
  environment?: Environment
  /** Only entries of exactly this name. */
  name?: string
  /** dotenv (default; env is the same), bun, node, python, docker, systemd, shell, json or yaml. */
  format?: ExportFormat
}

export interface RenderedExport {
  body: string
  contentType: string
  filename: string
  /** How many values the body holds, and the entries they come from (for the audit log). */
  count: number
  entries: { id: string; name: string }[]
}

interface Format {
  /** The written right-hand side of `name=`, or why this format cannot carry the value. */
  write: (value: string, name: string) => string | Refusal
  render: (rows: readonly ExportRow[]) => string
  contentType: string
  filename: string
}

const TEXT = 'text/plain; charset=utf-8'
const envFile = (write: Format['write']): Format => ({ write, render: (rows) => renderWith(rows, write), contentType: TEXT, filename: 'svc-export.env' })
const writeDotenv = (value: string) => dotenvValue(value)
const writeShell = (value: string, name: string) => shellValue(value, name)

const FORMATS: Record<ExportFormat, Format> = {
  dotenv: envFile(writeDotenv),
  env: envFile(writeDotenv),
  bun: envFile(bunValue),
  node: envFile(nodeValue),
  python: envFile(pythonValue),
  docker: envFile((value, name) => dockerValue(value, name)),
  systemd: envFile(systemdValue),
  shell: { write: writeShell, render: (rows) => renderWith(rows, writeShell, 'export '), contentType: TEXT, filename: 'svc-export.sh' },
  json: { write: (value) => value, render: renderJson, contentType: 'application/json; charset=utf-8', filename: 'svc-export.json' },
  yaml: { write: yamlValue, render: renderYaml, contentType: 'application/yaml; charset=utf-8', filename: 'svc-export.yaml' },
}

/** Where a value is refused, the formats to suggest instead, in this order. */
const SUGGESTED: ExportFormat[] = ['dotenv', 'bun', 'node', 'python', 'systemd', 'docker', 'shell', 'yaml', 'json']

export interface RefusedVariable {
  variable: string
  reason: string
  /** Formats that carry this value exactly. */
  formats: string[]
}

/** 400 EXPORT_FORMAT_REFUSED naming every variable the format cannot carry, why, and formats that can. */
function assertCarried(rows: readonly ExportRow[], format: ExportFormat): void {
  const write = FORMATS[format].write
  const refused: RefusedVariable[] = []
  for (const row of rows) {
    for (const [name, value] of row.variables) {
      const written = write(value, name)
      if (!isRefusal(written)) continue
      const formats = SUGGESTED.filter((other) => other !== format && !isRefusal(FORMATS[other].write(value, name)))
      refused.push({ variable: name, reason: written.refused, formats })
    }
  }
  if (refused.length === 0) return
  const named = refused.map(({ variable, reason, formats }) => `${variable} ${reason} (use ${formats.length ? formats.join(', ') : 'svc run'})`).join('; ')
  const what = refused.length === 1 ? 'a value' : `${refused.length} values`
  throw new AppError(400, 'EXPORT_FORMAT_REFUSED', `The ${format} format cannot carry ${what} exactly: ${named}`, undefined, {
    format,
    variables: refused,
  })
}

/**
 * Drops from shared (no-environment) rows each variable that a row of the environment itself
 * writes; a shared row left with no variable is left out.
 */
function inheritShared(rows: ExportRow[], environment: Environment): ExportRow[] {
  const own = new Set<string>()
  for (const row of rows) if (row.entry.environment === environment) for (const [name] of row.variables) own.add(name)
  if (own.size === 0) return rows
  const out: ExportRow[] = []
  for (const row of rows) {
    if (row.entry.environment !== null) out.push(row)
    else {
      const variables = row.variables.filter(([name]) => !own.has(name))
      if (variables.length > 0) out.push(variables.length === row.variables.length ? row : { ...row, variables })
    }
  }
  return out
}

/** 409 AMBIGUOUS_EXPORT for the first variable (in export order) that two rows write. */
function assertUnambiguous(rows: readonly ExportRow[], filter: ExportFilter): void {
  const writers = new Map<string, ExportRow[]>()
  for (const row of rows) {
    for (const [name] of row.variables) {
      const list = writers.get(name)
      if (list) list.push(row)
      else writers.set(name, [row])
    }
  }
  for (const [variable, list] of writers) {
    if (list.length < 2) continue
    const projects = [...new Set(list.map((row) => row.entry.name))]
    const where = filter.environment ? `for ${filter.environment}` : 'in this selection'
    const narrow = filter.environment ? 'choose one with the name parameter' : 'choose an environment and a name'
    throw new AppError(409, 'AMBIGUOUS_EXPORT', `${variable} is written by ${list.length} entries ${where} (${projects.join(', ')}); ${narrow}`, undefined, {
      variable,
      projects,
    })
  }
}

export class ExportService {
  constructor(private readonly vaults: Vaults) {}

  async render(userId: string, filter: ExportFilter = {}): Promise<RenderedExport> {
    const { data, cipher } = await this.vaults.open(userId)
    const { environment, name } = filter
    const format = FORMATS[filter.format ?? 'dotenv']
    // Unfiltered (the usual case) renders the list itself rather than a copy of it.
    const entries: readonly EntryRecord[] =
      environment === undefined && name === undefined
        ? data.entries
        : data.entries.filter(
            (e) => (environment === undefined || e.environment === environment || e.environment === null) && (name === undefined || e.name === name),
          )
    let rows = exportRows(data, cipher, entries)
    if (environment !== undefined) rows = inheritShared(rows, environment)
    // Every format holds a variable once: a reader would keep one of two values, silently.
    assertUnambiguous(rows, filter)
    assertCarried(rows, filter.format ?? 'dotenv')
    let count = 0
    for (const row of rows) count += row.variables.length
    return {
      body: format.render(rows),
      contentType: format.contentType,
      filename: format.filename,
      count,
      entries: rows.map((row) => ({ id: row.entry.id, name: row.entry.name })),
    }
  }
}
