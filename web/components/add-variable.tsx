// A plain variable (PORT=3000) added to a project in one step, without making a
// category first. The server files it the way an import does (it is one: a one-line JSON paste):
// into the category that already holds the variable, a known service's, or the project's plain
// variables (the "Variables" group), and leaves it as it was when the value is the same.
import { useState } from 'preact/hooks'
import { api, type Environment, type ImportAnswer } from '../api'
import { DialogActions, EnvironmentSelect, Field, inputValue, LengthNote, Modal, overLimit, SecretInput, toast, useSubmission, verbatim } from '../ui'
import { keyLabel } from './key-names'
import { isVariableName } from '../../src/domain/rules'

/** `project` given: adds to that project; else the form asks for the new project's name too. */
export function AddVariableForm(props: { project?: string; environment?: Environment | ''; onClose(): void; onSaved(project: string): void }) {
  const [project, setProject] = useState(props.project ?? '')
  const [environment, setEnvironment] = useState<Environment | ''>(props.environment ?? '')
  const [variable, setVariable] = useState('')
  const [value, setValue] = useState('')
  const { busy, error, setError, run } = useSubmission()
  const dirty = variable !== '' || value !== '' || (!props.project && project !== '')

  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    const name = project.trim()
    if (!name) return setError('Give the project a name, such as my-blog.')
    const tooLong = overLimit([['The project name', name, 200]])
    if (tooLong) return setError(tooLong)
    if (!isVariableName(variable.trim())) return setError('The variable name must be letters, digits and _, not starting with a digit (PORT, DATABASE_URL).')
    if (value === '') return setError('Enter the value.')
    await run(async () => {
      const body = { text: JSON.stringify({ [variable.trim()]: value }), apply: true, name, ...(environment ? { environment } : {}) }
      const answer = await api<{ data: ImportAnswer }>('POST', '/api/ai/import', body)
      const label = keyLabel(variable.trim(), name, environment || null)
      toast(answer.data.keys.every((key) => key.same) ? `${label} already had this value` : `Added ${label}`)
      props.onSaved(name)
    })
  }

  return (
    <Modal title={props.project ? `Add a variable to ${props.project}` : 'New project'} onClose={props.onClose} dirty={dirty}>
      <form class="stack" onSubmit={submit} autoComplete="off">
        {!props.project && (
          <Field label="Project name" hint="The name its keys are filed under, e.g. my-blog (what svc run -n takes).">
            <input name="projectName" required value={project} onInput={(event) => setProject(inputValue(event))} />
            <LengthNote value={project} max={200} what="The project name" />
          </Field>
        )}
        <Field label="Environment">
          <EnvironmentSelect name="environment" value={environment} noneLabel="Any environment" onChange={setEnvironment} />
        </Field>
        <Field label="Variable" hint="Its name in the program's environment, e.g. PORT or DATABASE_URL. No category needed.">
          <input name="variable" required class="mono" placeholder="PORT" value={variable} onInput={(event) => setVariable(inputValue(event))} {...verbatim} />
        </Field>
        <Field label={`Value of ${variable.trim() || 'the variable'}`} hint="Several lines (a PEM key) are kept as they are.">
          <SecretInput name="value" label={`Value of ${variable.trim() || 'the variable'}`} value={value} onInput={setValue} />
        </Field>
        <DialogActions error={error} busy={busy} submit={props.project ? 'Add variable' : 'Create project'} onCancel={props.onClose} />
      </form>
    </Modal>
  )
}
