// Settings → Security: two-factor sign-in, passkeys, sessions, password, and deleting
// the account. Every change that could lock someone out asks for the password (an account made
// through single sign-on has none: the server then wants a single sign-on sign-in of the last 10
// minutes instead). What outlives a session (passkeys, access keys, single sign-on, the webhook,
// deleting the account) asks to confirm it is you when the proof is older than 10 minutes
// (components/reauth.tsx); signing out others and a password change offer to remove what was
// added in the last 30 days.
import { useState } from 'preact/hooks'
import { api, currentUser, type User } from '../api'
import { registerPasskey, type Passkey } from '../passkeys'
import { navigate } from '../router'
import {
  confirmAction,
  downloadText,
  Field,
  FormError,
  formatDate,
  inputValue,
  Loading,
  Modal,
  relativeTime,
  toast,
  toastError,
  useLoad,
  useSubmission,
} from '../ui'

/** GET /api/account/recent-additions: what a stolen session could have added. */
interface RecentAdditions {
  since: string
  passkeys: { id: string; name: string; createdAt: string }[]
  accessKeys: { id: string; name: string; keyPrefix: string; createdAt: string; lastUsedAt: string | null }[]
  oidcLinks: { name: string | null; linkedAt: string }[]
}

/** What to remove in the same step as signing out others or changing the password. */
interface Removal {
  passkeys: string[]
  accessKeys: string[]
  oidcLink: boolean
}

const NO_REMOVAL: Removal = { passkeys: [], accessKeys: [], oidcLink: false }
const removalBody = (removal: Removal) => (removal.passkeys.length || removal.accessKeys.length || removal.oidcLink ? { remove: removal } : {})

/**
 * Lists the passkeys, access keys and single sign-on links of the last 30 days with a box each:
 * the ones ticked go in the same step (sign out everywhere else, a password change).
 */
function RecentAdditionsChoice(props: { value: Removal; onChange(value: Removal): void }) {
  const recent = useLoad(() => api<RecentAdditions>('GET', '/api/account/recent-additions'))
  if (!recent.data) return <Loading error={recent.error} />
  const { passkeys, accessKeys, oidcLinks } = recent.data
  if (passkeys.length + accessKeys.length + oidcLinks.length === 0) return <p class="muted">Nothing that outlives a session was added in the last 30 days.</p>
  const toggle = (list: 'passkeys' | 'accessKeys', id: string, on: boolean) =>
    props.onChange({ ...props.value, [list]: on ? [...props.value[list], id] : props.value[list].filter((x) => x !== id) })
  return (
    <fieldset class="stack recent-additions" aria-label="Added in the last 30 days">
      <legend>Added in the last 30 days: tick what you did not add, to remove it now</legend>
      {passkeys.map((p) => (
        <label key={p.id} class="check">
          <input type="checkbox" checked={props.value.passkeys.includes(p.id)} onChange={(event) => toggle('passkeys', p.id, event.currentTarget.checked)} />{' '}
          Passkey “{p.name}”, added {formatDate(p.createdAt)}
        </label>
      ))}
      {accessKeys.map((k) => (
        <label key={k.id} class="check">
          <input
            type="checkbox"
            checked={props.value.accessKeys.includes(k.id)}
            onChange={(event) => toggle('accessKeys', k.id, event.currentTarget.checked)}
          />{' '}
          Access key “{k.name}” (<code>{k.keyPrefix}…</code>), created {formatDate(k.createdAt)}
          {k.lastUsedAt ? `, last used ${relativeTime(k.lastUsedAt)}` : ', never used'}
        </label>
      ))}
      {oidcLinks.map((l) => (
        <label key={l.linkedAt} class="check">
          <input
            type="checkbox"
            checked={props.value.oidcLink}
            onChange={(event) => props.onChange({ ...props.value, oidcLink: event.currentTarget.checked })}
          />{' '}
          Single sign-on{l.name ? ` (${l.name})` : ''}, linked {formatDate(l.linkedAt)}
        </label>
      ))}
    </fieldset>
  )
}

