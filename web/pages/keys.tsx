// Keys: categories (with icons) and their entries. Create, edit and delete with confirmation;
// reveal on click, copy, and the value hides itself again after 30 seconds. Long lists are shown
// in pages of rows (more as the end scrolls into view), so 10,000 entries stay smooth.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import { api, errorMessage, type Category, type Entry, type Environment, type RevealedEntry } from '../api'
import {
  confirmAction,
  CopyButton,
  DialogActions,
  EnvBadge,
  EnvironmentSelect,
  Field,
  Icon,
  inputValue,
  knownIcons,
  Link,
  LengthNote,
  Loading,
  Modal,
  overLimit,
  SecretInput,
  toast,
  toastError,
  useLoad,
  useRevealTimer,
  SlashSearch,
  useSubmission,
} from '../ui'
import { DueBadge, HistoryPanel } from '../components/history'
import { isIconSlug, isVariableName } from '../../src/domain/rules'

const ENV_ORDER: Record<string, number> = { development: 0, staging: 1, production: 2 }
const byNameThenEnv = (a: Entry, b: Entry) => a.name.localeCompare(b.name) || (ENV_ORDER[a.environment ?? ''] ?? -1) - (ENV_ORDER[b.environment ?? ''] ?? -1)
/** Rows (category heads and entries) shown at first and added each time the end comes into view. */
const ROWS_PER_PAGE = 200

/** Each category's entries, sorted, computed once per load (not per category per render). */
function groupByCategory(entries: Entry[] | undefined): Map<string, Entry[]> {
  const groups = new Map<string, Entry[]>()
  for (const entry of entries ?? []) {
    const group = groups.get(entry.categoryId)
    if (group) group.push(entry)
    else groups.set(entry.categoryId, [entry])
  }
  for (const group of groups.values()) group.sort(byNameThenEnv)
  return groups
}

/** Calls `onVisible` whenever the element scrolls into view (the list then shows more). */
function MoreRows(props: { hidden: number; onVisible(): void }) {
  const sentinel = useRef<HTMLDivElement>(null)
  const latest = useRef(props.onVisible)
  latest.current = props.onVisible
  useEffect(() => {
    if (!sentinel.current || typeof IntersectionObserver === 'undefined') return
    const observer = new IntersectionObserver((seen) => seen.some((s) => s.isIntersecting) && latest.current(), { rootMargin: '400px' })
    observer.observe(sentinel.current)
    return () => observer.disconnect()
  }, [])
  return (
    <div ref={sentinel} class="more-rows">
      <button type="button" class="btn btn-small" onClick={() => latest.current()}>
        Show more ({props.hidden} more {props.hidden === 1 ? 'row' : 'rows'})
      </button>
    </div>
  )
}


type KeySort = 'name' | 'changed'
/** Collapsed categories, by id: kept while the page is open, so coming back keeps the view. */
const collapsedCategories = new Set<string>()

