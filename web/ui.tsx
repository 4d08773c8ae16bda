// Shared pieces: links, toasts, confirmation, modal, icons, badges, copy and the reveal timer.
import { signal } from '@preact/signals'
import { createContext, type ComponentChildren, type TargetedEvent } from 'preact'
import { useContext, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks'
import { ENVIRONMENTS, errorMessage, type Environment } from './api'
import { navigateGuarded, setLeaveCheck } from './router'

/** How long a revealed secret stays on screen. */
export const REVEAL_MS = 30_000

export function Link(props: { href: string; class?: string; children: ComponentChildren; 'aria-current'?: 'page' | undefined }) {
  const onClick = (event: MouseEvent) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
    event.preventDefault()
    void navigateGuarded(props.href)
  }
  return (
    <a href={props.href} class={props.class} onClick={onClick} aria-current={props['aria-current']}>
      {props.children}
    </a>
  )
}

// ---- toasts ----
interface Toast {
  id: number
  text: string
  kind: 'ok' | 'error'
}
const toasts = signal<Toast[]>([])
let toastId = 0
export function toast(text: string, kind: 'ok' | 'error' = 'ok'): void {
  const id = ++toastId
  toasts.value = [...toasts.value, { id, text, kind }]
  setTimeout(() => (toasts.value = toasts.value.filter((item) => item.id !== id)), kind === 'error' ? 6000 : 2500)
}
export const toastError = (error: unknown) => toast(errorMessage(error), 'error')

export function Toasts() {
  const dismiss = (id: number) => (toasts.value = toasts.value.filter((item) => item.id !== id))
  return (
    <div class="toasts" role="status" aria-live="polite">
      {toasts.value.map((item) => (
        <div key={item.id} class={`toast toast-${item.kind}`} onClick={() => dismiss(item.id)}>
          {item.text}
        </div>
      ))}
    </div>
  )
}

// ---- confirmation ----
interface PendingConfirm {
  message: string
  action: string
  resolve(ok: boolean): void
}
const pendingConfirm = signal<PendingConfirm | null>(null)

/** Asks before a destructive action; resolves true when the person confirms. */
export function confirmAction(message: string, action = 'Delete'): Promise<boolean> {
  return new Promise((resolve) => {
    pendingConfirm.value = { message, action, resolve }
  })
}

export function ConfirmHost() {
  const pending = pendingConfirm.value
  if (!pending) return null
  const answer = (ok: boolean) => {
    pendingConfirm.value = null
    pending.resolve(ok)
  }
  return (
    <Modal title="Are you sure?" onClose={() => answer(false)}>
      <p>{pending.message}</p>
      <div class="actions">
        <button type="button" class="btn" onClick={() => answer(false)}>
          Cancel
        </button>
        <button type="button" class="btn btn-danger" onClick={() => answer(true)} autoFocus>
          {pending.action}
        </button>
      </div>
    </Modal>
  )
}

/** Asks before typed text is thrown away; resolves true when the person agrees to discard it. */
export const confirmDiscard = (what = 'the changes you typed') => confirmAction(`Discard ${what}? They are not saved.`, 'Discard')

