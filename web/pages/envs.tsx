// Env projects: a searchable list, and a project page with a tab per file type, an editor,
// upload of a .env file, download and delete.
import { useEffect, useRef, useState } from 'preact/hooks'
import { api, errorMessage, FILE_TYPES, type EnvFileItem, type EnvProject, type FileType } from '../api'
import { navigate } from '../router'
import {
  confirmAction,
  confirmDiscard,
  DialogActions,
  downloadText,
  Field,
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
  useUnsavedWork,
  verbatim,
} from '../ui'
import { HistoryPanel } from '../components/history'
import { writeProps } from '../vault'

export function EnvProjectsPage() {
  const [search, setSearch] = useState('')
  const [query, setQuery] = useState('')
  const [creating, setCreating] = useState(false)
  useEffect(() => {
    const timer = setTimeout(() => setQuery(search.trim()), 200)
    return () => clearTimeout(timer)
  }, [search])
  const projects = useLoad(() => api<{ data: EnvProject[] }>('GET', `/api/envs${query ? `?search=${encodeURIComponent(query)}` : ''}`), [query])
  const list = [...(projects.data?.data ?? [])].sort((a, b) => a.name.localeCompare(b.name))
  return (
    <section>
      <div class="page-head">
        <h1>Env projects</h1>
        <button type="button" class="btn btn-primary" {...writeProps()} onClick={() => setCreating(true)}>
          New project
        </button>
      </div>
      <p class="muted">
        An env project keeps whole .env files as text, the way you wrote them (comments and order kept): one file per type (.env, .env.local, .env.development,
        .env.production). For keys one variable at a time, per environment (staging too), see <Link href="/projects">Projects</Link>.
      </p>
      <input
        type="search"
        class="search"
        placeholder="Search projects…"
        aria-label="Search projects"
        value={search}
        onInput={(event) => setSearch(inputValue(event))}
      />
      {!projects.data ? (
        <Loading error={projects.error} />
      ) : list.length === 0 ? (
        <p class="muted">{query ? `No project matches “${query}”.` : 'No projects yet. A project keeps the .env files of one app.'}</p>
      ) : (
        <ul class="list card">
          {list.map((project) => (
            <li key={project.id} class="list-row">
              <Link href={`/envs/${project.id}`} class="grow project-link">
                <strong>{project.name}</strong>
                {project.description && <span class="muted"> · {project.description}</span>}
              </Link>
              <span class="badge badge-none">
                {project.fileCount} {project.fileCount === 1 ? 'file' : 'files'}
              </span>
              <span class="muted small">{relativeTime(project.updatedAt)}</span>
            </li>
          ))}
        </ul>
      )}
      {creating && <ProjectForm project={null} onClose={() => setCreating(false)} onSaved={(project) => navigate(`/envs/${project.id}`)} />}
    </section>
  )
}

function ProjectForm(props: { project: EnvProject | null; onClose(): void; onSaved(project: EnvProject): void }) {
  const [name, setName] = useState(props.project?.name ?? '')
  const [description, setDescription] = useState(props.project?.description ?? '')
  const [error, setError] = useState<string | null>(null)
  const dirty = name !== (props.project?.name ?? '') || description !== (props.project?.description ?? '')
  const submit = async (event: Event) => {
    event.preventDefault()
    const tooLong = overLimit([
      ['The name', name, 200],
      ['The description', description, 2000],
    ])
    if (tooLong) return setError(tooLong)
    try {
      const body = { name: name.trim(), description: description.trim() }
      const answer = props.project
        ? await api<{ data: EnvProject }>('PUT', `/api/envs/${props.project.id}`, body)
        : await api<{ data: EnvProject }>('POST', '/api/envs', body)
      toast(props.project ? 'Saved' : `Created ${answer.data.name}`)
      props.onSaved(answer.data)
    } catch (failure) {
      setError(errorMessage(failure))
    }
  }
  return (
    <Modal title={props.project ? 'Edit project' : 'New env project'} onClose={props.onClose} dirty={dirty}>
      <form class="stack" onSubmit={submit}>
        <Field label="Name">
          <input name="projectName" required value={name} onInput={(event) => setName(inputValue(event))} placeholder="my-blog" />
          <LengthNote value={name} max={200} what="The name" />
        </Field>
        <Field label="Description (optional)">
          <input name="projectDescription" value={description} onInput={(event) => setDescription(inputValue(event))} />
          <LengthNote value={description} max={2000} what="The description" />
        </Field>
        <DialogActions error={error} submit={props.project ? 'Save' : 'Create project'} onCancel={props.onClose} />
      </form>
    </Modal>
  )
}

