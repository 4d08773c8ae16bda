// /cli: approve or deny a sign-in of the `svc` command (device approval). The person types the
// code their terminal shows: a link's ?code= opens this page but never fills the code, so a link
// someone else sent (with their own sign-in's code) approves nothing by a click. Then
// the page shows where and when the sign-in started, and the scopes in words with write scopes
// called out; only the default scopes among those asked for are ticked, the rest only if ticked here.
import { useEffect, useState } from 'preact/hooks'
import { api, ApiError } from '../api'
import { CLI_RETURN_MARK as STASH, cameFromCliLink as fromLink } from '../cli-return'
import { Field, FormError, formatDate, inputValue, Loading, relativeTime, useSubmission } from '../ui'

interface DeviceRequest {
  userCode: string
  deviceName: string
  keyName: string
  /** What the device asked for. */
  scopes: string[]
  /** What an approval grants unless widened: the default scopes among those asked for. */
  grantedByDefault: string[]
  address: string
  userAgent: string | null
  createdAt: string
  keyExpiresInDays: number
  expiresAt: string
  /** svc login --vault: the shared vault the key is for (id null: none of yours has that name). */
  vault?: { name: string; id: string | null; role: string | null }
}

const SCOPE_TEXT: Record<string, string> = {
  'categories:read': 'see categories',
  'categories:write': 'create, change and delete categories',
  'entries:read': 'see entry names (not values)',
  'entries:write': 'create, change and delete entries and their values',
  'entries:reveal': 'read entry values',
  '2fa:read': 'see two-factor accounts',
  '2fa:write': 'add, change and delete two-factor accounts',
  '2fa:reveal': 'read two-factor codes',
  'stats:read': 'see vault statistics',
  'export:read': 'export values as .env',
  'ai:extract': 'send text to the AI extractor and read the values it finds',
  'envs:read': 'see env projects',
  'envs:write': 'create, change and delete env projects and files',
  'envs:reveal': 'read env files',
  'audit:read': 'read your activity log',
}
const isWrite = (scope: string) => scope.endsWith(':write')

export function CliPage() {
  // Only what the person types: the link's code is never used (see the top of this file).
  const [code, setCode] = useState<string | null>(null)
  const [cameFromLink] = useState(() => fromLink || sessionStorage.getItem(STASH) !== null)
  const [typed, setTyped] = useState('')
  const [request, setRequest] = useState<DeviceRequest | null>(null)
  const [granted, setGranted] = useState<Set<string>>(new Set())
  const [loadError, setLoadError] = useState<string | null>(null)
  const [decision, setDecision] = useState<'approved' | 'denied' | null>(null)
  const { busy, error, run } = useSubmission()

  useEffect(() => {
    sessionStorage.removeItem(STASH)
    if (!code) return
    setRequest(null)
    setLoadError(null)
    api<DeviceRequest>('GET', `/api/auth/device/${encodeURIComponent(code)}`).then(
      (found) => {
        setGranted(new Set(found.grantedByDefault))
        setRequest(found)
      },
      (failure) =>
        setLoadError(
          failure instanceof ApiError && failure.code === 'DEVICE_CODE_NOT_FOUND'
            ? `No sign-in is waiting for the code ${code}: check it against your terminal; it may have expired (codes last 10 minutes) or been used. Run svc login again.`
            : String((failure as Error).message),
        ),
    )
  }, [code])

  const toggle = (scope: string) =>
    setGranted((current) => {
      const next = new Set(current)
      if (next.has(scope)) next.delete(scope)
      else next.add(scope)
      return next
    })

  const decide = (approve: boolean) =>
    run(async () => {
      const scopes = request!.scopes.filter((scope) => granted.has(scope))
      if (approve && scopes.length === 0) throw new Error('Tick at least one scope to approve, or deny the sign-in.')
      const answer = await api<{ status: 'approved' | 'denied' }>(
        'POST',
        `/api/auth/device/${encodeURIComponent(request!.userCode)}/${approve ? 'approve' : 'deny'}`,
        approve ? { scopes } : undefined,
      )
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
            {cameFromLink && (
              <div class="notice cli-link-notice">
                <p>
                  This page was opened from a link. Approve only a sign-in you started yourself with <code>svc login</code>: if someone sent you the link, close
                  this page.
                </p>
              </div>
            )}
            <p>Type the code that svc login shows in your terminal.</p>
            <Field label="Code">
              <input name="userCode" autoComplete="off" autoFocus placeholder="ABCD-EFGH" value={typed} onInput={(event) => setTyped(inputValue(event))} />
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
                  Type another code
                </button>
              </div>
            )}
          </>
        ) : (
          <>
            <p>
              The <code>svc</code> command on <strong class="cli-device">{request.deviceName}</strong> asks for an access key to your vault with the code{' '}
              <strong class="cli-code">{request.userCode}</strong>.
            </p>
            <dl class="cli-origin">
              <dt>From</dt>
              <dd class="cli-address">{request.address}</dd>
              <dt>Program</dt>
              <dd class="cli-user-agent">{request.userAgent ?? 'not given'}</dd>
              <dt>Started</dt>
              <dd class="cli-started">
                {formatDate(request.createdAt)} ({relativeTime(request.createdAt)})
              </dd>
            </dl>
            {request.vault && (
              <p class="cli-vault">
                {request.vault.id ? (
                  <>
                    The key will work only in the shared vault <strong>{request.vault.name}</strong> (your role there: {request.vault.role}).
                  </>
                ) : (
                  <>
                    It asks for a shared vault named <strong>{request.vault.name}</strong>, and you have none by that name: approving fails.
                  </>
                )}
              </p>
            )}
            <p>Approve only if this is the computer in front of you and you ran svc login just now.</p>
            <p class="muted">
              The key will be named “{request.keyName}”, expire after {request.keyExpiresInDays} days, and hold the scopes ticked below:
            </p>
            <ul class="cli-scopes">
              {request.scopes.map((scope) => (
                <li key={scope} class={isWrite(scope) ? 'cli-write' : undefined}>
                  <label class="check">
                    <input type="checkbox" name="scope" value={scope} checked={granted.has(scope)} onChange={() => toggle(scope)} />
                    <span>
                      <code>{scope}</code> {SCOPE_TEXT[scope] ? <span class="muted">— {SCOPE_TEXT[scope]}</span> : null}
                      {isWrite(scope) ? <strong class="badge badge-expired">can change or delete data</strong> : null}
                    </span>
                  </label>
                </li>
              ))}
            </ul>
            {request.scopes.some((scope) => !request.grantedByDefault.includes(scope)) && (
              <p class="notice cli-widen">
                The device also asked for {request.scopes.filter((scope) => !request.grantedByDefault.includes(scope)).join(', ')}, beyond the default scopes:
                those are granted only if you tick them.
              </p>
            )}
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
        Then <code>svc login {location.origin}</code>. For a machine without Node or Bun, build an executable from a checkout:{' '}
        <code>bun run build:cli -- --target=bun-linux-x64</code> (see docs/cli.md).
      </p>
    </div>
  )
}
