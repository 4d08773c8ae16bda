// The plaintext .env export of a user's entries, optionally filtered.
import type { Environment } from '../../store/records'
import type { Vaults } from '../vault-access'
import { renderEnvExport } from './render'

export interface ExportFilter {
  /** Only entries of this environment. */
  environment?: Environment
  /** Only entries of exactly this name. */
  name?: string
}

export class ExportService {
  constructor(private readonly vaults: Vaults) {}

  async envText(userId: string, filter: ExportFilter = {}): Promise<string> {
    const { data, cipher } = await this.vaults.open(userId)
    const { environment, name } = filter
    // Unfiltered (the usual case) renders the list itself rather than a copy of it.
    const entries =
      environment === undefined && name === undefined
        ? data.entries
        : data.entries.filter((e) => (environment === undefined || e.environment === environment) && (name === undefined || e.name === name))
    return renderEnvExport(data, cipher, entries)
  }
}
