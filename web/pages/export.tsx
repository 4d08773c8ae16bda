// Export: every entry decrypted into one .env file, optionally for one environment only.
import { useState } from 'preact/hooks'
import { apiText, type Environment } from '../api'
import { downloadText, EnvironmentSelect, Field, inputValue, toast, toastError } from '../ui'

export function ExportPage() {
  const [environment, setEnvironment] = useState<Environment | ''>('')
  const [busy, setBusy] = useState(false)
  const download = async () => {
    setBusy(true)
    try {
      const { text, filename } = await apiText(`/api/export${environment ? `?environment=${environment}` : ''}`)
      downloadText(text, filename ?? 'svc-export.env')
      toast('Export downloaded')
    } catch (failure) {
      toastError(failure)
    } finally {
      setBusy(false)
    }
  }
  return (
    <section>
      <h1>Export</h1>
      <div class="card stack narrow">
        <p>
          Download your entries as one <code>.env</code> file, with a comment line naming each entry. The file holds your secrets in plain text: keep it
          somewhere safe and delete it when done.
        </p>
        <Field label="Environment">
          <EnvironmentSelect name="exportEnvironment" value={environment} noneLabel="All environments" onChange={setEnvironment} />
        </Field>
        <div class="actions actions-start">
          <button type="button" class="btn btn-primary" disabled={busy} onClick={download}>
            Download .env
          </button>
        </div>
      </div>
    </section>
  )
}