interface SessionItem {
  id: string
  createdAt: string
  lastSeenAt: string
  clientAddress: string
  device: string
  current: boolean
}

/** Whether the account has a password (single sign-on accounts may not). */
function useHasPassword() {
  const status = useLoad(() => api<{ canUnlink: boolean }>('GET', '/api/auth/oidc/link'))
  return status.data ? status.data.canUnlink : undefined
}

function PasswordField(props: { value: string; onInput(value: string): void; label?: string }) {
  return (
    <Field label={props.label ?? 'Current password'}>
      <input
        name="password"
        type="password"
        autoComplete="current-password"
        required
        value={props.value}
        onInput={(event) => props.onInput(inputValue(event))}
      />
    </Field>
  )
}

function RecoveryCodes(props: { codes: string[]; onDone(): void }) {
  const email = currentUser.value?.email ?? 'account'
  const download = () =>
    downloadText(
      `svc-vault recovery codes for ${email} at ${location.origin}\nEach code signs in once when the authenticator app is not at hand.\n\n${props.codes.join('\n')}\n`,
      // Which vault the codes open, in the name: several vaults' files stay apart.
      `svc-vault-recovery-codes-${location.host.replace(/[^A-Za-z0-9.-]+/g, '_')}.txt`,
    )
  return (
    <div class="stack" aria-label="Recovery codes">
      <p>
        <strong>Save these recovery codes now.</strong> Each one signs in once without the app; they are not shown again.
      </p>
      <ul class="recovery-codes">
        {props.codes.map((code) => (
          <li key={code}>
            <code>{code}</code>
          </li>
        ))}
      </ul>
      <div class="actions actions-start">
        <button type="button" class="btn" onClick={download}>
          Download as a text file
        </button>
        <button type="button" class="btn btn-primary" onClick={props.onDone}>
          I saved them
        </button>
      </div>
    </div>
  )
}

