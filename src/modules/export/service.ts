// The plaintext export of a user's entries: which entries (selection), then one of three
// renderings. CONTRACT.md "Export"; issue 23 (inheritance, ambiguity); issue 14 (formats).
import { AppError } from '../../http/errors'
import type { Environment, EntryRecord } from '../../store/records'
import type { Vaults } from '../vault-access'
import { exportRows, renderDotenv, renderJson, renderShell, type ExportRow } from './render'

export type ExportFormat = 'dotenv' | 'env' | 'shell' | 'json'

export interface ExportFilter {
  /**
   * The entries of this environment and the entries without one (shared); an environment's own
   * entry wins over a shared one for the same variable, and a variable then written by two
   * entries is 409 AMBIGUOUS_EXPORT.
   */
  environment?: Environment
  /** Only entries of exactly this name. */
  name?: string
  /** dotenv (default; env is the same), shell or json. */
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

const FORMATS: Record<ExportFormat, { render: (rows: readonly ExportRow[]) => string; contentType: string; filename: string }> = {
  dotenv: { render: renderDotenv, contentType: 'text/plain; charset=utf-8', filename: 'svc-export.env' },
  shell: { render: renderShell, contentType: 'text/plain; charset=utf-8', filename: 'svc-export.sh' },
  env: { render: renderDotenv, contentType: 'text/plain; charset=utf-8', filename: 'svc-export.env' },
  json: { render: renderJson, contentType: 'application/json; charset=utf-8', filename: 'svc-export.json' },
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
    throw new AppError(
      409,
      'AMBIGUOUS_EXPORT',
      `${variable} is written by ${list.length} entries ${where} (${projects.join(', ')}); ${narrow}`,
      undefined,
      { variable, projects },
    )
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
    // A selection a program runs with (an environment), and a JSON object, hold a variable once.
    if (environment !== undefined || filter.format === 'json') assertUnambiguous(rows, filter)
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
