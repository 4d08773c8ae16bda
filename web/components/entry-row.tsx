// One entry of the Keys page: reveal (hidden again after 30 seconds), copy, edit, History and
// delete, each named for screen readers by variable, project and environment.
import { useState } from 'preact/hooks'
import { api, type Category, type Entry, type RevealedEntry } from '../api'
import { confirmAction, CopyButton, EnvBadge, toast, toastError, useRevealTimer } from '../ui'
import { DueBadge, HistoryPanel } from './history'
import { entryLabel } from './key-names'
import { writeProps } from '../vault'

export function EntryRow(props: { entry: Entry; category: Category; onEdit(): void; onChanged(): void }) {
  const { entry } = props
  // Which entry a button acts on, for screen readers: "Reveal OPENAI_API_KEY of my-blog (production)".
  const label = entryLabel(entry, props.category)
  const about = `of ${entry.name}${entry.environment ? ` (${entry.environment})` : ''}`
  // The plaintext lives only in this component's state, and only while it is shown.
  const [revealed, setRevealed] = useState<RevealedEntry | null>(null)
  const hide = () => setRevealed(null)
  const secondsLeft = useRevealTimer(revealed !== null, hide)
  const [showHistory, setShowHistory] = useState(false)

  const reveal = async () => {
    if (revealed) return hide()
    try {
      setRevealed(await api<RevealedEntry>('POST', `/api/entries/${entry.id}/reveal`))
    } catch (error) {
      toastError(error)
    }
  }
  const remove = async () => {
    if (!(await confirmAction(`Delete ${label}? It goes to the trash, where it can be restored.`))) return
    try {
      await api('DELETE', `/api/entries/${entry.id}`)
      toast(`Deleted ${label}`)
      props.onChanged()
    } catch (error) {
      toastError(error)
    }
  }

  return (
    <li class="entry" data-entry={entry.name}>
      <div class="entry-line">
        <span class="grow entry-name">
          {props.category.envVarName && <code class="entry-variable">{props.category.envVarName}</code>} <strong>{entry.name}</strong>
          {entry.notes && <span class="muted small"> · {entry.notes}</span>}
        </span>
        <EnvBadge environment={entry.environment} />
        <DueBadge status={entry.dueStatus} expiresAt={entry.expiresAt} />
        <div class="row-actions">
          <button type="button" class="btn btn-small" onClick={reveal} aria-pressed={revealed !== null} aria-label={`${revealed ? 'Hide' : 'Reveal'} ${label}`}>
            {revealed ? 'Hide' : 'Reveal'}
          </button>
          <button type="button" class="btn btn-small" {...writeProps()} onClick={props.onEdit} aria-label={`Edit ${label}`}>
            Edit
          </button>
          <button type="button" class="btn btn-small" onClick={() => setShowHistory(true)} aria-label={`History of ${label}`}>
            History
          </button>
          <button type="button" class="btn btn-small btn-danger-quiet" {...writeProps()} onClick={remove} aria-label={`Delete ${label}`}>
            Delete
          </button>
        </div>
      </div>
      {revealed && (
        <div class="secret" aria-live="polite">
          {typeof revealed.value === 'string' ? (
            <div class="secret-row">
              <code class="secret-name">{props.category.envVarName}</code>
              <code class="secret-value">{revealed.value}</code>
              <CopyButton value={revealed.value} what={`${props.category.envVarName ?? 'Value'} copied`} ariaLabel={`Copy ${label}`} />
            </div>
          ) : (
            Object.entries(revealed.value).map(([field, value]) => (
              <div class="secret-row" key={field}>
                <code class="secret-name">{field}</code>
                <code class="secret-value">{value}</code>
                <CopyButton value={value} what={`${field} copied`} ariaLabel={`Copy ${field} ${about}`} />
              </div>
            ))
          )}
          <p class="muted small">Hides in {secondsLeft} s</p>
        </div>
      )}
      {showHistory && (
        <HistoryPanel
          target={{ title: label, base: `/api/entries/${entry.id}/versions`, kind: 'entry' }}
          onClose={() => setShowHistory(false)}
          onRestored={() => (hide(), props.onChanged())}
        />
      )}
    </li>
  )
}