export function KeysPage() {
  const categories = useLoad(() => api<Category[]>('GET', '/api/categories'))
  const entries = useLoad(() => api<Entry[]>('GET', '/api/entries'))
  const [search, setSearch] = useState('')
  const [sort, setSort] = useState<KeySort>('name')
  const [collapsed, setCollapsed] = useState<Set<string>>(() => new Set(collapsedCategories))
  const [editingCategory, setEditingCategory] = useState<Category | 'new' | null>(null)
  const [editingEntry, setEditingEntry] = useState<{ category: Category; entry: Entry | null } | null>(null)
  const reload = () => {
    categories.reload()
    entries.reload()
  }
  const needle = search.trim().toLowerCase()
  const [rowBudget, setRowBudget] = useState(ROWS_PER_PAGE)
  // A new search starts again from the first page.
  useEffect(() => setRowBudget(ROWS_PER_PAGE), [needle])
  // Entries by category, once per load (not one scan of every entry per category).
  const grouped = useMemo(() => groupByCategory(entries.data), [entries.data])
  const lastChange = (category: Category) => (grouped.get(category.id) ?? []).reduce((latest, entry) => (entry.updatedAt > latest ? entry.updatedAt : latest), category.updatedAt ?? '')
  const list = useMemo(
    () => [...(categories.data ?? [])].sort(sort === 'name' ? (a, b) => a.name.localeCompare(b.name) : (a, b) => lastChange(b).localeCompare(lastChange(a)) || a.name.localeCompare(b.name)),
    [categories.data, grouped, sort],
  )
  // The search looks at the category (name, variable, field names) and the entry (project, environment).
  const has = (text: string | null | undefined) => (text ?? '').toLowerCase().includes(needle)
  const categoryMatches = (category: Category) => has(category.name) || has(category.envVarName) || (category.fieldDefinitions ?? []).some(has)
  const entriesOf = (category: Category) => {
    const all = grouped.get(category.id) ?? []
    const matched = !needle || categoryMatches(category) ? all : all.filter((entry) => has(entry.name) || has(entry.environment ?? 'any env'))
    // Grouped entries come sorted by name; by last change they are sorted afresh.
    return sort === 'name' ? matched : [...matched].sort((a, b) => b.updatedAt.localeCompare(a.updatedAt) || byNameThenEnv(a, b))
  }
  const matching = list.map((category) => ({ category, entries: entriesOf(category) })).filter(({ category, entries }) => !needle || categoryMatches(category) || entries.length > 0)
  const visible = matching.map(({ category }) => category)
  const toggle = (category: Category) => {
    const next = new Set(collapsed)
    if (next.has(category.id)) next.delete(category.id)
    else next.add(category.id)
    collapsedCategories.clear()
    for (const id of next) collapsedCategories.add(id)
    setCollapsed(next)
  }
  const setAll = (fold: boolean) => {
    const next = fold ? new Set(list.map((category) => category.id)) : new Set<string>()
    collapsedCategories.clear()
    for (const id of next) collapsedCategories.add(id)
    setCollapsed(next)
  }
  const isCollapsed = (category: Category) => collapsed.has(category.id) && !needle
  // The page: categories in order, each with as many of its entries as the row budget leaves
  // (a folded category takes its heading's row only).
  let rowsLeft = rowBudget
  let hiddenRows = 0
  const shown: { category: Category; entries: Entry[]; total: number }[] = []
  for (const { category, entries: ofCategory } of matching) {
    const rows = isCollapsed(category) ? 0 : ofCategory.length
    if (rowsLeft <= 0) {
      hiddenRows += 1 + rows
      continue
    }
    const take = Math.min(rows, Math.max(rowsLeft - 1, 0))
    // A folded category lists none of them, whatever it is given; its count stays whole.
    const given = isCollapsed(category) || take === ofCategory.length ? ofCategory : ofCategory.slice(0, take)
    shown.push({ category, entries: given, total: grouped.get(category.id)?.length ?? 0 })
    hiddenRows += rows - take
    rowsLeft -= 1 + take
  }

  const removeCategory = async (category: Category) => {
    // All of them, whatever the search shows: the delete removes them all.
    const count = grouped.get(category.id)?.length ?? 0
    const ok = await confirmAction(`Delete the category “${category.name}”${count ? ` and its ${count} ${count === 1 ? 'entry' : 'entries'}` : ''}? It goes to the trash, where it can be restored.`)
    if (!ok) return
    try {
      await api('DELETE', `/api/categories/${category.id}`)
      toast(`Deleted ${category.name}`)
      reload()
    } catch (error) {
      toastError(error)
    }
  }

  return (
    <section>
      <div class="page-head">
        <h1>Keys</h1>
        <button type="button" class="btn btn-primary" onClick={() => setEditingCategory('new')}>
          New category
        </button>
      </div>
      {list.length > 0 && (
        <div class="toolbar">
          <SlashSearch noun="keys" value={search} onSearch={setSearch} />
          <label class="inline-field">
            <span>Sort by</span>
            <select name="sort" value={sort} onChange={(event) => setSort(inputValue(event) as KeySort)}>
              <option value="name">Name</option>
              <option value="changed">Last change</option>
            </select>
          </label>
          <button type="button" class="btn btn-small" onClick={() => setAll(collapsed.size < list.length)}>
            {collapsed.size < list.length ? 'Collapse all' : 'Expand all'}
          </button>
        </div>
      )}
      {!categories.data || !entries.data ? (
        <Loading error={categories.error ?? entries.error} />
      ) : list.length === 0 ? (
        <div class="card empty stack">
          <h2 class="empty-title">No keys yet</h2>
          <p>
            Bring in the keys of a project by pasting its <code>.env</code> (or JSON, YAML) file, or start with a category: a kind of key, such as “OpenAI API
            key” (one variable) or “Database” (several fields).
          </p>
          <div class="actions actions-center">
            <Link href="/import" class="btn btn-primary">
              Import a config
            </Link>
            <button type="button" class="btn" onClick={() => setEditingCategory('new')}>
              New category
            </button>
          </div>
        </div>
      ) : (
        <div class="categories">
          {shown.map(({ category, entries: ofCategory, total }) => (
            <CategoryCard
              key={category.id}
              category={category}
              entries={ofCategory}
              total={total}
              collapsed={isCollapsed(category)}
              onToggle={() => toggle(category)}
              onEdit={() => setEditingCategory(category)}
              onDelete={() => removeCategory(category)}
              onAddEntry={() => setEditingEntry({ category, entry: null })}
              onEditEntry={(entry) => setEditingEntry({ category, entry })}
              onChanged={reload}
            />
          ))}
          {hiddenRows > 0 && <MoreRows hidden={hiddenRows} onVisible={() => setRowBudget((budget) => budget + ROWS_PER_PAGE)} />}
          {visible.length === 0 && <p class="muted">Nothing matches “{search}”.</p>}
        </div>
      )}
      {editingCategory && (
        <CategoryForm
          category={editingCategory === 'new' ? null : editingCategory}
          hasEntries={editingCategory !== 'new' && (grouped.get(editingCategory.id)?.length ?? 0) > 0}
          onClose={() => setEditingCategory(null)}
          onSaved={() => {
            setEditingCategory(null)
            reload()
          }}
        />
      )}
      {editingEntry && (
        <EntryForm
          category={editingEntry.category}
          entry={editingEntry.entry}
          onClose={() => setEditingEntry(null)}
          onSaved={() => {
            setEditingEntry(null)
            reload()
          }}
        />
      )}
    </section>
  )
}

