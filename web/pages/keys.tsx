// Keys: categories (with icons) and their entries. Create, edit and delete with confirmation;
// reveal on click, copy, and the value hides itself again after 30 seconds. Long lists are shown
// in pages of rows (more as the end scrolls into view), so 10,000 entries stay smooth. A row
// (components/entry-row.tsx) and the two forms (components/entry-form.tsx, category-form.tsx)
// are their own files.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import { api, type Category, type Entry } from '../api'
import { confirmAction, Icon, inputValue, Link, Loading, toast, toastError, useLoad, SlashSearch } from '../ui'
import { CategoryForm } from '../components/category-form'
import { EntryForm } from '../components/entry-form'
import { EntryRow } from '../components/entry-row'
import { writeProps } from '../vault'

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
  const lastChange = (category: Category) =>
    (grouped.get(category.id) ?? []).reduce((latest, entry) => (entry.updatedAt > latest ? entry.updatedAt : latest), category.updatedAt ?? '')
  const list = useMemo(
    () =>
      [...(categories.data ?? [])].sort(
        sort === 'name' ? (a, b) => a.name.localeCompare(b.name) : (a, b) => lastChange(b).localeCompare(lastChange(a)) || a.name.localeCompare(b.name),
      ),
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
  const matching = list
    .map((category) => ({ category, entries: entriesOf(category) }))
    .filter(({ category, entries }) => !needle || categoryMatches(category) || entries.length > 0)
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
    const ok = await confirmAction(
      `Delete the category “${category.name}”${count ? ` and its ${count} ${count === 1 ? 'entry' : 'entries'}` : ''}? It goes to the trash, where it can be restored.`,
    )
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
        <button type="button" class="btn btn-primary" {...writeProps()} onClick={() => setEditingCategory('new')}>
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
            <button type="button" class="btn" {...writeProps()} onClick={() => setEditingCategory('new')}>
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
          <button type="button" class="btn btn-small" {...writeProps()} onClick={props.onAddEntry}>
            Add entry
          </button>
          <button type="button" class="btn btn-small" {...writeProps()} onClick={props.onEdit} aria-label={`Edit category ${category.name}`}>
            Edit
          </button>
          <button
            type="button"
            class="btn btn-small btn-danger-quiet"
            {...writeProps()}
            onClick={props.onDelete}
            aria-label={`Delete category ${category.name}`}
          >
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
