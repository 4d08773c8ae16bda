// Import: paste a config, see how the vault would file its keys (POST /api/ai/import, which sees
// only the names), leave out keys, pick the project name and environment, apply.
import { useState } from 'preact/hooks'
import { api, type Category, type Entry, type Environment, type ImportAnswer, type ImportKey } from '../api'
import { navigate } from '../router'
import {
  EnvironmentSelect,
  Field,
  forgetUnsavedWork,
  FormError,
  Icon,
  inputValue,
  LengthNote,
  Link,
  overLimit,
  toast,
  useLoad,
  useSubmission,
  useUnsavedWork,
  verbatim,
} from '../ui'
import { projectPath } from './projects'
import { toVariableName } from '../../src/domain/rules'

/** The pasted text without the keys the person left out (.env, export lines, JSON, YAML lines). */
export function withoutKeys(text: string, excluded: Set<string>): string {
  if (excluded.size === 0) return text
  // The server's naming; a name it refuses (null) was never listed, so never left out.
  const variable = (raw: string) => toVariableName(raw) ?? ''
  const trimmed = text.trim()
  if (trimmed.startsWith('{')) {
    try {
      const prune = (value: unknown, path: string[]): unknown => {
        if (value === null || typeof value !== 'object') return excluded.has(variable(path.join('_').toUpperCase())) ? undefined : value
        const pairs = Array.isArray(value) ? value.map((item, index) => [String(index), item] as const) : Object.entries(value)
        const kept = pairs.map(([key, item]) => [key, prune(item, [...path, key])] as const).filter(([, item]) => item !== undefined)
        return Array.isArray(value) ? kept.map(([, item]) => item) : Object.fromEntries(kept)
      }
      // Top-level names keep their case; nested ones are upper-cased, as the server reads them.
      const parsed = JSON.parse(trimmed) as Record<string, unknown>
      const out: Record<string, unknown> = {}
      for (const [key, value] of Object.entries(parsed)) {
        if (value !== null && typeof value === 'object') out[key] = prune(value, [key])
        else if (!excluded.has(variable(key))) out[key] = value
      }
      return JSON.stringify(out, null, 2)
    } catch {
      // not JSON: filter as lines
    }
  }
  const lines = text.replace(/\r\n?/g, '\n').split('\n')
  const kept: string[] = []
  const stack: { indent: number; key: string }[] = []
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]
    const env = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)$/.exec(line)
    if (env) {
      // A quoted value may run over several lines: skip to its closing quote.
      let end = i
      const quote = /^["'`]/.exec(env[2])?.[0]
      if (quote && !new RegExp(`^${quote}[^${quote}]*${quote}`).test(env[2])) {
        while (end + 1 < lines.length && !lines[end + 1].includes(quote)) end++
        if (end + 1 < lines.length) end++
      }
      if (!excluded.has(variable(env[1]))) kept.push(...lines.slice(i, end + 1))
      i = end
      continue
    }
    const yaml = /^(\s*)(["']?)([A-Za-z0-9_.\-]+)\2\s*:(?:\s+(.*))?$/.exec(line)
    if (yaml) {
      const indent = yaml[1].length
      while (stack.length && stack[stack.length - 1].indent >= indent) stack.pop()
      const path = [...stack.map((item) => item.key), yaml[3]]
      const rest = (yaml[4] ?? '').trim()
      if (rest === '' || rest.startsWith('#')) {
        stack.push({ indent, key: yaml[3] })
        kept.push(line)
        continue
      }
      let end = i
      if (/^[|>]/.test(rest)) {
        while (end + 1 < lines.length && (!lines[end + 1].trim() || lines[end + 1].length - lines[end + 1].trimStart().length > indent)) end++
      }
      const name = variable(path.length > 1 ? path.join('_').toUpperCase() : yaml[3])
      if (!excluded.has(name)) kept.push(...lines.slice(i, end + 1))
      i = end
      continue
    }
    kept.push(line)
  }
  return kept.join('\n')
}

/**
 * What an import did, counted by variable as the paste had them: new, updated, and
 * the same (already held, left as they were). `sent`: the variables sent, with whether the project
 * had each one before.
 */
export function importCounts(sent: { name: string; existed: boolean }[], answer: ImportAnswer): string {
  const same = new Set(answer.keys.filter((key) => key.same).map((key) => key.name))
  const fresh = sent.filter((key) => !key.existed && !same.has(key.name)).length
  const updated = sent.filter((key) => key.existed && !same.has(key.name)).length
  return `${fresh} new, ${updated} updated${same.size ? `, ${same.size} the same (left as they were)` : ''}`
}

export function ImportPage() {
  const [text, setText] = useState('')
  const [name, setName] = useState('')
  const [environment, setEnvironment] = useState<Environment | ''>('')
  const [suggestion, setSuggestion] = useState<ImportAnswer | null>(null)
  const [excluded, setExcluded] = useState<Set<string>>(new Set())
  const [result, setResult] = useState<(ImportAnswer & { counts: string }) | null>(null)
  /** Keys that the project already has, which the person chose to leave as they are. */
  const [skipped, setSkipped] = useState<Set<string>>(new Set())
  const { busy, error, setError, run } = useSubmission()
  useUnsavedWork(text.trim() !== '')
  // What the vault already holds, to tell which keys of the paste the project has already.
  const categories = useLoad(() => api<Category[]>('GET', '/api/categories'))
  const entries = useLoad(() => api<Entry[]>('GET', '/api/entries'))

  const analyse = async (event: Event) => {
    event.preventDefault()
    setError(null)
    setResult(null)
    await run(async () => {
      const answer = await api<{ data: ImportAnswer }>('POST', '/api/ai/import', { text })
      setSuggestion(answer.data)
      setExcluded(new Set())
      setSkipped(new Set())
      categories.reload()
      entries.reload()
      if (answer.data.keys.length === 0) setError('No keys were recognised in that text.')
    })
  }
  const apply = async () => {
    setError(null)
    if (!name.trim()) return setError('Give the project a name: it becomes the name of the entries.')
    const tooLong = overLimit([['The project name', name, 200]])
    if (tooLong) return setError(tooLong)
    await run(async () => {
      const leftOut = new Set([...excluded, ...[...skipped].filter((key) => existingEntry(keyByName.get(key)) !== undefined)])
      const project = name.trim()
      const body = { text: withoutKeys(text, leftOut), apply: true, name: project, ...(environment ? { environment } : {}) }
      const sent = (suggestion?.keys ?? [])
        .filter((key) => !leftOut.has(key.name))
        .map((key) => ({ name: key.name, existed: existingEntry(key) !== undefined }))
      const answer = await api<{ data: ImportAnswer }>('POST', '/api/ai/import', body)
      const counts = importCounts(sent, answer.data)
      setResult({ ...answer.data, counts })
      setSuggestion(null)
      setText('')
      toast(`Imported into ${project}: ${counts}`)
      // Nothing typed is left (the text is cleared above), so going to the project asks nothing.
      forgetUnsavedWork()
      navigate(projectPath(project))
    })
  }
  const toggle = (key: string) => {
    const next = new Set(excluded)
    if (next.has(key)) next.delete(key)
    else next.add(key)
    setExcluded(next)
  }
  // Whether the server files a category's keys into one that exists (reuse: true) or a new one;
  // unknown (no badge) when the server does not say.
  const reuseOf = (categoryName: string, keys: ImportKey[]): boolean | undefined => {
    const listed = suggestion?.categories?.find((category) => category.name === categoryName)
    if (typeof listed?.reuse === 'boolean') return listed.reuse
    const marked = keys.find((key) => typeof key.reuse === 'boolean')
    return marked?.reuse
  }
  // The category a key goes into: the server names it (categoryId), else the one of that name and type.
  const targetCategory = (key: ImportKey): Category | undefined =>
    (key.categoryId ? categories.data?.find((category) => category.id === key.categoryId) : undefined) ??
    (key.reuse === false ? undefined : categories.data?.find((category) => category.name === key.categoryName && category.keyType === key.keyType))
  // The entry of this project, environment and category that the import would update.
  const project = name.trim()
  const existingEntry = (key: ImportKey | undefined): Entry | undefined => {
    if (!key || !project) return undefined
    const category = targetCategory(key)
    if (!category) return undefined
    return entries.data?.find((entry) => entry.categoryId === category.id && entry.name === project && entry.environment === (environment || null))
  }
  const keyByName = new Map((suggestion?.keys ?? []).map((key) => [key.name, key]))
  const setSkip = (key: string, skip: boolean) => {
    const next = new Set(skipped)
    if (skip) next.add(key)
    else next.delete(key)
    setSkipped(next)
  }
  const groups = new Map<string, ImportKey[]>()
  for (const key of suggestion?.keys ?? []) groups.set(key.categoryName, [...(groups.get(key.categoryName) ?? []), key])
  const included = (suggestion?.keys ?? []).filter((key) => !excluded.has(key.name) && !(skipped.has(key.name) && existingEntry(key))).length
  const existingCount = (suggestion?.keys ?? []).filter((key) => !excluded.has(key.name) && existingEntry(key)).length

  return (
    <section>
      <h1>Import a config</h1>
      <p class="muted">
        Paste a .env file, shell export lines, JSON or YAML. Only the key names are used to suggest categories; the values stay on your vault.
      </p>
      <form class="stack" onSubmit={analyse}>
        <textarea
          class="mono"
          name="configText"
          aria-label="Config to import"
          rows={10}
          {...verbatim}
          required
          placeholder={'OPENAI_API_KEY=sk-...\nDATABASE_HOST=db.internal\nDATABASE_PASSWORD=...'}
          value={text}
          onInput={(event) => {
            setText(inputValue(event))
            setSuggestion(null)
          }}
        />
        <div class="actions actions-start">
          <button type="submit" class="btn btn-primary" disabled={busy || !text.trim()}>
            Suggest categories
          </button>
        </div>
      </form>
      <FormError error={error} />
      {suggestion && suggestion.keys.length > 0 && (
        <div class="card import-suggestion">
          <h2>
            Suggested categories <span class="badge badge-none">{suggestion.source === 'ai' ? 'by the AI model' : 'by the built-in classifier'}</span>
          </h2>
          {[...groups].map(([categoryName, keys]) => (
            <div class="import-group" key={categoryName}>
              <h3 class="import-category">
                <Icon slug={keys[0].icon} name={categoryName} size="sm" /> {categoryName} <span class="muted small">{keys[0].keyType}</span>
                {reuseOf(categoryName, keys) === true && (
                  <span class="badge badge-existing" title="The keys go into this category, which you already have">
                    existing
                  </span>
                )}
                {reuseOf(categoryName, keys) === false && (
                  <span class="badge badge-new" title="This category will be created">
                    new
                  </span>
                )}
              </h3>
              <ul class="import-keys">
                {keys.map((key) => {
                  const existing = !excluded.has(key.name) && existingEntry(key)
                  return (
                    <li key={key.name} class="import-key" data-key={key.name}>
                      <label>
                        <input type="checkbox" checked={!excluded.has(key.name)} onChange={() => toggle(key.name)} /> <code>{key.name}</code>
                        {key.field && key.field !== key.name && <span class="muted small"> as {key.field}</span>}
                      </label>
                      {existing && (
                        <span class="import-existing">
                          <span class="badge badge-stg">already in {project}</span>
                          <select
                            name={`choice-${key.name}`}
                            aria-label={`${key.name} is already in ${project} (${environment || 'any environment'}): update or skip`}
                            value={skipped.has(key.name) ? 'skip' : 'update'}
                            onChange={(event) => setSkip(key.name, inputValue(event) === 'skip')}
                          >
                            <option value="update">Update it</option>
                            <option value="skip">Skip it</option>
                          </select>
                        </span>
                      )}
                    </li>
                  )
                })}
              </ul>
            </div>
          ))}
          <div class="form-row import-apply">
            <Field label="Project name (entry name)">
              <input name="importName" required list="import-projects" value={name} onInput={(event) => setName(inputValue(event))} placeholder="my-blog" />
              <datalist id="import-projects">
                {[...new Set((entries.data ?? []).map((entry) => entry.name))].sort().map((known) => (
                  <option key={known} value={known} />
                ))}
              </datalist>
              <LengthNote value={name} max={200} what="The project name" />
            </Field>
            <Field label="Environment">
              <EnvironmentSelect name="importEnvironment" value={environment} noneLabel="Any environment" onChange={setEnvironment} />
            </Field>
            <button type="button" class="btn btn-primary import-button" disabled={busy || included === 0} onClick={apply}>
              Import {included} {included === 1 ? 'key' : 'keys'}
            </button>
          </div>
          {existingCount > 0 && (
            <p class="muted small" role="status">
              {existingCount} of these {existingCount === 1 ? 'key is' : 'keys are'} already in {project} ({environment || 'any environment'}): choose “Update
              it” to replace the value or “Skip it” to keep the one you have.
            </p>
          )}
        </div>
      )}
      {result && (
        <div class="card import-result" role="status">
          <p>
            Imported: {result.counts}
            {result.created?.categories.length
              ? `, in ${result.created.categories.length} new ${result.created.categories.length === 1 ? 'category' : 'categories'}`
              : ''}
            . <Link href="/projects">See them in Projects</Link>.
          </p>
        </div>
      )}
    </section>
  )
}
