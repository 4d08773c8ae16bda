// Projects: the entry name is the project a key belongs to ("my-blog"). Every project with its keys
// grouped by environment; per environment: reveal all, copy or download it as .env (the export's
// `name` and `environment` filters) and the `svc run` line. From a project: add a key of an
// existing category, or rename the project (a PUT of each entry's name).
import { useState } from 'preact/hooks'
import { api, apiText, ENVIRONMENTS, type Category, type EnvProject, type Entry, type Environment, type RevealedEntry } from '../api'
import { EXPORT_FORMATS, exportQuery, formatExtension, type ExportFormat } from '../export-formats'
import { navigate } from '../router'
import {
  copyText,
  DialogActions,
  downloadText,
  EnvBadge,
  Field,
  Icon,
  inputValue,
  LengthNote,
  Link,
  Loading,
  Modal,
  overLimit,
  relativeTime,
  toast,
  toastError,
  useLoad,
  useRevealTimer,
  SlashSearch,
  useSubmission,
} from '../ui'
import { EntryForm } from '../components/entry-form'
import { AddVariableForm } from '../components/add-variable'
import { writeProps } from '../vault'

/** An environment of a project, or '' for the keys shared by every environment (no environment). */
type Slot = Environment | ''
const SLOTS: Slot[] = [...ENVIRONMENTS, '']
const slotOf = (entry: Entry): Slot => entry.environment ?? ''
const slotLabel = (slot: Slot) => slot || 'any environment'

export const projectPath = (name: string) => `/projects/${encodeURIComponent(name)}`

interface Project {
  name: string
  entries: Entry[]
  updatedAt: string
}

function projectsOf(entries: Entry[]): Project[] {
  const byName = new Map<string, Project>()
  for (const entry of entries) {
    const project = byName.get(entry.name)
    if (project) {
      project.entries.push(entry)
      if (entry.updatedAt > project.updatedAt) project.updatedAt = entry.updatedAt
    } else byName.set(entry.name, { name: entry.name, entries: [entry], updatedAt: entry.updatedAt })
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name))
}

/** The variables an entry holds, as a paste had them: a group's fields each count. */
const variablesIn = (entry: Entry) => entry.fields?.length || 1
const sumOf = (entries: Entry[]) => entries.reduce((sum, entry) => sum + variablesIn(entry), 0)
const countOf = (entries: Entry[], slot: Slot) => sumOf(entries.filter((entry) => slotOf(entry) === slot))
// A key is one variable here: a group's fields count one each, as the paste had them.
const keysWord = (count: number) => `${count} ${count === 1 ? 'key' : 'keys'}`

export function ProjectsPage() {
  const entries = useLoad(() => api<Entry[]>('GET', '/api/entries'))
  const [search, setSearch] = useState('')
  const needle = search.trim().toLowerCase()
  const projects = projectsOf(entries.data ?? []).filter((project) => !needle || project.name.toLowerCase().includes(needle))
  const [creating, setCreating] = useState(false)
  return (
    <section>
      <div class="page-head">
        <h1>Projects</h1>
        <div class="row-actions">
          <button type="button" class="btn btn-primary" {...writeProps()} onClick={() => setCreating(true)}>
            New project
          </button>
          <Link href="/import" class="btn">
            Import a config
          </Link>
        </div>
      </div>
      <p class="muted">
        A project is the name its keys are filed under (“my-blog”), one variable at a time: each environment of it is one .env file for a program (
        <code>svc run -n my-blog</code>). Not the same as <Link href="/envs">Env projects</Link>, which keep whole .env files as text, the way you wrote them (
        <code>svc … --project</code>).
      </p>
      {creating && <AddVariableForm onClose={() => setCreating(false)} onSaved={(name) => navigate(projectPath(name))} />}
      {!entries.data ? (
        <Loading error={entries.error} />
      ) : entries.data.length === 0 ? (
        <div class="card empty stack">
          <h2 class="empty-title">No projects yet</h2>
          <p>Start one with its first variable, import a project's .env file, or add keys in Keys: the name you give them becomes the project.</p>
          <div class="actions actions-center">
            <button type="button" class="btn btn-primary" {...writeProps()} onClick={() => setCreating(true)}>
              New project
            </button>
            <Link href="/import" class="btn">
              Import a config
            </Link>
            <Link href="/keys" class="btn">
              Go to Keys
            </Link>
          </div>
        </div>
      ) : (
        <>
          <SlashSearch noun="projects" value={search} onSearch={setSearch} />
          <ul class="list card projects">
            {projects.map((project) => (
              <li key={project.name} class="list-row" data-project={project.name}>
                <Icon name={project.name} size="sm" />
                <span class="grow">
                  <Link href={projectPath(project.name)} class="project-link">
                    <strong>{project.name}</strong>
                  </Link>{' '}
                  <span class="muted small">· {keysWord(sumOf(project.entries))}</span>
                </span>
                <span class="env-counts">
                  {SLOTS.filter((slot) => countOf(project.entries, slot) > 0).map((slot) => (
                    <span key={slot} class={`badge ${slot ? `badge-${slot}` : 'badge-none'}`}>
                      {slotLabel(slot)}: {countOf(project.entries, slot)}
                    </span>
                  ))}
                </span>
                <span class="muted small">{relativeTime(project.updatedAt)}</span>
              </li>
            ))}
            {projects.length === 0 && <li class="list-row muted">Nothing matches “{search}”.</li>}
          </ul>
        </>
      )}
    </section>
  )
}