function TwoFactorSection(props: { hasPassword: boolean | undefined }) {
  const me = useLoad(() => api<{ user: User & { twoFactorEnabled: boolean; recoveryCodesLeft?: number } }>('GET', '/api/auth/me'))
  const [password, setPassword] = useState('')
  const [setup, setSetup] = useState<{ secret: string; uri: string; qr: string } | null>(null)
  const [code, setCode] = useState('')
  const [recoveryCode, setRecoveryCode] = useState('')
  const [codes, setCodes] = useState<string[] | null>(null)
  const [managing, setManaging] = useState<'disable' | 'renew' | null>(null)
  const { busy, error, setError, run } = useSubmission()
  const enabled = me.data?.user.twoFactorEnabled
  const passwordBody = () => (props.hasPassword === false ? {} : { password })

  const start = (event: Event) => {
    event.preventDefault()
    setError(null)
    return run(async () => {
      setSetup(await api('POST', '/api/account/2fa/setup', passwordBody()))
      setPassword('')
    })
  }
  const enable = (event: Event) => {
    event.preventDefault()
    setError(null)
    return run(async () => {
      const answer = await api<{ recoveryCodes: string[] }>('POST', '/api/account/2fa/enable', { code: code.replace(/\s+/g, '') })
      setSetup(null)
      setCode('')
      setCodes(answer.recoveryCodes)
      toast('Two-factor sign-in is on')
    })
  }
  const manage = (event: Event) => {
    event.preventDefault()
    setError(null)
    return run(async () => {
      const proof = recoveryCode.trim() ? { recoveryCode: recoveryCode.trim() } : { code: code.replace(/\s+/g, '') }
      if (managing === 'disable') {
        await api('POST', '/api/account/2fa/disable', { ...passwordBody(), ...proof })
        toast('Two-factor sign-in is off')
        me.reload()
      } else {
        const answer = await api<{ recoveryCodes: string[] }>('POST', '/api/account/2fa/recovery-codes', { ...passwordBody(), ...proof })
        setCodes(answer.recoveryCodes)
      }
      setManaging(null)
      setPassword('')
      setCode('')
      setRecoveryCode('')
    })
  }

  let body
  if (!me.data) body = <Loading error={me.error} />
  else if (codes)
    body = (
      <RecoveryCodes
        codes={codes}
        onDone={() => {
          setCodes(null)
          me.reload()
        }}
      />
    )
  else if (setup)
    body = (
      <form onSubmit={enable} class="stack" aria-label="Turn on two-factor sign-in">
        <p>Scan this QR code with an authenticator app, or type the secret into it, then enter the code it shows.</p>
        <img
          class="qr"
          src={`data:image/svg+xml;charset=utf-8,${encodeURIComponent(setup.qr)}`}
          alt="QR code of the two-factor secret"
          width={200}
          height={200}
        />
        <p>
          Secret: <code class="totp-secret">{setup.secret}</code>
        </p>
        <Field label="Code from the app">
          <input name="code" inputMode="numeric" autoComplete="one-time-code" required value={code} onInput={(event) => setCode(inputValue(event))} />
        </Field>
        <FormError error={error} />
        <div class="actions actions-start">
          <button type="submit" class="btn btn-primary" disabled={busy}>
            Turn on
          </button>
          <button type="button" class="btn" onClick={() => setSetup(null)}>
            Cancel
          </button>
        </div>
      </form>
    )
  else if (!enabled)
    body = (
      <form onSubmit={start} class="stack">
        <p class="muted">Off. With it on, signing in with your password also asks for a code from an authenticator app (or a passkey).</p>
        {props.hasPassword !== false && <PasswordField value={password} onInput={setPassword} />}
        <FormError error={error} />
        <div class="actions actions-start">
          <button type="submit" class="btn btn-primary" disabled={busy}>
            Set up two-factor sign-in
          </button>
        </div>
      </form>
    )
  else
    body = (
      <div class="stack">
        <p>
          <strong>On.</strong> Signing in with your password asks for a code from your authenticator app, a recovery code, or a passkey. Single sign-on sign-ins
          are not asked: your identity provider handles that.
        </p>
        {me.data?.user.recoveryCodesLeft !== undefined && (
          <p class={me.data.user.recoveryCodesLeft <= 3 ? 'error-text' : 'muted'}>
            {me.data.user.recoveryCodesLeft} of 10 recovery codes left{me.data.user.recoveryCodesLeft <= 3 ? ': make new ones soon.' : '.'}
          </p>
        )}
        {managing ? (
          <form onSubmit={manage} class="stack" aria-label={managing === 'disable' ? 'Turn off two-factor sign-in' : 'New recovery codes'}>
            {props.hasPassword !== false && <PasswordField value={password} onInput={setPassword} />}
            <Field label="Code from the app" hint="Or a recovery code below.">
              <input name="code" inputMode="numeric" autoComplete="one-time-code" value={code} onInput={(event) => setCode(inputValue(event))} />
            </Field>
            <Field label="Recovery code">
              <input name="recoveryCode" autoComplete="off" value={recoveryCode} onInput={(event) => setRecoveryCode(inputValue(event))} />
            </Field>
            <FormError error={error} />
            <div class="actions actions-start">
              <button type="submit" class={managing === 'disable' ? 'btn btn-danger' : 'btn btn-primary'} disabled={busy}>
                {managing === 'disable' ? 'Turn off' : 'Make new recovery codes'}
              </button>
              <button type="button" class="btn" onClick={() => setManaging(null)}>
                Cancel
              </button>
            </div>
          </form>
        ) : (
          <div class="actions actions-start">
            <button type="button" class="btn" onClick={() => (setError(null), setManaging('renew'))}>
              New recovery codes
            </button>
            <button type="button" class="btn btn-danger-quiet" onClick={() => (setError(null), setManaging('disable'))}>
              Turn off two-factor sign-in
            </button>
          </div>
        )}
      </div>
    )
  return (
    <div class="card">
      <h2>Two-factor sign-in</h2>
      {body}
    </div>
  )
}

