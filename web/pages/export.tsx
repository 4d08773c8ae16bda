// Export: every entry decrypted into one .env file, optionally for one environment only. When an
// environment's export would hold one variable twice (two projects), the server answers 409
// AMBIGUOUS_EXPORT and the page offers the choice of project (the entries' `name`).
import { useState } from 'preact/hooks'
import { api, ApiError, apiText, type Entry, type Environment } from '../api'
import { downloadText, EnvironmentSelect, Field, inputValue, toast, toastError } from '../ui'

interface Ambiguity {
  message: string
  projects: string[]
}

/** The projects to choose from: those the answer names, else every project with entries that the environment's export holds. */
async function projectChoices(error: ApiError, environment: Environment): Promise<string[]> {
  const named = new Set<string>()
  const collect = (value: unknown) => {
    if (!Array.isArray(value)) return
    for (const item of value) {
      if (typeof item === 'string') named.add(item)
      else if (item && typeof item === 'object') {
        const record = item as Record<string, unknown>
        const name = record.name ?? record.project
        if (typeof name === 'string') named.add(name)
        collect(record.projects)
        collect(record.entries)
      }
    }
  }
  collect(error.details.projects)
  collect(error.details.entries)
  collect(error.details.conflicts)
  if (named.size > 0) return [...named].sort((a, b) => a.localeCompare(b))
  const entries = await api<Entry[]>('GET', '/api/entries')
  return [...new Set(entries.filter((entry) => entry.environment === environment || entry.environment === null).map((entry) => entry.name))].sort((a, b) => a.localeCompare(b))
}

export function ExportPage() {
  const [environment, setEnvironment] = useState<Environment | ''>('')
  const [project, setProject] = useState('')
  const [ambiguity, setAmbiguity] = useState<Ambiguity | null>(null)
  const [busy, setBusy] = useState(false)
  const download = async () => {
    setBusy(true)
    try {
      const query = new URLSearchParams()
      if (environment) query.set('environment', environment)
      if (environment && project) query.set('name', project)
      const search = query.toString()
      const { text, filename } = await apiText(`/api/export${search ? `?${search}` : ''}`)
      downloadText(text, filename ?? 'svc-export.env')
      toast('Export downloaded')
    } catch (failure) {
      if (failure instanceof ApiError && failure.code === 'AMBIGUOUS_EXPORT' && environment) {
        try {
          const projects = await projectChoices(failure, environment)
          const variable = failure.details.variable
          // The server's message speaks of query parameters; the page says it in its own terms.
          const message =
            typeof variable === 'string' ? `${variable} comes from more than one project for ${environment} (${projects.join(', ')}).` : failure.message
          setAmbiguity({ message, projects })
        } catch (listFailure) {
          toastError(listFailure)
        }
      } else toastError(failure)
    } finally {
      setBusy(false)
    }
  }
  return (
    <section>
      <h1>Export</h1>
      <div class="card stack narrow">
        <p>
          Download your entries as one <code>.env</code> file, with a comment line naming each entry. The file holds your secrets in plain text: keep it
          somewhere safe and delete it when done.
        </p>
        <Field label="Environment">
          <EnvironmentSelect
            name="exportEnvironment"
            value={environment}
            noneLabel="All environments"
            onChange={(value) => {
              setEnvironment(value)
              setAmbiguity(null)
              setProject('')
            }}
          />
        </Field>
        {ambiguity && (
          <div class="notice" role="alert">
            <p>
              {ambiguity.message} A program runs with one value per variable: choose the project to export.
            </p>
          </div>
        )}
        {(ambiguity || project) && environment && (
          <Field label="Project">
            <select name="exportProject" value={project} onChange={(event) => setProject(inputValue(event))}>
              <option value="">Choose a project…</option>
              {(ambiguity?.projects ?? [project]).map((name) => (
                <option key={name} value={name}>
                  {name}
                </option>
              ))}
            </select>
          </Field>
        )}
        <div class="actions actions-start">
          <button type="button" class="btn btn-primary" disabled={busy || (ambiguity !== null && !project)} onClick={download}>
            Download .env
          </button>
        </div>
      </div>
    </section>
  )
}