export function ProjectPage(props: { name: string }) {
  const { name } = props
  const entries = useLoad(() => api<Entry[]>('GET', '/api/entries'), [name])
  const categories = useLoad(() => api<Category[]>('GET', '/api/categories'))
  const [adding, setAdding] = useState<Slot | null>(null)
  const [addingVariable, setAddingVariable] = useState(false)
  const [renaming, setRenaming] = useState(false)
  // An env project of the same name: its files are shown as a link here (the two are apart).
  const envProjects = useLoad(
    () => api<{ data: EnvProject[] }>('GET', `/api/envs?search=${encodeURIComponent(name)}`).catch(() => ({ data: [] as EnvProject[] })),
    [name],
  )
  const twin = envProjects.data?.data.find((project) => project.name === name)
  const mine = (entries.data ?? []).filter((entry) => entry.name === name)
  const categoryList = [...(categories.data ?? [])].sort((a, b) => a.name.localeCompare(b.name))
  const categoryById = new Map(categoryList.map((category) => [category.id, category]))
  const reload = () => {
    entries.reload()
    categories.reload()
  }
  const slots = SLOTS.filter((slot) => countOf(mine, slot) > 0)
  const shared = mine.filter((entry) => entry.environment === null)
  return (
    <section>
      <p class="crumbs">
        <Link href="/projects">Projects</Link> <span aria-hidden="true">/</span>
      </p>
      <div class="page-head">
        <h1>{name}</h1>
        <div class="row-actions">
          <button type="button" class="btn btn-primary" {...writeProps()} onClick={() => setAddingVariable(true)}>
            Add a variable
          </button>
          <button type="button" class="btn" disabled={categoryList.length === 0} onClick={() => setAdding(slots.find(Boolean) ?? '')}>
            Add a key of a category
          </button>
          <button type="button" class="btn" disabled={mine.length === 0} onClick={() => setRenaming(true)}>
            Rename
          </button>
        </div>
      </div>
      {!entries.data || !categories.data ? (
        <Loading error={entries.error ?? categories.error} />
      ) : mine.length === 0 ? (
        <div class="card empty stack">
          <p>No keys are filed under “{name}”.</p>
          <div class="actions actions-center">
            <Link href="/projects" class="btn">
              All projects
            </Link>
          </div>
        </div>
      ) : (
        <>
          <p class="muted">
            {keysWord(sumOf(mine))} in {slots.length} {slots.length === 1 ? 'environment' : 'environments'}.
            {shared.length > 0 && slots.length > 1 && ' Keys of “any env” are shared: each environment’s .env holds them too, unless it has its own.'}
          </p>
          <div class="environments">
            {slots.map((slot) => (
              <EnvironmentCard
                key={slot}
                project={name}
                slot={slot}
                entries={mine.filter((entry) => slotOf(entry) === slot)}
                onlyShared={slots.length === 1 && slot === ''}
                categoryById={categoryById}
                onAdd={() => setAdding(slot)}
              />
            ))}
          </div>
        </>
      )}
      {twin && (
        <p class="muted small env-twin">
          The env project “{name}” keeps {twin.fileCount} whole .env {twin.fileCount === 1 ? 'file' : 'files'} as text, apart from these keys:{' '}
          <Link href={`/envs/${twin.id}`}>open its files</Link>.
        </p>
      )}
      {addingVariable && (
        <AddVariableForm
          project={name}
          environment={slots.find(Boolean) ?? ''}
          onClose={() => setAddingVariable(false)}
          onSaved={() => {
            setAddingVariable(false)
            reload()
          }}
        />
      )}
      {adding !== null && categoryList.length > 0 && (
        <EntryForm
          category={categoryList[0]}
          categories={categoryList}
          entry={null}
          initialName={name}
          initialEnvironment={adding}
          onClose={() => setAdding(null)}
          onSaved={(saved) => {
            setAdding(null)
            if (saved.name !== name) navigate(projectPath(saved.name))
            else reload()
          }}
        />
      )}
      {renaming && (
        <RenameProject
          name={name}
          entries={mine}
          all={entries.data ?? []}
          onClose={() => setRenaming(false)}
          onRenamed={(to) => {
            setRenaming(false)
            navigate(projectPath(to), true)
          }}
          onPartly={() => {
            setRenaming(false)
            reload()
          }}
        />
      )}
    </section>
  )
}

