// /cli?code=ABCD-EFGH: approve or deny a sign-in of the `svc` command (device approval). Shows
// the device name and the scopes the new key would hold; the CLI, polling, then gets its key.
import { effect } from '@preact/signals'
import { useEffect, useState } from 'preact/hooks'
import { api, ApiError, currentUser } from '../api'
import { currentPath, navigate } from '../router'
import { Field, FormError, inputValue, Loading, useSubmission } from '../ui'

interface DeviceRequest {
  userCode: string
  deviceName: string
  keyName: string
  scopes: string[]
  keyExpiresInDays: number
  expiresAt: string
}

// A signed-out visit goes through /login and then /: the code is kept for this tab, and the
// page comes back here once signed in.
const STASH = 'svc-cli-code'
const linkCode = location.pathname === '/cli' ? new URLSearchParams(location.search).get('code') : null
if (linkCode) sessionStorage.setItem(STASH, linkCode)
effect(() => {
  if (currentUser.value && currentPath.value !== '/cli' && sessionStorage.getItem(STASH)) navigate('/cli', true)
})

const SCOPE_TEXT: Record<string, string> = {
  'entries:read': 'see entry names (not values)',
  'entries:reveal': 'read entry values',
  'export:read': 'export values as .env',
  'envs:read': 'see env projects',
  'envs:reveal': 'read env files',
  '2fa:read': 'see two-factor accounts',
  '2fa:reveal': 'read two-factor codes',
  'categories:read': 'see categories',
}

export function CliPage() {
  const [code, setCode] = useState<string | null>(() => new URLSearchParams(location.search).get('code') ?? sessionStorage.getItem(STASH))
  const [typed, setTyped] = useState('')
  const [request, setRequest] = useState<DeviceRequest | null>(null)
  const [loadError, setLoadError] = useState<string | null>(null)
  const [decision, setDecision] = useState<'approved' | 'denied' | null>(null)
  const { busy, error, run } = useSubmission()

  useEffect(() => {
    sessionStorage.removeItem(STASH)
    if (!code) return
    setRequest(null)
    setLoadError(null)
    api<DeviceRequest>('GET', `/api/auth/device/${encodeURIComponent(code)}`).then(setRequest, (failure) =>
      setLoadError(
        failure instanceof ApiError && failure.code === 'DEVICE_CODE_NOT_FOUND'
          ? `No sign-in is waiting for the code ${code}: it may have expired (codes last 10 minutes) or been used. Run svc login again.`
          : String((failure as Error).message),
      ),
    )
  }, [code])

  const decide = (approve: boolean) =>
    run(async () => {
      const answer = await api<{ status: 'approved' | 'denied' }>('POST', `/api/auth/device/${encodeURIComponent(request!.userCode)}/${approve ? 'approve' : 'deny'}`)
      setDecision(answer.status)
    })

  return (
    <section>
      <h1>Sign in the svc command</h1>
      <div class="card stack narrow cli-approval">
        {decision === 'approved' ? (
          <p role="status" class="cli-decision">
            Approved. <strong>{request?.deviceName}</strong> receives its key in a few seconds: go back to your terminal.
          </p>
        ) : decision === 'denied' ? (
          <p role="status" class="cli-decision">
            Denied. The command on <strong>{request?.deviceName}</strong> gets no key.
          </p>
        ) : !code ? (
          <form
            class="stack"
            onSubmit={(event) => {
              event.preventDefault()
              if (typed.trim()) setCode(typed.trim())
            }}
          >
            <p>Enter the code that svc login shows in your terminal.</p>
            <Field label="Code">
              <input name="userCode" autoComplete="off" placeholder="ABCD-EFGH" value={typed} onInput={(event) => setTyped(inputValue(event))} />
            </Field>
            <div class="actions actions-start">
              <button type="submit" class="btn btn-primary">
                Continue
              </button>
            </div>
          </form>
        ) : !request ? (
          <>
            <Loading error={loadError} />
            {loadError && (
              <div class="actions actions-start">
                <button type="button" class="btn" onClick={() => (setTyped(''), setCode(null))}>
                  Enter another code
                </button>
              </div>
            )}
          </>
        ) : (
          <>
            <p>
              The <code>svc</code> command on <strong class="cli-device">{request.deviceName}</strong> asks for an access key to your vault.
            </p>
            <p>
              Check that your terminal shows the code <strong class="cli-code">{request.userCode}</strong>. Approve only a sign-in you started yourself.
            </p>
            <p class="muted">
              The key will be named “{request.keyName}”, expire after {request.keyExpiresInDays} days, and hold these scopes:
            </p>
            <ul class="cli-scopes">
              {request.scopes.map((scope) => (
                <li key={scope}>
                  <code>{scope}</code> {SCOPE_TEXT[scope] ? <span class="muted">— {SCOPE_TEXT[scope]}</span> : null}
                </li>
              ))}
            </ul>
            <FormError error={error} />
            <div class="actions actions-start">
              <button type="button" class="btn btn-primary" disabled={busy} onClick={() => decide(true)}>
                Approve
              </button>
              <button type="button" class="btn btn-danger-quiet" disabled={busy} onClick={() => decide(false)}>
                Deny
              </button>
            </div>
          </>
        )}
      </div>
      <InstallCli />
    </section>
  )
}

/** The one line that installs svc from this vault on a machine with Node 20+ or Bun. */
function InstallCli() {
  const line = `mkdir -p ~/.local/bin && curl -fsSL ${location.origin}/cli/svc -o ~/.local/bin/svc && chmod +x ~/.local/bin/svc`
  return (
    <div class="card stack narrow cli-install">
      <h2>Install svc</h2>
      <p>On any machine with Node 20+ or Bun:</p>
      <pre class="cli-install-line">
        <code>{line}</code>
      </pre>
      <p class="muted">
        Then <code>svc login {location.origin}</code>. For a machine without Node or Bun, build an executable from a checkout: <code>bun run build:cli -- --target=bun-linux-x64</code> (see docs/cli.md).
      </p>
    </div>
  )
}