function PasskeysSection() {
  const list = useLoad(() => api<Passkey[]>('GET', '/api/account/passkeys'))
  const [name, setName] = useState('')
  const { busy, error, setError, run } = useSubmission()
  const add = (event: Event) => {
    event.preventDefault()
    setError(null)
    return run(async () => {
      await registerPasskey(name.trim() || 'Passkey')
      setName('')
      toast('Passkey added')
      list.reload()
    })
  }
  const remove = async (passkey: Passkey) => {
    if (!(await confirmAction(`Delete the passkey "${passkey.name}"? It will no longer sign in.`))) return
    try {
      await api('DELETE', `/api/account/passkeys/${passkey.id}`)
      toast('Passkey deleted')
      list.reload()
    } catch (failure) {
      toastError(failure)
    }
  }
  return (
    <div class="card">
      <h2>Passkeys</h2>
      <p class="muted">Sign in with your device's screen lock or a security key, without typing your e-mail or password.</p>
      {!list.data ? (
        <Loading error={list.error} />
      ) : list.data.length === 0 ? (
        <p class="muted">No passkeys yet.</p>
      ) : (
        <table class="table" aria-label="Passkeys">
          <thead>
            <tr>
              <th>Name</th>
              <th>Created</th>
              <th>Last used</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.data.map((passkey) => (
              <tr key={passkey.id}>
                <td>{passkey.name}</td>
                <td>{formatDate(passkey.createdAt)}</td>
                <td>{passkey.lastUsedAt ? relativeTime(passkey.lastUsedAt) : 'never'}</td>
                <td>
                  <button type="button" class="btn btn-small btn-danger-quiet" onClick={() => remove(passkey)} aria-label={`Delete passkey ${passkey.name}`}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form onSubmit={add} class="stack">
        <Field label="Name of the new passkey">
          <input name="passkeyName" maxLength={100} placeholder="e.g. Laptop" value={name} onInput={(event) => setName(inputValue(event))} />
        </Field>
        <FormError error={error} />
        <div class="actions actions-start">
          <button type="submit" class="btn btn-primary" disabled={busy}>
            Add a passkey
          </button>
        </div>
      </form>
    </div>
  )
}

function SessionsSection() {
  const list = useLoad(() => api<SessionItem[]>('GET', '/api/account/sessions'))
  const end = async (session: SessionItem) => {
    try {
      await api('DELETE', `/api/account/sessions/${session.id}`)
      if (session.current) {
        currentUser.value = null
        navigate('/login', true)
        return
      }
      toast('Session ended')
      list.reload()
    } catch (failure) {
      toastError(failure)
    }
  }
  const [endingOthers, setEndingOthers] = useState(false)
  const [removal, setRemoval] = useState<Removal>(NO_REMOVAL)
  const ending = useSubmission()
  const endOthers = () =>
    ending.run(async () => {
      await api('POST', '/api/account/sessions/revoke-others', removalBody(removal))
      toast('Every other session ended')
      setEndingOthers(false)
      setRemoval(NO_REMOVAL)
      list.reload()
    })
  return (
    <div class="card">
      <h2>Sessions</h2>
      {!list.data ? (
        <Loading error={list.error} />
      ) : (
        <>
          <table class="table" aria-label="Sessions">
            <thead>
              <tr>
                <th>Device</th>
                <th>Address</th>
                <th>Signed in</th>
                <th>Last seen</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.data.map((session) => (
                <tr key={session.id}>
                  <td>
                    {session.device} {session.current && <span class="badge">this browser</span>}
                  </td>
                  <td>{session.clientAddress}</td>
                  <td>{formatDate(session.createdAt)}</td>
                  <td>{relativeTime(session.lastSeenAt)}</td>
                  <td>
                    <button
                      type="button"
                      class="btn btn-small"
                      onClick={() => end(session)}
                      aria-label={session.current ? `Sign out (this browser, ${session.device})` : `End session ${session.device}`}
                    >
                      {session.current ? 'Sign out' : 'End'}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {list.data.length > 1 && (
            <div class="actions actions-start">
              <button type="button" class="btn" onClick={() => setEndingOthers(true)}>
                Sign out everywhere else
              </button>
            </div>
          )}
        </>
      )}
      {endingOthers && (
        <Modal title="Sign out everywhere else" onClose={() => setEndingOthers(false)}>
          <div class="stack">
            <p>Every other browser and device is signed out. Access keys, passkeys and single sign-on outlive sessions: remove any you did not add.</p>
            <RecentAdditionsChoice value={removal} onChange={setRemoval} />
            <FormError error={ending.error} />
            <div class="actions">
              <button type="button" class="btn" onClick={() => setEndingOthers(false)}>
                Cancel
              </button>
              <button type="button" class="btn btn-danger" onClick={endOthers} disabled={ending.busy}>
                Sign out others
              </button>
            </div>
          </div>
        </Modal>
      )}
    </div>
  )
}

function PasswordSection(props: { hasPassword: boolean | undefined }) {
  const [current, setCurrent] = useState('')
  const [next, setNext] = useState('')
  const [removal, setRemoval] = useState<Removal>(NO_REMOVAL)
  const [shown, setShown] = useState(0)
  const { busy, error, setError, run } = useSubmission()
  const submit = (event: Event) => {
    event.preventDefault()
    setError(null)
    return run(async () => {
      const body = props.hasPassword === false ? { newPassword: next } : { currentPassword: current, newPassword: next }
      await api('POST', '/api/account/password', { ...body, ...removalBody(removal) })
      setCurrent('')
      setNext('')
      setRemoval(NO_REMOVAL)
      // The list is loaded again: what was removed is gone from it.
      setShown(shown + 1)
      toast('Password changed; every other session was signed out')
    })
  }
  return (
    <div class="card">
      <h2>Password</h2>
      <form onSubmit={submit} class="stack">
        {props.hasPassword === false ? (
          <p class="muted">
            This account signs in with single sign-on. To set a first password, sign in with single sign-on again, then set it within 10 minutes.
          </p>
        ) : (
          <PasswordField value={current} onInput={setCurrent} />
        )}
        <Field label="New password" hint="At least 8 characters. Every other session is signed out.">
          <input
            name="newPassword"
            type="password"
            autoComplete="new-password"
            minLength={8}
            required
            value={next}
            onInput={(event) => setNext(inputValue(event))}
          />
        </Field>
        <RecentAdditionsChoice key={shown} value={removal} onChange={setRemoval} />
        <FormError error={error} />
        <div class="actions actions-start">
          <button type="submit" class="btn btn-primary" disabled={busy}>
            {props.hasPassword === false ? 'Set password' : 'Change password'}
          </button>
        </div>
      </form>
    </div>
  )
}

function DeleteAccountSection(props: { hasPassword: boolean | undefined }) {
  const [password, setPassword] = useState('')
  const { busy, error, setError, run } = useSubmission()
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    // Asked twice: what goes, then that it cannot be undone.
    if (!(await confirmAction('Delete your account and every secret, env project, 2FA token and access key in it?', 'Continue'))) return
    if (!(await confirmAction('This cannot be undone. Delete the account for good?', 'Delete my account'))) return
    await run(async () => {
      await api('DELETE', '/api/account', props.hasPassword === false ? {} : { password })
      currentUser.value = null
      navigate('/login', true)
    })
  }
  return (
    <div class="card">
      <h2>Delete account</h2>
      <form onSubmit={submit} class="stack">
        <p class="muted">Deletes the account with everything in it and signs out every session and access key.</p>
        {props.hasPassword !== false && <PasswordField value={password} onInput={setPassword} label="Password" />}
        <FormError error={error} />
        <div class="actions actions-start">
          <button type="submit" class="btn btn-danger" disabled={busy}>
            Delete account…
          </button>
        </div>
      </form>
    </div>
  )
}

export function SecuritySettings() {
  const hasPassword = useHasPassword()
  return (
    <>
      <h2 class="section-title">Security</h2>
      <TwoFactorSection hasPassword={hasPassword} />
      <PasskeysSection />
      <SessionsSection />
      <PasswordSection hasPassword={hasPassword} />
      <DeleteAccountSection hasPassword={hasPassword} />
    </>
  )
}
