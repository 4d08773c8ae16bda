// Access keys: create with a scope picker and an expiry (the key is shown once, with copy),
// list with last use, revoke with confirmation.
import { useState } from 'preact/hooks'
import { ALL_SCOPES, api, type AccessKey } from '../api'
import { KeyLastUsedFrom } from './activity'
import {
  confirmAction,
  CopyButton,
  Field,
  formatDate,
  FormError,
  inputValue,
  LengthNote,
  Loading,
  overLimit,
  relativeTime,
  toast,
  toastError,
  useLoad,
  useSubmission,
  useUnsavedWork,
} from '../ui'

const SCOPE_GROUPS: { label: string; scopes: string[] }[] = [
  { label: 'Categories', scopes: ['categories:read', 'categories:write'] },
  { label: 'Entries', scopes: ['entries:read', 'entries:write', 'entries:reveal'] },
  { label: '2FA', scopes: ['2fa:read', '2fa:write', '2fa:reveal'] },
  { label: 'Env projects', scopes: ['envs:read', 'envs:write', 'envs:reveal'] },
  { label: 'Other', scopes: ['stats:read', 'export:read', 'ai:extract', 'audit:read'] },
]
const EXPIRY_DAYS: Record<string, number | null> = { never: null, '7': 7, '30': 30, '90': 90, '365': 365 }

function expiryTime(choice: string, customDate: string): string | undefined {
  if (choice === 'custom') return customDate ? new Date(`${customDate}T23:59:59`).toISOString() : undefined
  const days = EXPIRY_DAYS[choice]
  return days ? new Date(Date.now() + days * 86_400_000).toISOString() : undefined
}

