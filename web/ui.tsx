// Shared pieces: links, toasts, confirmation, modal, icons, badges, copy and the reveal timer.
import { signal } from '@preact/signals'
import type { ComponentChildren, TargetedEvent } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { ENVIRONMENTS, errorMessage, type Environment } from './api'
import { navigate } from './router'

/** How long a revealed secret stays on screen. */
export const REVEAL_MS = 30_000

export function Link(props: { href: string; class?: string; children: ComponentChildren; 'aria-current'?: 'page' | undefined }) {
  const onClick = (event: MouseEvent) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
    event.preventDefault()
    navigate(props.href)
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
  return (
    <div class="toasts" role="status" aria-live="polite">
      {toasts.value.map((item) => (
        <div key={item.id} class={`toast toast-${item.kind}`}>
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

export function Modal(props: { title: string; onClose(): void; children: ComponentChildren }) {
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => event.key === 'Escape' && props.onClose()
    addEventListener('keydown', onKey)
    return () => removeEventListener('keydown', onKey)
  }, [props.onClose])
  return (
    <div class="overlay" onClick={(event) => event.target === event.currentTarget && props.onClose()}>
      <div class="modal" role="dialog" aria-modal="true" aria-label={props.title}>
        <div class="modal-head">
          <h2>{props.title}</h2>
          <button type="button" class="btn-icon" aria-label="Close" onClick={props.onClose}>
            ×
          </button>
        </div>
        {props.children}
      </div>
    </div>
  )
}

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

export function CopyButton(props: { value: string; label?: string; what?: string }) {
  return (
    <button type="button" class="btn btn-small" onClick={() => copyText(props.value, props.what)}>
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
      <label class="field">
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
  return (
    <>
      <FormError error={props.error} />
      <div class="actions">
        <button type="button" class="btn" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="submit" class="btn btn-primary" disabled={props.busy}>
          {props.submit}
        </button>
      </div>
    </>
  )
}

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