function EnvironmentCard(props: { project: string; slot: Slot; entries: Entry[]; onlyShared: boolean; categoryById: Map<string, Category>; onAdd(): void }) {
  const { project, slot } = props
  const [revealed, setRevealed] = useState<RevealedEntry[] | null>(null)
  const [busy, setBusy] = useState(false)
  const hide = () => setRevealed(null)
  const secondsLeft = useRevealTimer(revealed !== null, hide)
  const label = slotLabel(slot)
  // An environment's export holds its own keys and the shared ones; the shared keys alone are
  // exported by name only when the project has no environment of its own.
  const exportable = slot !== '' || props.onlyShared
  // Bun by default: the README's quick start runs Bun, whose `bun run` loads a .env by itself.
  const [format, setFormat] = useState<ExportFormat>('bun')
  const query = exportQuery({ name: project, environment: slot || undefined, format })
  const extension = formatExtension(format)
  const command = `svc run -n ${shellWord(project)}${slot ? ` -e ${slot}` : ''} -- …`
  const entries = [...props.entries].sort((a, b) =>
    (props.categoryById.get(a.categoryId)?.name ?? '').localeCompare(props.categoryById.get(b.categoryId)?.name ?? ''),
  )

  const revealAll = async () => {
    if (revealed) return hide()
    setBusy(true)
    try {
      setRevealed(await Promise.all(entries.map((entry) => api<RevealedEntry>('POST', `/api/entries/${entry.id}/reveal`))))
    } catch (error) {
      toastError(error)
    } finally {
      setBusy(false)
    }
  }
  const exportText = async () => (await apiText(`/api/export?${query}`)).text
  const copyEnv = async () => {
    try {
      await copyText(await exportText(), `.env of ${project} (${label}) copied`)
    } catch (error) {
      toastError(error)
    }
  }
  const downloadEnv = async () => {
    try {
      downloadText(await exportText(), `${project}${slot ? `.${slot}` : ''}${extension}`)
      toast(`Downloaded the .env of ${project} (${label})`)
    } catch (error) {
      toastError(error)
    }
  }
  const revealedOf = (entry: Entry) => revealed?.find((item) => item.id === entry.id)
  return (
    <article class="card environment" data-environment={slot || 'any'} aria-labelledby={`env-${slot || 'any'}`}>
      <header class="environment-head">
        <h2 id={`env-${slot || 'any'}`} class="environment-name">
          <EnvBadge environment={slot || null} /> <span class="muted small">{keysWord(sumOf(props.entries))}</span>
        </h2>
        <div class="row-actions">
          <button
            type="button"
            class="btn btn-small"
            disabled={busy}
            aria-pressed={revealed !== null}
            onClick={revealAll}
            aria-label={`${revealed ? 'Hide' : 'Reveal'} all keys of ${project} (${label})`}
          >
            {revealed ? 'Hide all' : 'Reveal all'}
          </button>
          {exportable && (
            <>
              <button type="button" class="btn btn-small" onClick={copyEnv} aria-label={`Copy as .env: ${project} (${label})`}>
                Copy as .env
              </button>
              <select
                class="btn-small"
                value={format}
                onChange={(event) => setFormat(inputValue(event) as ExportFormat)}
                aria-label={`Export format: ${project} (${label})`}
              >
                {EXPORT_FORMATS.map((item) => (
                  <option key={item.value} value={item.value}>
                    {item.label}
                  </option>
                ))}
              </select>
              <button type="button" class="btn btn-small" onClick={downloadEnv} aria-label={`Download ${extension}: ${project} (${label})`}>
                Download {extension}
              </button>
            </>
          )}
          <button type="button" class="btn btn-small" onClick={props.onAdd} aria-label={`Add a key to ${project} (${label})`}>
            Add a key
          </button>
        </div>
      </header>
      <ul class="entries">
        {entries.map((entry) => {
          const category = props.categoryById.get(entry.categoryId)
          const value = revealedOf(entry)?.value
          return (
            <li key={entry.id} class="entry" data-entry={category?.name ?? entry.categoryId}>
              <div class="entry-line">
                <Icon slug={category?.icon} name={category?.name ?? '?'} size="sm" />
                <span class="grow">
                  <strong>{category?.name ?? 'Unknown category'}</strong>{' '}
                  {category?.keyType === 'simple' ? <code class="muted">{category.envVarName}</code> : <span class="muted small">{category?.keyType}</span>}
                </span>
                <span class="muted small">{relativeTime(entry.updatedAt)}</span>
              </div>
              {value !== undefined && (
                <div class="secret">
                  {typeof value === 'string' ? (
                    <SecretRow name={category?.envVarName ?? 'value'} value={value} about={`of ${project} (${label})`} />
                  ) : (
                    Object.entries(value).map(([field, fieldValue]) => (
                      <SecretRow key={field} name={field} value={fieldValue} about={`of ${project} (${label})`} />
                    ))
                  )}
                </div>
              )}
            </li>
          )
        })}
      </ul>
      {revealed && <p class="muted small">Hides in {secondsLeft} s</p>}
      {exportable ? (
        <div class="command">
          <code class="command-line" aria-label={`Command to run a program with the ${label} keys of ${project}`}>
            {command}
          </code>
          <button
            type="button"
            class="btn btn-small"
            onClick={() => copyText(command.replace(/ …$/, ' '), 'Command copied')}
            aria-label={`Copy the svc run command for ${project} (${label})`}
          >
            Copy
          </button>
        </div>
      ) : (
        <p class="muted small">These keys are in each environment’s .env above.</p>
      )}
    </article>
  )
}

