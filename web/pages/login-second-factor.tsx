// The second step of a two-factor sign-in (a code, a recovery code, or a passkey) and the
// "Sign in with a passkey" button of the sign-in page.
import { useState } from 'preact/hooks'
import { api, type User } from '../api'
import { LoginCard } from '../components/login-card'
import { signInWithPasskey } from '../passkeys'
import { Field, FormError, inputValue, useSubmission } from '../ui'

export function SecondFactorStep(props: { onSignedIn(user: User): void; onCancel(): void }) {
  const [useRecovery, setUseRecovery] = useState(false)
  const [value, setValue] = useState('')
  const { busy, error, setError, run } = useSubmission()

  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    await run(async () => {
      const body = useRecovery ? { recoveryCode: value.trim() } : { code: value.replace(/\s+/g, '') }
      const answer = await api<{ user: User }>('POST', '/api/auth/login/2fa', body)
      props.onSignedIn(answer.user)
    })
  }
  const passkey = () => {
    setError(null)
    return run(async () => props.onSignedIn(await signInWithPasskey()))
  }

  return (
    <form onSubmit={submit} class="stack" aria-label="Two-factor sign-in">
      <p class="muted">{useRecovery ? 'Enter one of your recovery codes.' : 'Enter the 6-digit code of your authenticator app.'}</p>
      {useRecovery ? (
        // Keyed: a reused <input> would keep an emptied `pattern` (which then matches only "").
        <Field key="recovery" label="Recovery code">
          <input name="recoveryCode" autoComplete="off" required value={value} onInput={(event) => setValue(inputValue(event))} />
        </Field>
      ) : (
        <Field key="code" label="Code">
          <input
            name="code"
            inputMode="numeric"
            autoComplete="one-time-code"
            pattern="[0-9 ]{6,7}"
            required
            autoFocus
            value={value}
            onInput={(event) => setValue(inputValue(event))}
          />
        </Field>
      )}
      <FormError error={error} />
      <button type="submit" class="btn btn-primary btn-block" disabled={busy}>
        Verify
      </button>
      <button type="button" class="btn btn-block" onClick={passkey} disabled={busy}>
        Use a passkey instead
      </button>
      <p class="login-switch">
        <button
          type="button"
          class="btn-link"
          onClick={() => {
            setUseRecovery(!useRecovery)
            setValue('')
            setError(null)
          }}
        >
          {useRecovery ? 'Use a code from the app' : 'Use a recovery code'}
        </button>{' '}
        ·{' '}
        <button type="button" class="btn-link" onClick={props.onCancel}>
          Start over
        </button>
      </p>
    </form>
  )
}

/** The sign-in card while it waits for the second factor. */
export function SecondFactorCard(props: { onSignedIn(user: User): void; onCancel(): void }) {
  return (
    <LoginCard>
      <SecondFactorStep {...props} />
    </LoginCard>
  )
}

/** Signs in with a discoverable passkey: no e-mail typed. */
export function PasskeySignInButton(props: { onSignedIn(user: User): void; onError(message: string | null): void }) {
  const [busy, setBusy] = useState(false)
  const click = async () => {
    props.onError(null)
    setBusy(true)
    try {
      props.onSignedIn(await signInWithPasskey())
    } catch (error) {
      props.onError(error instanceof Error ? error.message : String(error))
    } finally {
      setBusy(false)
    }
  }
  return (
    <button type="button" class="btn btn-block" onClick={click} disabled={busy}>
      Use a passkey
    </button>
  )
}