function CategoryCard(props: {
  category: Category
  entries: Entry[]
  total: number
  collapsed: boolean
  onToggle(): void
  onEdit(): void
  onDelete(): void
  onAddEntry(): void
  onEditEntry(entry: Entry): void
  onChanged(): void
}) {
  const { category } = props
  const listId = `entries-${category.id}`
  const count = props.entries.length === props.total ? `${props.total} ${props.total === 1 ? 'key' : 'keys'}` : `${props.entries.length} of ${props.total} keys`
  return (
    <article class="card category" data-category={category.name}>
      <header class="category-head">
        <button
          type="button"
          class="btn-icon fold"
          aria-expanded={!props.collapsed}
          aria-controls={listId}
          aria-label={`${props.collapsed ? 'Expand' : 'Collapse'} ${category.name}`}
          onClick={props.onToggle}
        >
          <span aria-hidden="true">{props.collapsed ? '▸' : '▾'}</span>
        </button>
        <Icon slug={category.icon} name={category.name} />
        <div class="grow">
          <h2 class="category-name">
            {category.name} <span class="badge badge-none category-count">{count}</span>
          </h2>
          <p class="muted small">
            {category.keyType === 'simple' ? (
              <code>{category.envVarName}</code>
            ) : (
              <>
                group
                {category.fieldDefinitions?.length ? (
                  <>
                    {' · '}
                    {category.fieldDefinitions.map((field) => (
                      <code key={field} class="field-chip">
                        {field}
                      </code>
                    ))}
                  </>
                ) : null}
              </>
            )}
            {category.description ? ` · ${category.description}` : ''}
          </p>
        </div>
        <div class="row-actions">
          <button type="button" class="btn btn-small" onClick={props.onAddEntry}>
            Add entry
          </button>
          <button type="button" class="btn btn-small" onClick={props.onEdit} aria-label={`Edit category ${category.name}`}>
            Edit
          </button>
          <button type="button" class="btn btn-small btn-danger-quiet" onClick={props.onDelete} aria-label={`Delete category ${category.name}`}>
            Delete
          </button>
        </div>
      </header>
      {props.collapsed ? null : props.entries.length === 0 ? (
        <p class="muted small entry-empty">No entries yet.</p>
      ) : (
        <ul class="entries" id={listId}>
          {props.entries.map((entry) => (
            <EntryRow key={entry.id} entry={entry} category={category} onEdit={() => props.onEditEntry(entry)} onChanged={props.onChanged} />
          ))}
        </ul>
      )}
    </article>
  )
}

