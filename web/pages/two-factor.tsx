// 2FA: each token's live code (fetched from the server, which holds the secret) with a countdown,
// copy on click, add by base32 secret or otpauth:// URI, delete with confirmation. HOTP tokens
// show a code only when asked (each reveal uses up a counter); Steam Guard codes are 5 characters.
// Import from other apps and export: two-factor-transfer.tsx.
import { useEffect, useRef, useState } from 'preact/hooks'
import { api, errorMessage, type TotpCode, type TwoFactorToken } from '../api'
import { DueBadge } from '../components/history'
import {
  confirmAction,
  DialogActions,
  Field,
  Icon,
  inputValue,
  LengthNote,
  Loading,
  Modal,
  overLimit,
  toast,
  toastError,
  useLoad,
  useSubmission,
  SlashSearch,
} from '../ui'
import { ExportTokens, ImportTokens } from './two-factor-transfer'
import { writeProps } from '../vault'

/** A plain base32 secret's settings; a token from an otpauth:// link may carry others. */
const DEFAULT_PERIOD = 30
const DEFAULT_DIGITS = 6

/** "123 456", "1234 5678", "123 4567": two groups, the shorter first. */
export function groupDigits(code: string): string {
  const half = Math.floor(code.length / 2)
  return code.length > 4 ? `${code.slice(0, half)} ${code.slice(half)}` : code
}

export function TwoFactorPage() {
  const tokens = useLoad(() => api<TwoFactorToken[]>('GET', '/api/2fa'))
  const [adding, setAdding] = useState(false)
  const [importing, setImporting] = useState(false)
  const [exporting, setExporting] = useState(false)
  const [search, setSearch] = useState('')
  const needle = search.trim().toLowerCase()
  const list = [...(tokens.data ?? [])]
    .sort((a, b) => a.service.localeCompare(b.service) || a.accountName.localeCompare(b.accountName))
    .filter(
      (token) =>
        !needle ||
        token.service.toLowerCase().includes(needle) ||
        token.accountName.toLowerCase().includes(needle) ||
        (token.notes ?? '').toLowerCase().includes(needle),
    )
  return (
    <section>
      <div class="page-head">
        <h1>Two-factor codes</h1>
        <div class="actions">
          <button type="button" class="btn" onClick={() => setImporting(true)}>
            Import
          </button>
          {(tokens.data?.length ?? 0) > 0 && (
            <button type="button" class="btn" onClick={() => setExporting(true)}>
              Export
            </button>
          )}
          <button type="button" class="btn btn-primary" {...writeProps()} onClick={() => setAdding(true)}>
            Add token
          </button>
        </div>
      </div>
      {(tokens.data?.length ?? 0) > 0 && <SlashSearch noun="tokens" value={search} onSearch={setSearch} />}
      {!tokens.data ? (
        <Loading error={tokens.error} />
      ) : tokens.data.length === 0 ? (
        <div class="card empty stack">
          <h2 class="empty-title">No 2FA tokens yet</h2>
          <p>Keep the codes of the sites where you turned on two-factor sign-in. When a site shows its QR code, look for “can't scan it?” and paste either:</p>
          <ul class="paste-kinds">
            <li>
              the <strong>secret key</strong>, letters A–Z and digits 2–7, such as <code>JBSW Y3DP EHPK 3PXP</code> (spaces are fine), or
            </li>
            <li>
              the whole <strong>otpauth:// link</strong>, such as <code>otpauth://totp/GitHub:you@example.com?secret=…</code>, which fills in the service and
              account for you.
            </li>
          </ul>
          <p class="muted small">The secret stays encrypted on your vault; the page only ever receives the current code.</p>
          <div class="actions actions-center">
            <button type="button" class="btn btn-primary" {...writeProps()} onClick={() => setAdding(true)}>
              Add your first token
            </button>
          </div>
        </div>
      ) : (
        <div class="tokens">
          {list.map((token) => (
            <TokenCard key={token.id} token={token} onDeleted={tokens.reload} />
          ))}
          {list.length === 0 && <p class="muted">Nothing matches “{search}”.</p>}
        </div>
      )}
      {importing && (
        <ImportTokens
          onClose={() => setImporting(false)}
          onImported={() => {
            setImporting(false)
            tokens.reload()
          }}
        />
      )}
      {exporting && <ExportTokens onClose={() => setExporting(false)} />}
      {adding && (
        <AddToken
          onClose={() => setAdding(false)}
          onSaved={() => {
            setAdding(false)
            tokens.reload()
          }}
        />
      )}
    </section>
  )
}