export function AccessKeysPage() {
  const keys = useLoad(() => api<AccessKey[]>('GET', '/api/access-keys'))
  // The plaintext key, shown once; dropped when dismissed or when the page is left.
  const [created, setCreated] = useState<AccessKey | null>(null)
  const list = [...(keys.data ?? [])].sort((a, b) => b.createdAt.localeCompare(a.createdAt))
  const revoke = async (key: AccessKey) => {
    if (!(await confirmAction(`Revoke “${key.name}” (${key.keyPrefix}…)? Anything using it stops working at once.`, 'Revoke'))) return
    try {
      await api('DELETE', `/api/access-keys/${key.id}`)
      toast(`Revoked ${key.name}`)
      keys.reload()
    } catch (failure) {
      toastError(failure)
    }
  }
  return (
    <section>
      <h1>Access keys</h1>
      <p class="muted">
        Keys let scripts and CI use the API with <code>Authorization: Bearer svc_…</code>. Give each key only the scopes it needs.
      </p>
      {created?.key && (
        <div class="card created-key" role="status">
          <h2>Your new key “{created.name}”</h2>
          <p>Copy it now: it is shown this once and cannot be retrieved later.</p>
          <div class="secret-row">
            <code class="secret-value created-key-value">{created.key}</code>
            <CopyButton value={created.key} what="Key copied" />
          </div>
          <div class="actions actions-start">
            <button type="button" class="btn" onClick={() => setCreated(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      <CreateKeyForm
        onCreated={(key) => {
          setCreated(key)
          keys.reload()
        }}
      />
      <h2>Your keys</h2>
      {!keys.data ? (
        <Loading error={keys.error} />
      ) : list.length === 0 ? (
        <p class="muted">No access keys yet.</p>
      ) : (
        <ul class="list card">
          {list.map((key) => {
            const expired = key.expiresAt !== null && new Date(key.expiresAt).getTime() < Date.now()
            return (
              <li key={key.id} class="list-row access-key" data-key={key.name}>
                <div class="grow">
                  <strong>{key.name}</strong> <code class="muted">{key.keyPrefix}…</code>
                  <div class="scope-list">
                    {key.scopes.map((scope) => (
                      <span key={scope} class="badge badge-none">
                        {scope}
                      </span>
                    ))}
                  </div>
                  <p class="muted small">
                    Last used {relativeTime(key.lastUsedAt)} ·{' '}
                    {key.expiresAt ? `${expired ? 'expired' : 'expires'} ${formatDate(key.expiresAt)}` : 'never expires'} · created {formatDate(key.createdAt)}
                  </p>
                  <KeyLastUsedFrom keyId={key.id} />
                </div>
                <button type="button" class="btn btn-small btn-danger-quiet" onClick={() => revoke(key)} aria-label={`Revoke ${key.name}`}>
                  Revoke
                </button>
              </li>
            )
          })}
        </ul>
      )}
    </section>
  )
}

function CreateKeyForm(props: { onCreated(key: AccessKey): void }) {
  const [name, setName] = useState('')
  const [scopes, setScopes] = useState<Set<string>>(new Set())
  const [expiry, setExpiry] = useState('90')
  const [customDate, setCustomDate] = useState('')
  const { busy, error, setError, run } = useSubmission()
  useUnsavedWork(name.trim() !== '')
  const toggle = (scope: string) => {
    const next = new Set(scopes)
    if (next.has(scope)) next.delete(scope)
    else next.add(scope)
    setScopes(next)
  }
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    const tooLong = overLimit([['The name', name, 200]])
    if (tooLong) return setError(tooLong)
    if (scopes.size === 0) return setError('Pick at least one scope.')
    const expiresAt = expiryTime(expiry, customDate)
    if (expiry === 'custom' && !expiresAt) return setError('Pick the expiry date.')
    await run(async () => {
      const key = await api<AccessKey>('POST', '/api/access-keys', {
        name: name.trim(),
        scopes: ALL_SCOPES.filter((scope) => scopes.has(scope)),
        ...(expiresAt ? { expiresAt } : {}),
      })
      setName('')
      setScopes(new Set())
      props.onCreated(key)
    })
  }
  return (
    <form class="card stack" onSubmit={submit}>
      <h2>New access key</h2>
      <div class="form-row">
        <Field label="Name">
          <input name="keyName" required value={name} onInput={(event) => setName(inputValue(event))} placeholder="CI deploy" />
          <LengthNote value={name} max={200} what="The name" />
        </Field>
        <Field label="Expires">
          <select name="expiry" value={expiry} onChange={(event) => setExpiry(inputValue(event))}>
            <option value="7">in 7 days</option>
            <option value="30">in 30 days</option>
            <option value="90">in 90 days</option>
            <option value="365">in a year</option>
            <option value="never">never</option>
            <option value="custom">on a date…</option>
          </select>
        </Field>
        {expiry === 'custom' && (
          <Field label="Expiry date">
            <input
              name="expiryDate"
              type="date"
              required
              min={new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)}
              value={customDate}
              onInput={(event) => setCustomDate(inputValue(event))}
            />
          </Field>
        )}
      </div>
      <fieldset class="scopes">
        <legend class="field-label">
          Scopes{' '}
          <button type="button" class="btn-link small" onClick={() => setScopes(new Set(ALL_SCOPES.filter((scope) => scope.endsWith(':read'))))}>
            read only
          </button>{' '}
          ·{' '}
          <button type="button" class="btn-link small" onClick={() => setScopes(new Set(ALL_SCOPES))}>
            all
          </button>{' '}
          ·{' '}
          <button type="button" class="btn-link small" onClick={() => setScopes(new Set())}>
            none
          </button>
        </legend>
        <div class="scope-groups">
          {SCOPE_GROUPS.map((group) => (
            <div key={group.label} class="scope-group">
              <span class="small muted">{group.label}</span>
              {group.scopes.map((scope) => (
                <label key={scope} class="check">
                  <input type="checkbox" name="scope" value={scope} checked={scopes.has(scope)} onChange={() => toggle(scope)} /> <code>{scope}</code>
                </label>
              ))}
            </div>
          ))}
        </div>
      </fieldset>
      <FormError error={error} />
      <div class="actions actions-start">
        <button type="submit" class="btn btn-primary" disabled={busy}>
          Create key
        </button>
      </div>
    </form>
  )
}
