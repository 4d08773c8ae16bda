// The trash: what was deleted, when and by whom, until when it is kept; restore it, or
// purge one item or everything now.
import { api } from '../api'
import { confirmAction, formatDate, Loading, toast, toastError, useLoad } from '../ui'
import { writeProps } from '../vault'

export interface TrashItem {
  id: string
  kind: 'entry' | 'category' | 'twoFactor' | 'envProject' | 'envFile'
  name: string
  /** An entry as "OPENAI_API_KEY of blog (production)"; others as their name. */
  label: string
  recordId: string
  deletedAt: string
  deletedBy: string
  expiresAt: string
  contains: { categories: number; entries: number; twoFactor: number; envProjects: number; envFiles: number }
}

const KIND_LABEL: Record<TrashItem['kind'], string> = {
  entry: 'Entry',
  category: 'Category',
  twoFactor: '2FA token',
  envProject: 'Env project',
  envFile: 'Env file',
}

function extra(item: TrashItem): string {
  if (item.kind === 'category' && item.contains.entries > 0) return ` with ${item.contains.entries} ${item.contains.entries === 1 ? 'entry' : 'entries'}`
  if (item.kind === 'envProject' && item.contains.envFiles > 0) return ` with ${item.contains.envFiles} ${item.contains.envFiles === 1 ? 'file' : 'files'}`
  return ''
}

const by = (actor: string) => (actor === 'session' ? 'you' : actor.startsWith('key:') ? `access key “${actor.slice(4)}”` : actor)

export function TrashPage() {
  const items = useLoad(() => api<TrashItem[]>('GET', '/api/trash'))

  async function restore(item: TrashItem) {
    try {
      await api('POST', `/api/trash/${item.id}/restore`)
      toast(`Restored ${item.label}`)
      items.reload()
    } catch (error) {
      toastError(error)
    }
  }

  async function purge(item: TrashItem) {
    if (!(await confirmAction(`Delete “${item.label}”${extra(item)} for good? This cannot be undone.`, 'Delete for good'))) return
    try {
      await api('DELETE', `/api/trash/${item.id}`)
      toast(`Deleted ${item.label} for good`)
      items.reload()
    } catch (error) {
      toastError(error)
    }
  }

  async function empty() {
    if (!(await confirmAction('Delete everything in the trash for good? This cannot be undone.', 'Empty trash'))) return
    try {
      await api('DELETE', '/api/trash')
      toast('Trash emptied')
      items.reload()
    } catch (error) {
      toastError(error)
    }
  }

  return (
    <section>
      <div class="page-head">
        <h1>Trash</h1>
        {items.data && items.data.length > 0 && (
          <button type="button" class="btn btn-danger-quiet" onClick={empty}>
            Empty trash
          </button>
        )}
      </div>
      <p class="muted">Deleted items stay here for a while, then are deleted for good.</p>
      {!items.data ? (
        <Loading error={items.error} />
      ) : items.data.length === 0 ? (
        <p class="muted trash-empty">The trash is empty.</p>
      ) : (
        <ul class="list card trash-list">
          {items.data.map((item) => (
            <li key={item.id} class="list-row trash-item" data-trash={item.name}>
              <span class="grow">
                <span class="badge badge-none">{KIND_LABEL[item.kind]}</span> <strong>{item.label}</strong>
                <span class="muted">{extra(item)}</span>
                <br />
                <span class="muted small">
                  Deleted {formatDate(item.deletedAt)} by {by(item.deletedBy)} · kept until {formatDate(item.expiresAt)}
                </span>
              </span>
              <span class="row-actions">
                <button type="button" class="btn btn-small" {...writeProps()} onClick={() => restore(item)} aria-label={`Restore ${item.label}`}>
                  Restore
                </button>
                <button
                  type="button"
                  class="btn btn-small btn-danger-quiet"
                  {...writeProps()}
                  onClick={() => purge(item)}
                  aria-label={`Delete ${item.label} for good`}
                >
                  Delete for good
                </button>
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  )
}
