// Sign in with e-mail and password, register when sign-up is open, or use the identity provider.
import { useEffect, useState } from 'preact/hooks'
import { api, ApiError, currentUser, sessionLost, type Providers, type User } from '../api'
import { LoginCard } from '../components/login-card'
import { navigate } from '../router'
import { Field, FormError, inputValue, useLoad, useSubmission } from '../ui'
import { PasskeySignInButton, SecondFactorCard } from './login-second-factor'

/**
 * Sign-in; with `again`, the session of that user ended and the page under this form is kept;
 * `next`: where to go once signed in (an invite link's page), the dashboard otherwise.
 */
export function LoginPage(props: { again?: User; next?: string }) {
  const again = props.again
  const providers = useLoad(() => api<Providers>('GET', '/api/auth/providers'))
  const [mode, setMode] = useState<'login' | 'register'>('login')
  const [email, setEmail] = useState(again?.email ?? '')
  const [password, setPassword] = useState('')
  const [name, setName] = useState('')
  const { busy, error, setError, run } = useSubmission()
  // The password was right and the account asks for a second factor.
  const [secondStep, setSecondStep] = useState(false)
  const signedIn = (user: User) => {
    setPassword('')
    sessionLost.value = false
    currentUser.value = user
    // Signed in again as the same person: back to the same page, with whatever was typed there.
    if (again && user.id === again.id) return
    navigate(props.next ?? '/', true)
  }
  const signupOpen = providers.data?.signup === 'open'
  const oidc = providers.data?.oidc
  // First run: no account yet, so the page opens on creating it (not on signing in).
  const firstRun = !again && signupOpen && providers.data?.firstAccount === true
  useEffect(() => {
    if (firstRun) setMode('register')
  }, [firstRun])

  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    await run(async () => {
      const body = mode === 'register' ? { email, password, ...(name.trim() ? { name: name.trim() } : {}) } : { email, password }
      let answer: { user: User } | { twoFactorRequired: true }
      try {
        answer = await api<{ user: User } | { twoFactorRequired: true }>('POST', mode === 'register' ? '/api/auth/register' : '/api/auth/login', body)
      } catch (failure) {
        // Someone else made the first account meanwhile: sign-up is closed now, so offer sign-in.
        if (failure instanceof ApiError && failure.code === 'SIGNUP_DISABLED') {
          providers.reload()
          setMode('login')
          throw new Error('Sign-up is closed on this vault: an account exists now. Sign in with it.')
        }
        throw failure
      }
      setPassword('')
      if ('twoFactorRequired' in answer) setSecondStep(true)
      else signedIn(answer.user)
    })
  }

  if (secondStep) return <SecondFactorCard onSignedIn={signedIn} onCancel={() => setSecondStep(false)} />
  return (
    <LoginCard>
      {again ? (
        <p role="alert">Your session has ended. Sign in again to go back to the page you were on; what you typed there is kept.</p>
      ) : firstRun && mode === 'register' ? (
        <>
          <h2 class="login-heading">Create the first account</h2>
          <p class="muted">
            This vault has no account yet. The account you create here owns it
            {providers.data?.signupPolicy === 'first' ? <>; sign-up closes after it, so no one else can register.</> : '.'}
          </p>
        </>
      ) : (
        <p class="muted">{mode === 'login' ? 'Sign in to your vault.' : 'Create your account.'}</p>
      )}
      <form onSubmit={submit} class="stack">
        {mode === 'register' && (
          <Field label="Name (optional)">
            <input name="name" autoComplete="name" value={name} onInput={(event) => setName(inputValue(event))} />
          </Field>
        )}
        <Field label="E-mail">
          <input name="email" type="email" autoComplete="username" required value={email} onInput={(event) => setEmail(inputValue(event))} />
        </Field>
        <Field label="Password" hint={mode === 'register' ? 'At least 8 characters.' : undefined}>
          <input
            name="password"
            type="password"
            autoComplete={mode === 'register' ? 'new-password' : 'current-password'}
            required
            minLength={mode === 'register' ? 8 : undefined}
            autoFocus={again !== undefined}
            value={password}
            onInput={(event) => setPassword(inputValue(event))}
          />
        </Field>
        <FormError error={error} />
        <button type="submit" class="btn btn-primary btn-block" disabled={busy}>
          {mode === 'login' ? 'Sign in' : firstRun ? 'Create the first account' : 'Create account'}
        </button>
      </form>
      {mode === 'login' && <PasskeySignInButton onSignedIn={signedIn} onError={setError} />}
      {oidc?.enabled && (
        <a class="btn btn-block" href="/api/auth/oidc">
          Sign in with {oidc.name ?? 'single sign-on'}
        </a>
      )}
      {signupOpen && !again && !firstRun && (
        <p class="login-switch">
          {mode === 'login' ? 'No account yet? ' : 'Already registered? '}
          <button
            type="button"
            class="btn-link"
            onClick={() => {
              setMode(mode === 'login' ? 'register' : 'login')
              setError(null)
            }}
          >
            {mode === 'login' ? 'Create one' : 'Sign in'}
          </button>
        </p>
      )}
    </LoginCard>
  )
}