function TokenCard(props: { token: TwoFactorToken; onDeleted(): void }) {
  const { token } = props
  const [code, setCode] = useState<TotpCode | null>(null)
  const [left, setLeft] = useState(0)
  const [error, setError] = useState<string | null>(null)
  const [copied, setCopied] = useState<string>('')
  const copiedTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined)
  const expiresAt = useRef(0)
  // The card's own live region says what happened, so a screen reader announces it where the person is.
  const copyCode = async (value: string) => {
    try {
      await navigator.clipboard.writeText(value)
      setCopied(`Code for ${token.service} copied`)
    } catch {
      setCopied('The clipboard is not available here')
    }
    clearTimeout(copiedTimer.current)
    copiedTimer.current = setTimeout(() => setCopied(''), 4000)
  }
  useEffect(() => () => clearTimeout(copiedTimer.current), [])

  const hotp = token.type === 'hotp'
  const steam = token.type === 'steam'
  // HOTP: one reveal per click, never on its own: each one uses up a counter on the server.
  const [revealing, setRevealing] = useState(false)
  const revealNext = async () => {
    setRevealing(true)
    try {
      setCode(await api<TotpCode>('POST', `/api/2fa/${token.id}/reveal`))
      setError(null)
    } catch (failure) {
      setError(errorMessage(failure))
    } finally {
      setRevealing(false)
    }
  }

  useEffect(() => {
    if (hotp) return
    let live = true
    let fetching = false
    const refresh = async () => {
      if (fetching) return
      fetching = true
      try {
        const answer = await api<TotpCode>('POST', `/api/2fa/${token.id}/reveal`)
        if (!live) return
        expiresAt.current = Date.now() + answer.remainingSeconds * 1000
        setCode(answer)
        setLeft(answer.remainingSeconds)
        setError(null)
      } catch (failure) {
        if (live) setError(errorMessage(failure))
        expiresAt.current = Date.now() + 5000
      } finally {
        fetching = false
      }
    }
    // Codes are fetched only while the page is visible: each fetch is a read of a secret in the
    // audit log, and a tab left open in the background would fill it.
    const visible = () => document.visibilityState === 'visible'
    const tick = () => {
      const seconds = Math.ceil((expiresAt.current - Date.now()) / 1000)
      if (seconds > 0) setLeft(seconds)
      else if (visible()) void refresh()
      else setLeft(0)
    }
    if (visible()) void refresh()
    const timer = setInterval(tick, 250)
    document.addEventListener('visibilitychange', tick)
    return () => {
      live = false
      clearInterval(timer)
      document.removeEventListener('visibilitychange', tick)
      setCode(null)
    }
  }, [token.id, hotp])

  const remove = async () => {
    if (!(await confirmAction(`Delete the token for ${token.service} (${token.accountName})? It goes to the trash, where it can be restored.`))) return
    try {
      await api('DELETE', `/api/2fa/${token.id}`)
      toast(`Deleted ${token.service}`)
      props.onDeleted()
    } catch (failure) {
      toastError(failure)
    }
  }

  const radius = 15
  const circumference = 2 * Math.PI * radius
  const period = Number.isInteger(token.period) && token.period! > 0 ? token.period! : DEFAULT_PERIOD
  const digits = Number.isInteger(token.digits) && token.digits! > 0 ? token.digits! : DEFAULT_DIGITS
  const fraction = code ? Math.max(0, Math.min(1, left / period)) : 0
  // The server's code, as it is (its length is the token's digits).
  const formatted = steam ? (code ? code.code : '•'.repeat(digits)) : code ? groupDigits(code.code) : groupDigits('•'.repeat(digits))
  const settings = [
    hotp ? `counter-based (HOTP)${code?.counter !== undefined ? `, code ${code.counter}` : ''}` : null,
    steam ? 'Steam Guard' : null,
    token.algorithm && token.algorithm.toUpperCase() !== 'SHA1' ? token.algorithm.toUpperCase() : null,
    digits !== DEFAULT_DIGITS && !steam ? `${digits} digits` : null,
    period !== DEFAULT_PERIOD && !hotp ? `every ${period} s` : null,
  ].filter(Boolean)
  return (
    <article class="card token" data-token={token.service}>
      <div class="token-head">
        <Icon slug={slugFor(token.service)} name={token.service} size="sm" />
        <div class="grow">
          <h2 class="token-service">{token.service}</h2>
          <p class="muted small token-account">
            {token.accountName} <DueBadge status={token.dueStatus} expiresAt={token.expiresAt} />
          </p>
        </div>
        <button type="button" class="btn btn-small btn-danger-quiet" onClick={remove} aria-label={`Delete token ${token.service}`}>
          Delete
        </button>
      </div>
      <div class="token-code-row">
        {/* The label carries the digits: screen readers hear the code itself, not only what the button does. */}
        <button
          type="button"
          class="token-code"
          title="Copy the code"
          aria-label={code ? `Code for ${token.service}: ${formatted}, copy` : `Code for ${token.service}, loading`}
          disabled={!code}
          onClick={() => code && copyCode(code.code)}
        >
          <span class="token-digits">{formatted}</span>
        </button>
        {hotp ? (
          <button
            type="button"
            class="btn btn-small"
            disabled={revealing}
            onClick={revealNext}
            aria-label={`${code ? 'Next code' : 'Show code'} for ${token.service}`}
          >
            {code ? 'Next code' : 'Show code'}
          </button>
        ) : (
          <svg class={`countdown${left <= 5 ? ' countdown-low' : ''}`} viewBox="0 0 36 36" role="img" aria-label={`${left} seconds left`}>
            <circle cx="18" cy="18" r={radius} class="countdown-track" />
            <circle
              cx="18"
              cy="18"
              r={radius}
              class="countdown-arc"
              stroke-dasharray={`${circumference}`}
              stroke-dashoffset={`${circumference * (1 - fraction)}`}
              transform="rotate(-90 18 18)"
            />
            <text x="18" y="22" text-anchor="middle" class="countdown-text">
              {code ? left : ''}
            </text>
          </svg>
        )}
      </div>
      <p class="small token-copied" role="status" aria-live="polite" aria-atomic="true">
        {copied}
      </p>
      {settings.length > 0 && <p class="muted small token-settings">{settings.join(' · ')}</p>}
      {error && <p class="error-text small">{error}</p>}
      {token.notes && <p class="muted small">{token.notes}</p>}
    </article>
  )
}

