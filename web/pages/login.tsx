// Sign in with e-mail and password, register when sign-up is open, or use the identity provider.
import { useState } from 'preact/hooks'
import { api, currentUser, type Providers, type User } from '../api'
import { navigate } from '../router'
import { Field, FormError, inputValue, useLoad, useSubmission } from '../ui'
import { PasskeySignInButton, SecondFactorCard } from './login-second-factor'

export function LoginPage() {
  const providers = useLoad(() => api<Providers>('GET', '/api/auth/providers'))
  const [mode, setMode] = useState<'login' | 'register'>('login')
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [name, setName] = useState('')
  const { busy, error, setError, run } = useSubmission()
  // Issue 16: the password was right and the account asks for a second factor.
  const [secondStep, setSecondStep] = useState(false)
  const signedIn = (user: User) => {
    setPassword('')
    currentUser.value = user
    navigate('/', true)
  }
  const signupOpen = providers.data?.signup === 'open'
  const oidc = providers.data?.oidc

  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    await run(async () => {
      const body = mode === 'register' ? { email, password, ...(name.trim() ? { name: name.trim() } : {}) } : { email, password }
      const answer = await api<{ user: User } | { twoFactorRequired: true }>('POST', mode === 'register' ? '/api/auth/register' : '/api/auth/login', body)
      setPassword('')
      if ('twoFactorRequired' in answer) setSecondStep(true)
      else signedIn(answer.user)
    })
  }

  if (secondStep) return <SecondFactorCard onSignedIn={signedIn} onCancel={() => setSecondStep(false)} />
  return (
    <div class="login">
      <div class="login-card">
        <h1 class="login-title">
          <span class="brand-mark" aria-hidden="true">
            ◆
          </span>{' '}
          svc-vault
        </h1>
        <p class="muted">{mode === 'login' ? 'Sign in to your vault.' : 'Create your account.'}</p>
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
              value={password}
              onInput={(event) => setPassword(inputValue(event))}
            />
          </Field>
          <FormError error={error} />
          <button type="submit" class="btn btn-primary btn-block" disabled={busy}>
            {mode === 'login' ? 'Sign in' : 'Create account'}
          </button>
        </form>
        {mode === 'login' && <PasskeySignInButton onSignedIn={signedIn} onError={setError} />}
        {oidc?.enabled && (
          <a class="btn btn-block" href="/api/auth/oidc">
            Sign in with {oidc.name ?? 'single sign-on'}
          </a>
        )}
        {signupOpen && (
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
      </div>
    </div>
  )
}