function EntryRow(props: { entry: Entry; category: Category; onEdit(): void; onChanged(): void }) {
  const { entry } = props
  // Which entry a button acts on, for screen readers: "Reveal OPENAI_API_KEY of my-blog (production)".
  const about = `of ${entry.name}${entry.environment ? ` (${entry.environment})` : ''}`
  const subject = props.category.envVarName ?? props.category.name
  // The plaintext lives only in this component's state, and only while it is shown.
  const [revealed, setRevealed] = useState<RevealedEntry | null>(null)
  const hide = () => setRevealed(null)
  const secondsLeft = useRevealTimer(revealed !== null, hide)
  const [showHistory, setShowHistory] = useState(false)

  const reveal = async () => {
    if (revealed) return hide()
    try {
      setRevealed(await api<RevealedEntry>('POST', `/api/entries/${entry.id}/reveal`))
    } catch (error) {
      toastError(error)
    }
  }
  const remove = async () => {
    if (!(await confirmAction(`Delete the entry “${entry.name}”${entry.environment ? ` (${entry.environment})` : ''}? It goes to the trash, where it can be restored.`))) return
    try {
      await api('DELETE', `/api/entries/${entry.id}`)
      toast(`Deleted ${entry.name}`)
      props.onChanged()
    } catch (error) {
      toastError(error)
    }
  }

  return (
    <li class="entry" data-entry={entry.name}>
      <div class="entry-line">
        <span class="grow entry-name">
          <strong>{entry.name}</strong>
          {entry.notes && <span class="muted small"> · {entry.notes}</span>}
        </span>
        <EnvBadge environment={entry.environment} />
        <DueBadge status={entry.dueStatus} expiresAt={entry.expiresAt} />
        <div class="row-actions">
          <button type="button" class="btn btn-small" onClick={reveal} aria-pressed={revealed !== null} aria-label={`${revealed ? 'Hide' : 'Reveal'} ${subject} ${about}`}>
            {revealed ? 'Hide' : 'Reveal'}
          </button>
          <button type="button" class="btn btn-small" onClick={props.onEdit} aria-label={`Edit entry ${entry.name}`}>
            Edit
          </button>
          <button type="button" class="btn btn-small" onClick={() => setShowHistory(true)} aria-label={`History of entry ${entry.name}`}>
            History
          </button>
          <button type="button" class="btn btn-small btn-danger-quiet" onClick={remove} aria-label={`Delete entry ${entry.name}`}>
            Delete
          </button>
        </div>
      </div>
      {revealed && (
        <div class="secret" aria-live="polite">
          {typeof revealed.value === 'string' ? (
            <div class="secret-row">
              <code class="secret-name">{props.category.envVarName}</code>
              <code class="secret-value">{revealed.value}</code>
              <CopyButton value={revealed.value} what={`${props.category.envVarName ?? 'Value'} copied`} ariaLabel={`Copy ${subject} ${about}`} />
            </div>
          ) : (
            Object.entries(revealed.value).map(([field, value]) => (
              <div class="secret-row" key={field}>
                <code class="secret-name">{field}</code>
                <code class="secret-value">{value}</code>
                <CopyButton value={value} what={`${field} copied`} ariaLabel={`Copy ${field} ${about}`} />
              </div>
            ))
          )}
          <p class="muted small">Hides in {secondsLeft} s</p>
        </div>
      )}
      {showHistory && (
        <HistoryPanel
          target={{ title: `the entry “${entry.name}”`, base: `/api/entries/${entry.id}/versions`, kind: 'entry' }}
          onClose={() => setShowHistory(false)}
          onRestored={() => (hide(), props.onChanged())}
        />
      )}
    </li>
  )
}

