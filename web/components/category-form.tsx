// The form that makes or changes a category: a kind of key, one variable or a group of fields.
import { useState } from 'preact/hooks'
import { api, type Category } from '../api'
import { DialogActions, Field, Icon, inputValue, knownIcons, LengthNote, Modal, overLimit, toast, useSubmission } from '../ui'
import { isIconSlug, isVariableName } from '../../src/domain/rules'

export function CategoryForm(props: { category: Category | null; hasEntries: boolean; onClose(): void; onSaved(): void }) {
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
    if (keyType === 'simple' && !isVariableName(envVarName.trim()))
      return setError('The variable name must be letters, digits and _, not starting with a digit.')
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
            <input
              name="envVarName"
              required
              value={envVarName}
              onInput={(event) => setEnvVarName(inputValue(event))}
              placeholder="OPENAI_API_KEY"
              class="mono"
            />
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