/** A Simple Icons slug guessed from the service name ("GitHub" -> "github"); a letter avatar if unknown. */
function slugFor(service: string): string | null {
  const slug = service.toLowerCase().replace(/[^a-z0-9]/g, '')
  return slug.length > 0 && slug.length <= 64 ? slug : null
}

/** Service and account from an otpauth:// URI's label and issuer, to prefill the form. */
function labelFromUri(uri: string): { service?: string; account?: string } {
  try {
    const url = new URL(uri.trim())
    if (url.protocol !== 'otpauth:') return {}
    const label = decodeURIComponent(url.pathname.replace(/^\/+/, '').replace(/^(totp|hotp|steam)\//i, ''))
    const [first, second] = label.includes(':') ? label.split(/:(.*)/s) : [undefined, label]
    return { service: url.searchParams.get('issuer') ?? first?.trim(), account: second?.trim() }
  } catch {
    return {}
  }
}

function AddToken(props: { onClose(): void; onSaved(): void }) {
  const [service, setService] = useState('')
  const [account, setAccount] = useState('')
  const [secret, setSecret] = useState('')
  const [notes, setNotes] = useState('')
  const { busy, error, setError, run } = useSubmission()
  const dirty = service !== '' || account !== '' || secret !== '' || notes !== ''

  const onSecret = (value: string) => {
    setSecret(value)
    if (value.trim().toLowerCase().startsWith('otpauth://')) {
      const label = labelFromUri(value)
      if (label.service && !service) setService(label.service)
      if (label.account && !account) setAccount(label.account)
    }
  }
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    const tooLong = overLimit([
      ['The service', service, 200],
      ['The account', account, 200],
      ['The notes', notes, 2000],
    ])
    if (tooLong) return setError(tooLong)
    await run(async () => {
      await api('POST', '/api/2fa', {
        service: service.trim(),
        accountName: account.trim(),
        secret: secret.trim(),
        ...(notes.trim() ? { notes: notes.trim() } : {}),
      })
      setSecret('')
      toast(`Added ${service.trim()}`)
      props.onSaved()
    })
  }
  return (
    <Modal title="Add a 2FA token" onClose={props.onClose} dirty={dirty}>
      <form class="stack" onSubmit={submit} autoComplete="off">
        <Field
          label="Secret or otpauth:// URI"
          hint="The base32 key the service shows under “can't scan the code?”, or the whole otpauth:// link (time-based, counter-based hotp, or Steam)."
        >
          <input name="secret" required class="mono" type="password" autoComplete="off" value={secret} onInput={(event) => onSecret(inputValue(event))} />
        </Field>
        <Field label="Service">
          <input name="service" required value={service} onInput={(event) => setService(inputValue(event))} placeholder="GitHub" />
          <LengthNote value={service} max={200} what="The service" />
        </Field>
        <Field label="Account">
          <input name="accountName" required value={account} onInput={(event) => setAccount(inputValue(event))} placeholder="you@example.com" />
          <LengthNote value={account} max={200} what="The account" />
        </Field>
        <Field label="Notes (optional)">
          <input name="notes" value={notes} onInput={(event) => setNotes(inputValue(event))} />
          <LengthNote value={notes} max={2000} what="The notes" />
        </Field>
        <DialogActions error={error} busy={busy} submit={'Add token'} onCancel={props.onClose} />
      </form>
    </Modal>
  )
}
