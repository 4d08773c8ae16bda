// The "History" panel: the previous values of an entry or an env file, newest first.
// Nothing is shown until asked: reveal one version's value, restore it (it becomes the current
// value, and the one it replaces is kept as a version), and for env files compare two versions
// line by line, by names only unless the values are revealed on purpose.
import { useState } from 'preact/hooks'
import { api, errorMessage } from '../api'
import { confirmAction, CopyButton, formatDate, Loading, Modal, toast, toastError, useLoad, useRevealTimer } from '../ui'

interface Version {
  version: number
  createdAt: string
  actor: string
}

export interface HistoryTarget {
  /** What the panel is about, for its title ("the entry “blog”"). */
  title: string
  /** The versions path: /api/entries/{id}/versions or /api/envs/{id}/files/{fileId}/versions. */
  base: string
  kind: 'entry' | 'envfile'
  /** Reveals the current value, for comparing with it (env files). */
  revealCurrent?: () => Promise<string>
}

const unwrap = <T,>(kind: HistoryTarget['kind'], answer: unknown): T => (kind === 'envfile' ? (answer as { data: T }).data : (answer as T))

const actorLabel = (actor: string) => (actor === 'session' ? 'you (signed in)' : actor.startsWith('key:') ? `access key “${actor.slice(4)}”` : actor)

function valueText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value, null, 2)
}

export function HistoryPanel(props: { target: HistoryTarget; onClose(): void; onRestored(): void }) {
  const { target } = props
  const versions = useLoad(async () => unwrap<Version[]>(target.kind, await api('GET', target.base)), [target.base])
  const [shown, setShown] = useState<{ version: number; text: string } | null>(null)
  const hide = () => setShown(null)
  const secondsLeft = useRevealTimer(shown !== null, hide)

  async function revealText(version: number): Promise<string> {
    const answer = unwrap<{ value?: unknown; content?: string }>(target.kind, await api('POST', `${target.base}/${version}/reveal`))
    return target.kind === 'envfile' ? (answer.content ?? '') : valueText(answer.value)
  }

  async function reveal(version: number) {
    if (shown?.version === version) return hide()
    try {
      setShown({ version, text: await revealText(version) })
    } catch (error) {
      toastError(error)
    }
  }

  async function restore(version: number) {
    if (!(await confirmAction(`Make version ${version} the current value? The current value is kept in the history.`, 'Restore'))) return
    try {
      await api('POST', `${target.base}/${version}/restore`)
      toast(`Version ${version} restored`)
      hide()
      versions.reload()
      props.onRestored()
    } catch (error) {
      toastError(error)
    }
  }

  return (
    <Modal title={`History of ${target.title}`} onClose={props.onClose}>
      {!versions.data ? (
        <Loading error={versions.error} />
      ) : versions.data.length === 0 ? (
        <p class="muted history-empty">No previous values yet: each time the value changes, the one it had is kept here.</p>
      ) : (
        <>
          <ul class="list history-list">
            {versions.data.map((v) => (
              <li key={v.version} class="list-row history-version" data-version={v.version}>
                <span class="grow">
                  <strong>Version {v.version}</strong>{' '}
                  <span class="muted small">
                    · {formatDate(v.createdAt)} · by {actorLabel(v.actor)}
                  </span>
                </span>
                <span class="row-actions">
                  <button
                    type="button"
                    class="btn btn-small"
                    onClick={() => reveal(v.version)}
                    aria-pressed={shown?.version === v.version}
                    aria-label={`${shown?.version === v.version ? 'Hide' : 'Reveal'} version ${v.version}`}
                  >
                    {shown?.version === v.version ? 'Hide' : 'Reveal'}
                  </button>
                  <button type="button" class="btn btn-small" onClick={() => restore(v.version)} aria-label={`Restore version ${v.version}`}>
                    Restore
                  </button>
                </span>
              </li>
            ))}
          </ul>
          {shown && (
            <div class="revealed history-revealed">
              <p class="muted small">
                Version {shown.version}, hidden again in {secondsLeft} s
              </p>
              <pre class="secret-value">{shown.text}</pre>
              <CopyButton value={shown.text} what={`Version ${shown.version} copied`} />
            </div>
          )}
          {target.kind === 'envfile' && <EnvDiff versions={versions.data} revealText={revealText} revealCurrent={target.revealCurrent} />}
        </>
      )}
    </Modal>
  )
}

// ---- env file line diff ----

interface DiffLine {
  change: 'added' | 'removed' | 'changed' | 'same'
  name: string
  before?: string
  after?: string
}

