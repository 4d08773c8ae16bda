// Settings: the due-items webhook. The secret is write-only: the page only knows
// whether one is set.
import { useState } from 'preact/hooks'
import { api } from '../api'
import { Field, formatDate, FormError, Loading, toast, useLoad, useSubmission } from '../ui'

interface NotificationSettings {
  webhookUrl: string | null
  hasSecret: boolean
  lastDelivery: { at: string; status: 'delivered' | 'failed'; attempts: number } | null
}

export function NotificationSettingsCard() {
  const settings = useLoad(() => api<NotificationSettings>('GET', '/api/account/notifications'))
  const [url, setUrl] = useState<string | null>(null)
  const [secret, setSecret] = useState('')
  const { busy, error, setError, run } = useSubmission()
  const current = settings.data
  const shownUrl = url ?? current?.webhookUrl ?? ''

  const save = (event: Event) => {
    event.preventDefault()
    setError(null)
    void run(async () => {
      const body: Record<string, unknown> = { webhookUrl: shownUrl.trim() || null }
      if (secret) body.secret = secret
      await api('PUT', '/api/account/notifications', body)
      setSecret('')
      setUrl(null)
      toast(shownUrl.trim() ? 'Notifications saved' : 'Notifications turned off')
      settings.reload()
    })
  }

  return (
    <div class="card notification-settings">
      <h2>Notifications</h2>
      <p class="muted">
        Once a day, when keys have expired or are due for rotation (or will be within 14 days), a webhook receives their names and dates, never their values.
      </p>
      {!current ? (
        <Loading error={settings.error} />
      ) : (
        <form onSubmit={save}>
          <Field label="Webhook URL" hint="http:// or https://; leave empty to turn notifications off">
            <input
              type="url"
              name="webhookUrl"
              value={shownUrl}
              placeholder="https://example.com/hooks/vault"
              onInput={(event) => setUrl(event.currentTarget.value)}
            />
          </Field>
          <Field
            label="Signing secret"
            hint={current.hasSecret ? 'A secret is set; type a new one to replace it' : 'Optional: signs each delivery (X-Svc-Signature, HMAC-SHA-256)'}
          >
            <input type="password" name="webhookSecret" autocomplete="off" value={secret} onInput={(event) => setSecret(event.currentTarget.value)} />
          </Field>
          <FormError error={error} />
          <button type="submit" class="btn btn-primary" disabled={busy}>
            Save
          </button>
          <p class="muted small last-delivery">
            {current.lastDelivery ? `Last delivery ${formatDate(current.lastDelivery.at)}: ${current.lastDelivery.status}` : 'No delivery yet.'}
          </p>
        </form>
      )}
    </div>
  )
}