function SecretRow(props: { name: string; value: string; about: string }) {
  return (
    <div class="secret-row">
      <code class="secret-name">{props.name}</code>
      <code class="secret-value">{props.value}</code>
      <button
        type="button"
        class="btn btn-small"
        onClick={() => copyText(props.value, `${props.name} copied`)}
        aria-label={`Copy ${props.name} ${props.about}`}
      >
        Copy
      </button>
    </div>
  )
}

/** A project name as one shell word: bare when safe, else single-quoted. */
export function shellWord(text: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`
}

function RenameProject(props: { name: string; entries: Entry[]; all: Entry[]; onClose(): void; onRenamed(to: string): void; onPartly(): void }) {
  const [to, setTo] = useState(props.name)
  const { busy, error, setError, run } = useSubmission()
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    const target = to.trim()
    if (!target) return setError('Give the project a name.')
    if (target === props.name) return props.onClose()
    const tooLong = overLimit([['The project name', target, 200]])
    if (tooLong) return setError(tooLong)
    // Two entries of one category and environment under one name would clash: say so before changing anything.
    const clash = props.entries.find((entry) =>
      props.all.some((other) => other.name === target && other.categoryId === entry.categoryId && other.environment === entry.environment),
    )
    if (clash) {
      return setError(
        `“${target}” already has a key of the same category for ${clash.environment ?? 'any environment'}: rename or remove one of the two first.`,
      )
    }
    await run(async () => {
      let done = 0
      try {
        for (const entry of props.entries) {
          await api('PUT', `/api/entries/${entry.id}`, { name: target })
          done++
        }
      } catch (failure) {
        if (done > 0) {
          toastError(failure)
          toast(`Renamed ${done} of ${props.entries.length} keys; the others are still under ${props.name}`, 'error')
          props.onPartly()
          return
        }
        throw failure
      }
      toast(`Renamed ${props.name} to ${target}`)
      props.onRenamed(target)
    })
  }
  return (
    <Modal title={`Rename ${props.name}`} onClose={props.onClose} dirty={to !== props.name}>
      <form class="stack" onSubmit={submit}>
        <Field
          label="New project name"
          hint={`Renames the ${keysWord(sumOf(props.entries))} filed under ${props.name}. Scripts that use the old name need the new one.`}
        >
          <input name="projectName" required value={to} onInput={(event) => setTo(inputValue(event))} />
          <LengthNote value={to} max={200} what="The project name" />
        </Field>
        <DialogActions error={error} busy={busy} submit="Rename" onCancel={props.onClose} />
      </form>
    </Modal>
  )
}