// Open dialogs, innermost last: only the innermost answers Escape and keeps Tab inside.
const openDialogs: HTMLElement[] = []
const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]):not([type="hidden"]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])'
const focusables = (root: HTMLElement) =>
  [...root.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((element) => !element.closest('.visually-hidden') && element.getClientRects().length > 0)

/**
 * A dialog: takes focus when it opens (its autofocus element or first field), keeps Tab inside,
 * closes on Escape, the backdrop or ×, and gives focus back to what had it. With `dirty`, closing
 * any of those ways asks before the typed text is discarded.
 */
export function Modal(props: { title: string; onClose(): void; dirty?: boolean; children: ComponentChildren }) {
  const dialog = useRef<HTMLDivElement>(null)
  const latest = useRef(props)
  latest.current = props
  const asking = useRef(false)
  // Typed text in a dialog counts as unsaved work for Back and for leaving the page, too.
  useUnsavedWork(props.dirty === true)
  const requestClose = async () => {
    if (asking.current) return
    if (latest.current.dirty) {
      asking.current = true
      const discard = await confirmDiscard()
      asking.current = false
      if (!discard) return
    }
    latest.current.onClose()
  }
  // Layout effect: the dialog has focus and answers keys as soon as it is on screen.
  useLayoutEffect(() => {
    const element = dialog.current!
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null
    openDialogs.push(element)
    const first =
      element.querySelector<HTMLElement>('[autofocus]') ??
      element.querySelector<HTMLElement>('.modal-body input, .modal-body select, .modal-body textarea, .modal-body button') ??
      element
    first.focus()
    const onKey = (event: KeyboardEvent) => {
      if (openDialogs[openDialogs.length - 1] !== element || element.closest('[inert]')) return
      if (event.key === 'Escape') {
        event.preventDefault()
        void requestClose()
      } else if (event.key === 'Tab') {
        const items = focusables(element)
        if (items.length === 0) return event.preventDefault()
        const at = items.indexOf(document.activeElement as HTMLElement)
        if (event.shiftKey && at <= 0) {
          event.preventDefault()
          items[items.length - 1].focus()
        } else if (!event.shiftKey && (at === -1 || at === items.length - 1)) {
          event.preventDefault()
          items[0].focus()
        }
      }
    }
    // Focus that wanders out (a click on the page behind) is brought back in.
    const onFocusIn = (event: FocusEvent) => {
      if (openDialogs[openDialogs.length - 1] !== element || element.closest('[inert]')) return
      if (event.target instanceof Node && !element.contains(event.target)) (focusables(element)[0] ?? element).focus()
    }
    addEventListener('keydown', onKey)
    document.addEventListener('focusin', onFocusIn)
    return () => {
      removeEventListener('keydown', onKey)
      document.removeEventListener('focusin', onFocusIn)
      openDialogs.splice(openDialogs.indexOf(element), 1)
      // Back to what opened the dialog, after this render has settled.
      if (opener) setTimeout(() => opener.isConnected && opener.focus(), 0)
    }
  }, [])
  const titleId = useRef(`dialog-${++dialogCount}`).current
  return (
    <div class="overlay" onClick={(event) => event.target === event.currentTarget && void requestClose()}>
      <div class="modal" role="dialog" aria-modal="true" aria-labelledby={titleId} tabIndex={-1} ref={dialog}>
        <div class="modal-head">
          <h2 id={titleId}>{props.title}</h2>
          <button type="button" class="btn-icon" aria-label="Close" onClick={() => void requestClose()}>
            ×
          </button>
        </div>
        <div class="modal-body">
          <DialogClose.Provider value={() => void requestClose()}>{props.children}</DialogClose.Provider>
        </div>
      </div>
    </div>
  )
}
let dialogCount = 0
/** The open dialog's close request (with its unsaved-work question), for its Cancel button. */
const DialogClose = createContext<(() => void) | null>(null)

// ---- icons and badges ----
const AVATAR_COLORS = 6
function avatarColor(text: string): number {
  let hash = 0
  for (const char of text) hash = (hash * 31 + char.charCodeAt(0)) >>> 0
  return hash % AVATAR_COLORS
}

/** The slugs the vault has icons for (loaded once), so unknown slugs never cause a 404. */
export const knownIcons = signal<Set<string> | null>(null)
let iconsRequested = false
function loadKnownIcons(): void {
  if (iconsRequested) return
  iconsRequested = true
  fetch('/icons/slugs.json')
    .then((response) => (response.ok ? (response.json() as Promise<string[]>) : []))
    .then((slugs) => (knownIcons.value = new Set(slugs)))
    .catch(() => (knownIcons.value = new Set()))
}

/** A brand icon served by the vault (/icons/<slug>.svg), or a letter avatar. */
export function Icon(props: { slug?: string | null; name: string; size?: 'sm' | 'md' }) {
  loadKnownIcons()
  const size = props.size ?? 'md'
  if (props.slug && knownIcons.value?.has(props.slug)) {
    return (
      <span class={`icon icon-${size}`}>
        <img src={`/icons/${props.slug}.svg`} alt="" />
      </span>
    )
  }
  const letter = (props.name.trim()[0] ?? '?').toUpperCase()
  return (
    <span class={`icon icon-${size} avatar avatar-${avatarColor(props.name)}`} aria-hidden="true">
      {letter}
    </span>
  )
}

export function EnvBadge(props: { environment: string | null | undefined }) {
  if (!props.environment) return <span class="badge badge-none">any env</span>
  return <span class={`badge badge-${props.environment}`}>{props.environment}</span>
}

// ---- clipboard ----
export async function copyText(text: string, what = 'Copied'): Promise<void> {
  try {
    await navigator.clipboard.writeText(text)
    toast(`${what} to the clipboard`)
  } catch {
    toast('The clipboard is not available here', 'error')
  }
}

export function CopyButton(props: { value: string; label?: string; what?: string; ariaLabel?: string }) {
  return (
    <button type="button" class="btn btn-small" aria-label={props.ariaLabel} onClick={() => copyText(props.value, props.what)}>
      {props.label ?? 'Copy'}
    </button>
  )
}

/** Seconds left before a revealed secret hides itself; calls onExpire at zero. */
export function useRevealTimer(active: boolean, onExpire: () => void): number {
  const [left, setLeft] = useState(REVEAL_MS / 1000)
  const expire = useRef(onExpire)
  expire.current = onExpire
  useEffect(() => {
    if (!active) return
    const until = Date.now() + REVEAL_MS
    setLeft(REVEAL_MS / 1000)
    const timer = setInterval(() => {
      const seconds = Math.ceil((until - Date.now()) / 1000)
      if (seconds <= 0) {
        clearInterval(timer)
        expire.current()
      } else setLeft(seconds)
    }, 250)
    return () => clearInterval(timer)
  }, [active])
  return left
}

// ---- forms and data ----
export function Field(props: { label: string; hint?: string; children: ComponentChildren }) {
  return (
    <div class="field">
      <label class="field-control">
        <span class="field-label">{props.label}</span>
        {props.children}
      </label>
      {props.hint && <span class="field-hint">{props.hint}</span>}
    </div>
  )
}

/** A form's error line, when there is one. */
export function FormError(props: { error: string | null | undefined }) {
  return props.error ? (
    <p class="error-text" role="alert">
      {props.error}
    </p>
  ) : null
}

/** The end of a dialog's form: its error, Cancel, and the submit button. */
export function DialogActions(props: { error: string | null | undefined; busy?: boolean; submit: string; onCancel: () => void }) {
  const close = useContext(DialogClose)
  return (
    <>
      <FormError error={props.error} />
      <div class="actions">
        <button type="button" class="btn" onClick={close ?? props.onCancel}>
          Cancel
        </button>
        <button type="submit" class="btn btn-primary" disabled={props.busy}>
          {props.submit}
        </button>
      </div>
    </>
  )
}

/** A note under a field whose text is longer than the server takes: nothing is cut silently. */
export function LengthNote(props: { value: string; max: number; what?: string }) {
  const length = [...props.value].length
  if (length <= props.max) return null
  return (
    <span class="error-text small length-note" aria-live="polite">
      {props.what ?? 'This'} is {length} characters long; at most {props.max} are allowed. Shorten it by {length - props.max}.
    </span>
  )
}

/** The first field (of label and text) that is longer than its limit, as a form error; or null. */
export function overLimit(fields: [string, string, number][]): string | null {
  for (const [label, value, max] of fields) {
    const length = [...value.trim()].length
    if (length > max) return `${label} is ${length} characters long; at most ${max} are allowed.`
  }
  return null
}

/**
 * Props for a field whose text must be kept as typed (a secret, a pasted config): no spell check,
 * no autocorrect, no capitalisation, no autofill. Set as attributes through a ref: Preact sets
 * `autocorrect` as a property, which Chromium and Safari now take as a boolean ('off' -> on).
 */
export const verbatim = {
  spellcheck: false,
  autoComplete: 'off',
  ref(element: HTMLElement | null) {
    if (!element) return
    element.setAttribute('autocorrect', 'off')
    element.setAttribute('autocapitalize', 'off')
    element.setAttribute('autocomplete', 'off')
    element.setAttribute('spellcheck', 'false')
  },
}

/**
 * A secret value that may span lines (a PEM key, a certificate): a textarea, masked until shown,
 * that keeps the text byte for byte. Spell checking and autocorrection are off, so the text is
 * neither changed nor sent to a spelling service.
 */
export function SecretInput(props: { name: string; label: string; value: string; onInput(value: string): void; placeholder?: string }) {
  const [shown, setShown] = useState(false)
  const lines = Math.min(8, Math.max(1, props.value.split('\n').length))
  return (
    <div class="secret-input">
      <textarea
        name={props.name}
        aria-label={props.label}
        class={`mono secret-textarea${shown ? '' : ' masked'}`}
        rows={lines}
        {...verbatim}
        placeholder={props.placeholder}
        value={props.value}
        onInput={(event) => props.onInput(event.currentTarget.value)}
      />
      <button
        type="button"
        class="btn btn-small"
        aria-pressed={shown}
        aria-label={`${shown ? 'Hide' : 'Show'} ${props.label.replace(/^Value of /, '')}`}
        onClick={() => setShown(!shown)}
      >
        {shown ? 'Hide' : 'Show'}
      </button>
    </div>
  )
}

// ---- unsaved work ----
const unsaved = new Set<object>()

/** Marks typed, unsaved work while `dirty`: leaving the page or navigating away asks first. */
export function useUnsavedWork(dirty: boolean): void {
  const token = useRef({}).current
  useEffect(() => {
    if (dirty) unsaved.add(token)
    else unsaved.delete(token)
    return () => void unsaved.delete(token)
  }, [dirty])
}
export const hasUnsavedWork = () => unsaved.size > 0
export const forgetUnsavedWork = () => unsaved.clear()

/** Before leaving with unsaved text: asks, and forgets the work when the person agrees. */
export async function okToLeave(): Promise<boolean> {
  if (!hasUnsavedWork()) return true
  if (!(await confirmDiscard('the text you typed on this page'))) return false
  forgetUnsavedWork()
  return true
}
setLeaveCheck(okToLeave)

addEventListener('beforeunload', (event) => {
  if (!hasUnsavedWork()) return
  // Chromium asks on preventDefault(); older browsers want returnValue set.
  event.preventDefault()
  Reflect.set(event, 'returnValue', '')
})

/** A choice of environment, or none ("" with the label given). */
export function EnvironmentSelect(props: { name: string; value: Environment | ''; noneLabel: string; onChange: (value: Environment | '') => void }) {
  return (
    <select name={props.name} value={props.value} onChange={(event) => props.onChange(inputValue(event) as Environment | '')}>
      <option value="">{props.noneLabel}</option>
      {ENVIRONMENTS.map((env) => (
        <option key={env} value={env}>
          {env}
        </option>
      ))}
    </select>
  )
}

export const inputValue = (event: TargetedEvent<HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement, Event>) => event.currentTarget.value

/** Loads data on mount and when `deps` change; `reload()` fetches again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = []) {
  const [data, setData] = useState<T | undefined>(undefined)
  const [error, setError] = useState<string | null>(null)
  const [version, setVersion] = useState(0)
  useEffect(() => {
    let live = true
    load().then(
      (value) => live && (setData(value), setError(null)),
      (failure) => live && setError(errorMessage(failure)),
    )
    return () => {
      live = false
    }
  }, [...deps, version])
  return { data, error, reload: () => setVersion((value) => value + 1) }
}

/**
 * A form's submission: `run(work)` marks it busy while `work` runs and shows what `work` throws
 * as the form's error.
 */
export function useSubmission() {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const run = async (work: () => Promise<void>) => {
    setBusy(true)
    try {
      await work()
    } catch (failure) {
      setError(errorMessage(failure))
    } finally {
      setBusy(false)
    }
  }
  return { busy, error, setError, run }
}

export function Loading(props: { error?: string | null }) {
  if (props.error) return <p class="error-text">{props.error}</p>
  return <p class="muted">Loading…</p>
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return '—'
  const date = new Date(iso)
  return date.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' })
}

export function relativeTime(iso: string | null | undefined): string {
  if (!iso) return 'never'
  const seconds = Math.round((Date.now() - new Date(iso).getTime()) / 1000)
  if (seconds < 60) return 'just now'
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`
  return `${Math.floor(seconds / 86400)} d ago`
}

/** Saves text as a file through a short-lived object URL (nothing in the address bar). */
export function downloadText(text: string, filename: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/plain;charset=utf-8' }))
  const link = document.createElement('a')
  link.href = url
  link.download = filename
  document.body.appendChild(link)
  link.click()
  link.remove()
  setTimeout(() => URL.revokeObjectURL(url), 1000)
}

/** `/` anywhere but in a field focuses this search box, as on many sites. */
export function useSlashFocus(field: { current: HTMLInputElement | null }): void {
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.key !== '/' || event.ctrlKey || event.metaKey || event.altKey) return
      const target = event.target as HTMLElement | null
      if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return
      if (document.querySelector('[role="dialog"]')) return
      const input = field.current
      if (!input) return
      event.preventDefault()
      input.focus()
    }
    addEventListener('keydown', onKey)
    return () => removeEventListener('keydown', onKey)
  }, [])
}

/** A page's search field: `/` focuses it (useSlashFocus); `noun` names what it searches. */
export function SlashSearch(props: { noun: string; value: string; onSearch(value: string): void }) {
  const field = useRef<HTMLInputElement>(null)
  useSlashFocus(field)
  return (
    <input
      type="search"
      class="search"
      placeholder={`Search ${props.noun}… (press /)`}
      aria-label={`Search ${props.noun}`}
      aria-keyshortcuts="/"
      ref={field}
      value={props.value}
      onInput={(event) => props.onSearch(inputValue(event))}
    />
  )
}