/** KEY=value lines by name (comments and blank lines left out; a later line wins). */
function envLines(text: string): Map<string, string> {
  const lines = new Map<string, string>()
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim()
    if (!line || line.startsWith('#')) continue
    const at = line.indexOf('=')
    const name = (at < 0 ? line : line.slice(0, at)).replace(/^export\s+/, '').trim()
    lines.set(name, at < 0 ? '' : line.slice(at + 1))
  }
  return lines
}

export function diffEnv(before: string, after: string): DiffLine[] {
  const a = envLines(before)
  const b = envLines(after)
  const out: DiffLine[] = []
  for (const [name, value] of a) {
    if (!b.has(name)) out.push({ change: 'removed', name, before: value })
    else out.push({ change: b.get(name) === value ? 'same' : 'changed', name, before: value, after: b.get(name) })
  }
  for (const [name, value] of b) if (!a.has(name)) out.push({ change: 'added', name, after: value })
  return out
}

const SIGN = { added: '+', removed: '−', changed: '~', same: ' ' } as const

/** One end of the comparison: a labelled choice of the current text or a version. */
function VersionSelect(props: { label: string; ariaLabel: string; options: { value: string; label: string }[]; value: string; onChange(value: string): void }) {
  return (
    <label>
      {props.label}{' '}
      <select value={props.value} onChange={(event) => props.onChange(event.currentTarget.value)} aria-label={props.ariaLabel}>
        {props.options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    </label>
  )
}

function EnvDiff(props: { versions: Version[]; revealText(version: number): Promise<string>; revealCurrent?: () => Promise<string> }) {
  const options = [
    ...(props.revealCurrent ? [{ value: 'current', label: 'Current' }] : []),
    ...props.versions.map((v) => ({ value: String(v.version), label: `Version ${v.version}` })),
  ]
  const [from, setFrom] = useState(props.versions[0] ? String(props.versions[0].version) : '')
  const [to, setTo] = useState(options[0]?.value ?? '')
  const [lines, setLines] = useState<DiffLine[] | null>(null)
  const [withValues, setWithValues] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const text = (which: string) => (which === 'current' ? props.revealCurrent!() : props.revealText(Number(which)))

  async function compare() {
    setError(null)
    setWithValues(false)
    try {
      const [before, after] = await Promise.all([text(from), text(to)])
      setLines(diffEnv(before, after))
    } catch (failure) {
      setError(errorMessage(failure))
    }
  }

  async function showValues() {
    if (withValues) return setWithValues(false)
    if (await confirmAction('Show the values of both versions on screen?', 'Show values')) setWithValues(true)
  }

  return (
    <div class="history-diff">
      <h3>Compare two versions</h3>
      <div class="diff-controls">
        <VersionSelect label="From" ariaLabel="Compare from" options={options} value={from} onChange={setFrom} />
        <VersionSelect label="to" ariaLabel="Compare to" options={options} value={to} onChange={setTo} />
        <button type="button" class="btn btn-small" onClick={compare}>
          Compare
        </button>
        {lines && (
          <button type="button" class="btn btn-small" onClick={showValues} aria-pressed={withValues}>
            {withValues ? 'Hide values' : 'Show values'}
          </button>
        )}
      </div>
      {error && <p class="error-text">{error}</p>}
      {lines &&
        (lines.length === 0 ? (
          <p class="muted">Both are empty.</p>
        ) : (
          <pre class="env-diff" aria-label="Differences">
            {lines.map((line) => (
              <div key={line.name} class={`diff-line diff-${line.change}`} data-change={line.change}>
                {SIGN[line.change]} {line.name}
                {withValues && line.change === 'changed' && `=${line.before} → ${line.after}`}
                {withValues && line.change === 'removed' && `=${line.before}`}
                {withValues && (line.change === 'added' || line.change === 'same') && `=${line.after}`}
              </div>
            ))}
          </pre>
        ))}
    </div>
  )
}

/** A badge for an entry's or token's due status; nothing when all is well. */
export function DueBadge(props: { status?: string | null; expiresAt?: string | null }) {
  const status = props.status
  if (!status || status === 'ok') return null
  const label = status === 'expired' ? 'expired' : status === 'rotation_due' ? 'rotate now' : 'due soon'
  const title = props.expiresAt ? `Expires ${formatDate(props.expiresAt)}` : undefined
  return (
    <span class={`badge badge-due badge-${status}`} data-due={status} title={title}>
      {label}
    </span>
  )
}