function CategoryForm(props: { category: Category | null; hasEntries: boolean; onClose(): void; onSaved(): void }) {
  const existing = props.category
  const [name, setName] = useState(existing?.name ?? '')
  const [keyType, setKeyType] = useState<'simple' | 'group'>(existing?.keyType === 'group' ? 'group' : 'simple')
  const [envVarName, setEnvVarName] = useState(existing?.envVarName ?? '')
  const [fields, setFields] = useState((existing?.fieldDefinitions ?? []).join(', '))
  const [icon, setIcon] = useState(existing?.icon ?? '')
  const [description, setDescription] = useState(existing?.description ?? '')
  const { busy, error, setError, run } = useSubmission()
  const slug = icon.trim().toLowerCase()
  const dirty =
    name !== (existing?.name ?? '') ||
    envVarName !== (existing?.envVarName ?? '') ||
    fields !== (existing?.fieldDefinitions ?? []).join(', ') ||
    icon !== (existing?.icon ?? '') ||
    description !== (existing?.description ?? '')

  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    const fieldList = fields
      .split(/[\s,]+/)
      .map((field) => field.trim())
      .filter(Boolean)
    const tooLong = overLimit([
      ['The name', name, 200],
      ['The description', description, 2000],
    ])
    if (tooLong) return setError(tooLong)
    if (keyType === 'simple' && !isVariableName(envVarName.trim())) return setError('The variable name must be letters, digits and _, not starting with a digit.')
    const badField = fieldList.find((field) => !isVariableName(field))
    if (keyType === 'group' && badField) return setError(`“${badField}” is not a valid field name.`)
    if (slug && !isIconSlug(slug)) return setError('The icon is a slug such as “anthropic” or “github”.')
    const body: Record<string, unknown> = {
      name: name.trim(),
      icon: slug || null,
      description: description.trim() || null,
    }
    if (!existing || !props.hasEntries) body.keyType = keyType
    if (keyType === 'simple') body.envVarName = envVarName.trim()
    else body.fieldDefinitions = fieldList.length ? fieldList : null
    await run(async () => {
      if (existing) await api('PUT', `/api/categories/${existing.id}`, body)
      else await api('POST', '/api/categories', body)
      toast(existing ? `Saved ${body.name}` : `Created ${body.name}`)
      props.onSaved()
    })
  }

  return (
    <Modal title={existing ? 'Edit category' : 'New category'} onClose={props.onClose} dirty={dirty}>
      <form class="stack" onSubmit={submit}>
        <Field label="Name">
          <input name="name" required value={name} onInput={(event) => setName(inputValue(event))} placeholder="OpenAI API key" />
          <LengthNote value={name} max={200} what="The name" />
        </Field>
        <fieldset class="segmented" disabled={existing !== null && props.hasEntries}>
          <legend class="field-label">Type</legend>
          <label>
            <input type="radio" name="keyType" value="simple" checked={keyType === 'simple'} onChange={() => setKeyType('simple')} /> Single variable
          </label>
          <label>
            <input type="radio" name="keyType" value="group" checked={keyType === 'group'} onChange={() => setKeyType('group')} /> Group of fields
          </label>
        </fieldset>
        {keyType === 'simple' ? (
          <Field label="Environment variable">
            <input name="envVarName" required value={envVarName} onInput={(event) => setEnvVarName(inputValue(event))} placeholder="OPENAI_API_KEY" class="mono" />
          </Field>
        ) : (
          <Field label="Field names" hint="Comma-separated, in export order, e.g. DB_HOST, DB_USER, DB_PASSWORD. Leave empty to allow any.">
            <input name="fieldDefinitions" value={fields} onInput={(event) => setFields(inputValue(event))} class="mono" />
          </Field>
        )}
        <Field label="Icon (optional)" hint="A Simple Icons slug: anthropic, github, stripe, postgresql…">
          <div class="icon-input">
            <Icon slug={slug || null} name={name || '?'} size="sm" />
            <input name="icon" list="icon-slugs" value={icon} onInput={(event) => setIcon(inputValue(event))} placeholder="github" />
            <datalist id="icon-slugs">
              {slug.length >= 2 &&
                [...(knownIcons.value ?? [])]
                  .filter((known) => known.startsWith(slug))
                  .slice(0, 50)
                  .map((known) => <option key={known} value={known} />)}
            </datalist>
          </div>
        </Field>
        <Field label="Description (optional)">
          <input name="description" value={description} onInput={(event) => setDescription(inputValue(event))} />
          <LengthNote value={description} max={2000} what="The description" />
        </Field>
        <DialogActions error={error} busy={busy} submit={existing ? 'Save' : 'Create category'} onCancel={props.onClose} />
      </form>
    </Modal>
  )
}