export function EnvProjectPage(props: { id: string }) {
  const project = useLoad(() => api<{ data: EnvProject }>('GET', `/api/envs/${props.id}`), [props.id])
  const [tab, setTab] = useState<FileType>('env')
  const [editing, setEditing] = useState(false)
  // Whether the open tab's editor holds unsaved text: switching tabs asks first.
  const editorDirty = useRef(false)
  const chooseTab = async (type: FileType) => {
    if (type === tab) return
    if (editorDirty.current && !(await confirmDiscard(`the unsaved changes to .${tab}`))) return
    editorDirty.current = false
    setTab(type)
  }
  const data = project.data?.data
  if (!data) {
    return (
      <section>
        <p>
          <Link href="/envs">← Env projects</Link>
        </p>
        <Loading error={project.error} />
      </section>
    )
  }
  const files = data.files ?? []
  const fileOf = (type: FileType) => files.find((file) => file.fileType === type)
  const removeProject = async () => {
    if (
      !(await confirmAction(
        `Delete the project “${data.name}” and its ${files.length} ${files.length === 1 ? 'file' : 'files'}? It goes to the trash, where it can be restored.`,
      ))
    )
      return
    try {
      await api('DELETE', `/api/envs/${data.id}`)
      toast(`Deleted ${data.name}`)
      navigate('/envs')
    } catch (failure) {
      toastError(failure)
    }
  }
  return (
    <section>
      <p>
        <Link href="/envs">← Env projects</Link>
      </p>
      <div class="page-head">
        <div>
          <h1>{data.name}</h1>
          {data.description && <p class="muted">{data.description}</p>}
        </div>
        <div class="row-actions">
          <button type="button" class="btn btn-small" onClick={() => setEditing(true)}>
            Edit
          </button>
          <button type="button" class="btn btn-small btn-danger-quiet" onClick={removeProject}>
            Delete project
          </button>
        </div>
      </div>
      <div class="tabs" role="tablist" aria-label="File types">
        {FILE_TYPES.map((type) => (
          <button
            key={type}
            type="button"
            role="tab"
            class={`tab${fileOf(type) ? ' tab-has-file' : ''}`}
            aria-selected={tab === type}
            onClick={() => void chooseTab(type)}
          >
            .{type}
          </button>
        ))}
      </div>
      <FileEditor
        key={tab}
        projectId={data.id}
        projectName={data.name}
        fileType={tab}
        file={fileOf(tab)}
        onChanged={project.reload}
        onDirty={(dirty) => (editorDirty.current = dirty)}
      />
      {editing && (
        <ProjectForm
          project={data}
          onClose={() => setEditing(false)}
          onSaved={() => {
            setEditing(false)
            project.reload()
          }}
        />
      )}
    </section>
  )
}

/** Browsers refuse names starting with a dot ("env.txt"), so the project name leads: my-blog.env.local */
function downloadName(projectName: string, fileType: FileType): string {
  const base = projectName.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[.-]+/, '') || 'project'
  return `${base}.${fileType}`
}

