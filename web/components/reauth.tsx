// "Confirm it is you": asked when the server wants a fresh proof for an action that
// outlives the session. The password (and a code when two-factor sign-in is on), or a passkey;
// once proved, the action that asked is sent again (api.ts).
import { signal } from '@preact/signals'
import { startAuthentication, type PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/browser'
import { useEffect, useState } from 'preact/hooks'
import { api, ApiError, reauthPrompt, type User } from '../api'
import { Field, FormError, inputValue, Modal } from '../ui'

const pending = signal<{ resolve(ok: boolean): void } | null>(null)

reauthPrompt.ask = () =>
  new Promise<boolean>((resolve) => {
    pending.value?.resolve(false)
    pending.value = { resolve }
  })

export function ReauthHost() {
  const asking = pending.value
  if (!asking) return null
  const done = (ok: boolean) => {
    pending.value = null
    asking.resolve(ok)
  }
  return <ReauthDialog onDone={done} />
}

function ReauthDialog(props: { onDone(ok: boolean): void }) {
  const [password, setPassword] = useState('')
  const [code, setCode] = useState('')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const [twoFactor, setTwoFactor] = useState<boolean | null>(null)
  useEffect(() => {
    api<{ user: User & { twoFactorEnabled: boolean } }>('GET', '/api/auth/me').then(
      (answer) => setTwoFactor(answer.user.twoFactorEnabled),
      () => setTwoFactor(false),
    )
  }, [])
  const prove = async (body: () => Promise<Record<string, unknown>>) => {
    setBusy(true)
    setError(null)
    try {
      await api('POST', '/api/auth/reauth', await body())
      props.onDone(true)
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure))
    } finally {
      setBusy(false)
    }
  }
  const submit = (event: Event) => {
    event.preventDefault()
    const proof: Record<string, unknown> = { password }
    const typed = code.trim()
    // Six digits are a code of the app; anything else a recovery code (the server ignores spaces and hyphens).
    if (twoFactor && typed) proof[/^[\d\s]+$/.test(typed) ? 'code' : 'recoveryCode'] = typed
    return prove(async () => proof)
  }
  const withPasskey = () =>
    prove(async () => {
      const optionsJSON = await api<PublicKeyCredentialRequestOptionsJSON>('POST', '/api/auth/reauth/options')
      try {
        return { passkey: await startAuthentication({ optionsJSON }) }
      } catch {
        throw new ApiError(0, 'PASSKEY_CANCELLED', 'The passkey prompt was cancelled or no passkey was found')
      }
    })
  return (
    <Modal title="Confirm it is you" onClose={() => props.onDone(false)}>
      <form onSubmit={submit} class="stack" aria-label="Confirm it is you">
        <p class="muted">
          This change outlives your session, so it needs a fresh proof. Once confirmed, such changes go through for 10 minutes. An account without a password
          confirms with a passkey, or by signing in again with single sign-on.
        </p>
        <Field label="Password">
          <input
            name="reauthPassword"
            type="password"
            autoComplete="current-password"
            required
            value={password}
            onInput={(event) => setPassword(inputValue(event))}
          />
        </Field>
        {twoFactor && (
          <Field label="Code from the app (or a recovery code)">
            <input name="reauthCode" autoComplete="one-time-code" required value={code} onInput={(event) => setCode(inputValue(event))} />
          </Field>
        )}
        <FormError error={error} />
        <div class="actions">
          <button type="button" class="btn" onClick={() => props.onDone(false)}>
            Cancel
          </button>
          <button type="button" class="btn" onClick={withPasskey} disabled={busy}>
            Use a passkey
          </button>
          <button type="submit" class="btn btn-primary" disabled={busy}>
            Confirm
          </button>
        </div>
      </form>
    </Modal>
  )
}