interface FieldRow {
  name: string
  value: string
  /** A field the entry already has: its name is fixed, an empty value keeps the current one. */
  current: boolean
}

/**
 * A new entry, or edits one. From a project page: `categories` offers the choice of category, and
 * `initialName` / `initialEnvironment` prefill the project and its environment.
 */
export function EntryForm(props: {
  category: Category
  entry: Entry | null
  onClose(): void
  onSaved(entry: { name: string }): void
  categories?: Category[]
  initialName?: string
  initialEnvironment?: Environment | ''
}) {
  const { entry } = props
  const [category, setCategory] = useState(props.category)
  const isGroup = category.keyType === 'group'
  const declared = category.fieldDefinitions ?? []
  const [name, setName] = useState(entry?.name ?? props.initialName ?? '')
  const [environment, setEnvironment] = useState<Environment | ''>(entry?.environment ?? props.initialEnvironment ?? '')
  const [notes, setNotes] = useState(entry?.notes ?? '')
  // Issue 20: reminders. The expiry day as <input type="date"> gives it (UTC midnight).
  const [expires, setExpires] = useState(entry?.expiresAt ? entry.expiresAt.slice(0, 10) : '')
  const [rotateEvery, setRotateEvery] = useState(entry?.rotateEveryDays ? String(entry.rotateEveryDays) : '')
  const [value, setValue] = useState('')
  const [rows, setRows] = useState<FieldRow[]>(declared.length ? declared.map((field) => ({ name: field, value: '', current: false })) : entry ? [] : [{ name: '', value: '', current: false }])
  // The entry's current fields (a group being edited): the PUT replaces the whole value, so the
  // fields left empty are sent with their current values. Held only while this form is open.
  const [current, setCurrent] = useState<Record<string, string> | null>(null)
  const [currentError, setCurrentError] = useState<string | null>(null)
  const [removed, setRemoved] = useState<Set<string>>(new Set())
  const { busy, error, setError, run } = useSubmission()
  const setRow = (index: number, change: Partial<FieldRow>) => setRows(rows.map((row, at) => (at === index ? { ...row, ...change } : row)))
  const needsCurrent = isGroup && entry !== null

  useEffect(() => {
    if (!needsCurrent) return
    let live = true
    api<RevealedEntry>('POST', `/api/entries/${entry.id}/reveal`).then(
      (answer) => {
        if (!live) return
        const fields = typeof answer.value === 'string' ? {} : answer.value
        setCurrent(fields)
        // The declared fields, then the entry's own (all of them when none are declared; a field
        // the category no longer declares is listed too, so it can be seen and removed).
        setRows([
          ...declared.map((field) => ({ name: field, value: '', current: field in fields })),
          ...Object.keys(fields)
            .filter((field) => !declared.includes(field))
            .map((field) => ({ name: field, value: '', current: true })),
        ])
      },
      (failure) => live && setCurrentError(errorMessage(failure)),
    )
    return () => {
      live = false
      setCurrent(null)
    }
  }, [])

  const chooseCategory = (id: string) => {
    const next = props.categories?.find((item) => item.id === id)
    if (!next) return
    setCategory(next)
    setValue('')
    setRows(next.fieldDefinitions?.length ? next.fieldDefinitions.map((field) => ({ name: field, value: '', current: false })) : [{ name: '', value: '', current: false }])
  }

  const dirty =
    name !== (entry?.name ?? props.initialName ?? '') ||
    environment !== (entry?.environment ?? props.initialEnvironment ?? '') ||
    notes !== (entry?.notes ?? '') ||
    expires !== (entry?.expiresAt ? entry.expiresAt.slice(0, 10) : '') ||
    rotateEvery !== (entry?.rotateEveryDays ? String(entry.rotateEveryDays) : '') ||
    value !== '' ||
    removed.size > 0 ||
    rows.some((row) => row.value !== '' || (!row.current && declared.length === 0 && row.name !== ''))

  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    const tooLong = overLimit([
      ['The project name', name, 200],
      ['The notes', notes, 2000],
    ])
    if (tooLong) return setError(tooLong)
    let newValue: string | undefined
    if (isGroup) {
      const filled = rows.filter((row) => row.value !== '' && !removed.has(row.name))
      if (filled.length > 0 || removed.size > 0 || !entry) {
        const bad = filled.find((row) => !isVariableName(row.name.trim()))
        if (bad) return setError(`“${bad.name}” is not a valid field name.`)
        if (entry && current === null) return setError(`The current fields could not be read${currentError ? ` (${currentError})` : ''}, so they cannot be kept. Try again.`)
        const merged: Record<string, string> = {}
        for (const [field, fieldValue] of Object.entries(current ?? {})) if (!removed.has(field)) merged[field] = fieldValue
        for (const row of filled) merged[row.name.trim()] = row.value
        if (Object.keys(merged).length === 0) return setError('Fill in at least one field.')
        newValue = JSON.stringify(merged)
      }
    } else if (value !== '' || !entry) {
      if (value === '') return setError('Enter the value.')
      newValue = value
    }
    const body: Record<string, unknown> = { name: name.trim() }
    if (newValue !== undefined) body.value = newValue
    if (notes.trim() || entry?.notes) body.notes = notes.trim()
    if (expires || entry?.expiresAt) body.expiresAt = expires ? new Date(`${expires}T00:00:00.000Z`).toISOString() : null
    if (rotateEvery.trim() || entry?.rotateEveryDays) {
      const days = Number(rotateEvery.trim())
      if (rotateEvery.trim() && !(Number.isInteger(days) && days >= 1 && days <= 3650)) return setError('Rotate every: a whole number of days from 1 to 3650.')
      body.rotateEveryDays = rotateEvery.trim() ? days : null
    }
    if (entry) body.environment = environment || null
    else {
      body.categoryId = category.id
      if (environment) body.environment = environment
    }
    await run(async () => {
      if (entry) await api('PUT', `/api/entries/${entry.id}`, body)
      else await api('POST', '/api/entries', body)
      setValue('')
      setRows([])
      setCurrent(null)
      toast(entry ? `Saved ${body.name}` : `Added ${body.name}`)
      props.onSaved({ name: body.name as string })
    })
  }

  return (
    <Modal title={entry ? `Edit ${entry.name}` : props.categories ? 'Add a key' : `New ${category.name} entry`} onClose={props.onClose} dirty={dirty}>
      <form class="stack" onSubmit={submit} autoComplete="off">
        {props.categories && !entry && (
          <Field label="Category">
            <select name="categoryId" value={category.id} onChange={(event) => chooseCategory(inputValue(event))}>
              {props.categories.map((item) => (
                <option key={item.id} value={item.id}>
                  {item.name} ({item.keyType === 'simple' ? item.envVarName : 'group'})
                </option>
              ))}
            </select>
          </Field>
        )}
        <Field label="Project name" hint="The project this key is for, e.g. my-blog.">
          <input name="entryName" required value={name} onInput={(event) => setName(inputValue(event))} />
          <LengthNote value={name} max={200} what="The project name" />
        </Field>
        <Field label="Environment">
          <EnvironmentSelect name="environment" value={environment} noneLabel="Any environment" onChange={setEnvironment} />
        </Field>
        {isGroup ? (
          <fieldset class="group-fields">
            <legend class="field-label">{entry ? 'New field values (leave empty to keep the current ones)' : 'Fields'}</legend>
            {needsCurrent && current === null && !currentError && <p class="muted small">Loading the current fields…</p>}
            {currentError && <p class="error-text small">The current fields could not be read: {currentError}</p>}
            {rows.map((row, index) => {
              const gone = removed.has(row.name)
              return (
                <div class={`group-row${gone ? ' group-row-removed' : ''}`} key={index}>
                  <input
                    aria-label="Field name"
                    class="mono"
                    value={row.name}
                    readOnly={declared.length > 0 || row.current}
                    placeholder="FIELD_NAME"
                    onInput={(event) => setRow(index, { name: inputValue(event) })}
                  />
                  {gone ? (
                    <span class="muted small">removed on save</span>
                  ) : (
                    <SecretInput
                      name={`field-${row.name || index}`}
                      label={`Value of ${row.name || 'field'}`}
                      placeholder={row.current ? 'unchanged' : undefined}
                      value={row.value}
                      onInput={(text) => setRow(index, { value: text })}
                    />
                  )}
                  {row.current && !declared.includes(row.name) && (
                    <button
                      type="button"
                      class="btn btn-small btn-danger-quiet"
                      aria-label={`${gone ? 'Keep' : 'Remove'} field ${row.name}`}
                      onClick={() => {
                        const next = new Set(removed)
                        if (gone) next.delete(row.name)
                        else next.add(row.name)
                        setRemoved(next)
                      }}
                    >
                      {gone ? 'Keep' : 'Remove'}
                    </button>
                  )}
                </div>
              )
            })}
            {declared.length === 0 && (
              <button type="button" class="btn btn-small align-start" onClick={() => setRows([...rows, { name: '', value: '', current: false }])}>
                Add field
              </button>
            )}
          </fieldset>
        ) : (
          <Field label={`Value of ${category.envVarName}`} hint={entry ? 'Leave empty to keep the current value. Several lines (a PEM key) are kept as they are.' : 'Several lines (a PEM key) are kept as they are.'}>
            <SecretInput name="value" label={`Value of ${category.envVarName}`} value={value} onInput={setValue} />
          </Field>
        )}
        <Field label="Notes (optional)">
          <input name="notes" value={notes} onInput={(event) => setNotes(inputValue(event))} />
          <LengthNote value={notes} max={2000} what="The notes" />
        </Field>
        <Field label="Expires on (optional)" hint="The keys page and the dashboard flag it from 14 days before.">
          <input type="date" name="expiresAt" value={expires} onInput={(event) => setExpires(inputValue(event))} />
        </Field>
        <Field label="Rotate every (days, optional)" hint="Flagged when the value has not changed for this long.">
          <input type="number" name="rotateEveryDays" min={1} max={3650} step={1} value={rotateEvery} onInput={(event) => setRotateEvery(inputValue(event))} />
        </Field>
        <DialogActions error={error} busy={busy} submit={entry ? 'Save' : 'Add entry'} onCancel={props.onClose} />
      </form>
    </Modal>
  )
}