function FileEditor(props: {
  projectId: string
  projectName: string
  fileType: FileType
  file: EnvFileItem | undefined
  onChanged(): void
  onDirty(dirty: boolean): void
}) {
  const { projectId, fileType, file } = props
  // The decrypted file lives only in this editor while its tab is open.
  const [content, setContent] = useState<string | null>(file ? null : '')
  const [saved, setSaved] = useState<string | null>(file ? null : '')
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const [showHistory, setShowHistory] = useState(false)
  const revealCurrent = async () => (await api<{ data: { content: string } }>('POST', `/api/envs/${projectId}/files/${file!.id}/reveal`)).data.content
  const reloadContent = async () => {
    const text = await revealCurrent()
    setContent(text)
    setSaved(text)
  }
  useEffect(() => {
    if (!file) return
    let live = true
    api<{ data: { content: string } }>('POST', `/api/envs/${projectId}/files/${file.id}/reveal`).then(
      (answer) => {
        if (!live) return
        setContent(answer.data.content)
        setSaved(answer.data.content)
      },
      (failure) => live && setError(errorMessage(failure)),
    )
    return () => {
      live = false
    }
  }, [file?.id])
  useEffect(() => () => (setContent(null), setSaved(null)), [])
  const dirty = content !== null && content !== saved
  useUnsavedWork(dirty)
  useEffect(() => props.onDirty(dirty), [dirty])

  const save = async (text: string) => {
    setBusy(true)
    try {
      await api('POST', `/api/envs/${projectId}/files`, { fileType, content: text })
      setSaved(text)
      toast(`Saved .${fileType}`)
      if (!file) props.onChanged()
    } catch (failure) {
      toastError(failure)
    } finally {
      setBusy(false)
    }
  }
  const upload = async (event: Event) => {
    const input = event.currentTarget as HTMLInputElement
    const chosen = input.files?.[0]
    input.value = ''
    if (!chosen) return
    if (chosen.size > 1024 * 1024) return toast('That file is larger than 1 MiB', 'error')
    // An upload replaces the whole file (and any unsaved text): ask when there is something to lose.
    const replacing = file !== undefined || (content ?? '') !== ''
    if (
      replacing &&
      !(await confirmAction(
        `Replace .${fileType} with “${chosen.name}”? Its current content${dirty ? ' and your unsaved changes' : ''} will be lost.`,
        'Replace',
      ))
    )
      return
    const text = await chosen.text()
    setContent(text)
    await save(text)
  }
  const remove = async () => {
    if (!file || !(await confirmAction(`Delete .${fileType} from this project?`))) return
    try {
      await api('DELETE', `/api/envs/${projectId}/files/${file.id}`)
      toast(`Deleted .${fileType}`)
      setContent('')
      setSaved('')
      props.onChanged()
    } catch (failure) {
      toastError(failure)
    }
  }
  if (content === null) return <Loading error={error} />
  return (
    <div class="card editor" role="tabpanel">
      <textarea
        class="mono env-editor"
        aria-label={`Contents of .${fileType}`}
        {...verbatim}
        rows={14}
        value={content}
        placeholder={file ? '' : `No .${fileType} yet. Type or paste KEY=value lines, or upload a file.`}
        onInput={(event) => setContent(inputValue(event))}
      />
      <div class="actions actions-start">
        <button type="button" class="btn btn-primary" disabled={busy || !dirty} onClick={() => save(content)}>
          {dirty ? 'Save' : 'Saved'}
        </button>
        <label class="btn">
          Upload .env file
          <input type="file" class="visually-hidden" accept=".env,text/plain,*" onChange={upload} />
        </label>
        <button type="button" class="btn" disabled={!content} onClick={() => downloadText(content, downloadName(props.projectName, fileType))}>
          Download
        </button>
        {file && (
          <button type="button" class="btn" onClick={() => setShowHistory(true)}>
            History
          </button>
        )}
        {file && (
          <button type="button" class="btn btn-danger-quiet" onClick={remove}>
            Delete file
          </button>
        )}
        {file && <span class="muted small">Updated {relativeTime(file.updatedAt)}</span>}
      </div>
      {file && showHistory && (
        <HistoryPanel
          target={{ title: `.${fileType}`, base: `/api/envs/${projectId}/files/${file.id}/versions`, kind: 'envfile', revealCurrent }}
          onClose={() => setShowHistory(false)}
          onRestored={() => void reloadContent().catch(toastError)}
        />
      )}
    </div>
  )
}
