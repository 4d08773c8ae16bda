// The form that adds an entry (a value of a category for a project and environment) or edits one.
// A group's fields left empty keep their current values; several lines are kept as they are.
import { useEffect, useState } from 'preact/hooks'
import { api, errorMessage, type Category, type Entry, type Environment, type RevealedEntry } from '../api'
import { DialogActions, EnvironmentSelect, Field, inputValue, LengthNote, Modal, overLimit, SecretInput, toast, useSubmission } from '../ui'
import { entryLabel, keyLabel, variableOf } from './key-names'
import { isVariableName } from '../../src/domain/rules'

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
  // Reminders. The expiry day as <input type="date"> gives it (UTC midnight).
  const [expires, setExpires] = useState(entry?.expiresAt ? entry.expiresAt.slice(0, 10) : '')
  const [rotateEvery, setRotateEvery] = useState(entry?.rotateEveryDays ? String(entry.rotateEveryDays) : '')
  const [value, setValue] = useState('')
  const [rows, setRows] = useState<FieldRow[]>(
    declared.length ? declared.map((field) => ({ name: field, value: '', current: false })) : entry ? [] : [{ name: '', value: '', current: false }],
  )
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
        // A value typed while the fields were loading is kept, not wiped.
        setRows((typed) => {
          const typedValue = (field: string) => typed.find((row) => row.name === field)?.value ?? ''
          return [
            ...declared.map((field) => ({ name: field, value: typedValue(field), current: field in fields })),
            ...Object.keys(fields)
              .filter((field) => !declared.includes(field))
              .map((field) => ({ name: field, value: typedValue(field), current: true })),
          ]
        })
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
    setRows(
      next.fieldDefinitions?.length
        ? next.fieldDefinitions.map((field) => ({ name: field, value: '', current: false }))
        : [{ name: '', value: '', current: false }],
    )
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
        if (entry && current === null)
          return setError(`The current fields could not be read${currentError ? ` (${currentError})` : ''}, so they cannot be kept. Try again.`)
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
      const saved = keyLabel(variableOf(category), body.name as string, (body.environment as string | null | undefined) ?? null)
      toast(entry ? `Saved ${saved}` : `Added ${saved}`)
      props.onSaved({ name: body.name as string })
    })
  }

  return (
    <Modal
      title={entry ? `Edit ${entryLabel(entry, category)}` : props.categories ? 'Add a key' : `New ${category.name} entry`}
      onClose={props.onClose}
      dirty={dirty}
    >
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
          <Field
            label={`Value of ${category.envVarName}`}
            hint={
              entry
                ? 'Leave empty to keep the current value. Several lines (a PEM key) are kept as they are.'
                : 'Several lines (a PEM key) are kept as they are.'
            }
          >
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
