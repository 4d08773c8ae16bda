// Import: paste a config, see how the vault would file its keys (POST /api/ai/import, which sees
// only the names), leave out keys, pick the project name and environment, apply.
import { useState } from 'preact/hooks'
import { api, type Environment, type ImportAnswer, type ImportKey } from '../api'
import { EnvironmentSelect, Field, FormError, Icon, inputValue, LengthNote, Link, overLimit, toast, useSubmission, useUnsavedWork } from '../ui'

/** The pasted text without the keys the person left out (.env, export lines, JSON, YAML lines). */
export function withoutKeys(text: string, excluded: Set<string>): string {
  if (excluded.size === 0) return text
  const variable = (raw: string) => {
    let name = raw.trim().replace(/[^A-Za-z0-9_]/g, '_')
    if (/^[0-9]/.test(name)) name = `_${name}`
    return name
  }
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

export function ImportPage() {
  const [text, setText] = useState('')
  const [name, setName] = useState('')
  const [environment, setEnvironment] = useState<Environment | ''>('')
  const [suggestion, setSuggestion] = useState<ImportAnswer | null>(null)
  const [excluded, setExcluded] = useState<Set<string>>(new Set())
  const [result, setResult] = useState<ImportAnswer | null>(null)
  const { busy, error, setError, run } = useSubmission()
  useUnsavedWork(text.trim() !== '')

  const analyse = async (event: Event) => {
    event.preventDefault()
    setError(null)
    setResult(null)
    await run(async () => {
      const answer = await api<{ data: ImportAnswer }>('POST', '/api/ai/import', { text })
      setSuggestion(answer.data)
      setExcluded(new Set())
      if (answer.data.keys.length === 0) setError('No keys were recognised in that text.')
    })
  }
  const apply = async () => {
    setError(null)
    if (!name.trim()) return setError('Give the project a name: it becomes the name of the entries.')
    const tooLong = overLimit([['The project name', name, 200]])
    if (tooLong) return setError(tooLong)
    await run(async () => {
      const body = { text: withoutKeys(text, excluded), apply: true, name: name.trim(), ...(environment ? { environment } : {}) }
      const answer = await api<{ data: ImportAnswer }>('POST', '/api/ai/import', body)
      setResult(answer.data)
      setSuggestion(null)
      setText('')
      toast(`Imported ${answer.data.created?.entries.length ?? 0} entries`)
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
  const groups = new Map<string, ImportKey[]>()
  for (const key of suggestion?.keys ?? []) groups.set(key.categoryName, [...(groups.get(key.categoryName) ?? []), key])
  const included = (suggestion?.keys ?? []).filter((key) => !excluded.has(key.name)).length

  return (
    <section>
      <h1>Import a config</h1>
      <p class="muted">Paste a .env file, shell export lines, JSON or YAML. Only the key names are used to suggest categories; the values stay on your vault.</p>
      <form class="stack" onSubmit={analyse}>
        <textarea
          class="mono"
          name="configText"
          aria-label="Config to import"
          rows={10}
          spellcheck={false}
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
                {keys.map((key) => (
                  <li key={key.name}>
                    <label>
                      <input type="checkbox" checked={!excluded.has(key.name)} onChange={() => toggle(key.name)} /> <code>{key.name}</code>
                      {key.field && key.field !== key.name && <span class="muted small"> as {key.field}</span>}
                    </label>
                  </li>
                ))}
              </ul>
            </div>
          ))}
          <div class="form-row">
            <Field label="Project name (entry name)">
              <input name="importName" required value={name} onInput={(event) => setName(inputValue(event))} placeholder="my-blog" />
              <LengthNote value={name} max={200} what="The project name" />
            </Field>
            <Field label="Environment">
              <EnvironmentSelect name="importEnvironment" value={environment} noneLabel="Any environment" onChange={setEnvironment} />
            </Field>
          </div>
          <div class="actions actions-start">
            <button type="button" class="btn btn-primary" disabled={busy || included === 0} onClick={apply}>
              Import {included} {included === 1 ? 'key' : 'keys'}
            </button>
          </div>
        </div>
      )}
      {result && (
        <div class="card import-result" role="status">
          <p>
            Imported {result.created?.entries.length ?? 0} {result.created?.entries.length === 1 ? 'entry' : 'entries'}
            {result.created?.categories.length ? ` in ${result.created.categories.length} new categories` : ''}. <Link href="/keys">See them in Keys</Link>.
          </p>
        </div>
      )}
    </section>
  )
}
