// Export: the entries decrypted into the text one program reads (a format per reader),
// for a project (the entries' `name`), an environment, or everything. When the export would hold
// one variable twice, the server answers 409 AMBIGUOUS_EXPORT and the page offers the choice of
// project; a value the format cannot carry is a 400 naming the variables and formats that can.
import { useState } from 'preact/hooks'
import { api, ApiError, apiText, type Entry, type Environment } from '../api'
import { EXPORT_FORMATS, exportQuery, formatExtension, type ExportFormat } from '../export-formats'
import { downloadText, EnvironmentSelect, Field, inputValue, toast, toastError, useLoad } from '../ui'

interface Ambiguity {
  message: string
  projects: string[]
}

/** The projects to choose from: those the answer names, else every project with entries that the environment's export holds. */
async function projectChoices(error: ApiError, environment: Environment | ''): Promise<string[]> {
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
  return [
    ...new Set(entries.filter((entry) => !environment || entry.environment === environment || entry.environment === null).map((entry) => entry.name)),
  ].sort((a, b) => a.localeCompare(b))
}

export function ExportPage() {
  const [environment, setEnvironment] = useState<Environment | ''>('')
  const [project, setProject] = useState('')
  const [format, setFormat] = useState<ExportFormat>('dotenv')
  const [ambiguity, setAmbiguity] = useState<Ambiguity | null>(null)
  const [busy, setBusy] = useState(false)
  const entries = useLoad(() => api<Entry[]>('GET', '/api/entries'))
  const projects = [...new Set((entries.data ?? []).map((entry) => entry.name))].sort((a, b) => a.localeCompare(b))
  const extension = formatExtension(format)
  const download = async () => {
    setBusy(true)
    try {
      const search = exportQuery({ environment: environment || undefined, name: project || undefined, format })
      const { text, filename } = await apiText(`/api/export${search ? `?${search}` : ''}`)
      downloadText(text, filename ?? `svc-export${extension}`)
      toast('Export downloaded')
    } catch (failure) {
      if (failure instanceof ApiError && failure.code === 'AMBIGUOUS_EXPORT') {
        try {
          const choices = await projectChoices(failure, environment)
          const variable = failure.details.variable
          // The server's message speaks of query parameters; the page says it in its own terms.
          const message =
            typeof variable !== 'string'
              ? failure.message
              : environment
                ? `${variable} comes from more than one project for ${environment} (${choices.join(', ')}).`
                : `${variable} comes from more than one entry (${choices.join(', ')}): choose an environment${choices.length > 1 ? ' or a project' : ''}.`
          setAmbiguity({ message, projects: choices })
          if (!choices.includes(project)) setProject('')
        } catch (listFailure) {
          toastError(listFailure)
        }
      } else toastError(failure)
    } finally {
      setBusy(false)
    }
  }
  const choices = ambiguity?.projects ?? projects
  return (
    <section>
      <h1>Export</h1>
      <div class="card stack narrow">
        <p>
          Download your entries in the format of the program that reads them, with a comment line naming each entry. The file holds your secrets in plain text:
          keep it somewhere safe and delete it when done. To run a program with its secrets and no file at all, use <code>svc run</code>.
        </p>
        <Field label="Project">
          <select
            name="exportProject"
            value={project}
            onChange={(event) => {
              setProject(inputValue(event))
            }}
          >
            <option value="">{ambiguity ? 'Choose a project…' : 'All projects'}</option>
            {choices.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Environment">
          <EnvironmentSelect
            name="exportEnvironment"
            value={environment}
            noneLabel="All environments"
            onChange={(value) => {
              // The project stays: every project is offered again.
              setEnvironment(value)
              setAmbiguity(null)
            }}
          />
        </Field>
        <Field label="Format" hint="Only shell is meant to be sourced (. ./file); the others are for their reader alone.">
          <select name="exportFormat" value={format} onChange={(event) => setFormat(inputValue(event) as ExportFormat)}>
            {EXPORT_FORMATS.map((item) => (
              <option key={item.value} value={item.value}>
                {item.label}
              </option>
            ))}
          </select>
        </Field>
        {ambiguity && (
          <div class="notice" role="alert">
            <p>{ambiguity.message} A program runs with one value per variable: choose the project to export.</p>
          </div>
        )}
        <div class="actions actions-start">
          <button type="button" class="btn btn-primary" disabled={busy || (ambiguity !== null && environment !== '' && !project)} onClick={download}>
            Download {extension}
          </button>
        </div>
      </div>
    </section>
  )
}
