// The dashboard's "Needs attention" card: entries and 2FA tokens that have expired, are
// due for rotation, or will be within 30 days.
import { api, type Entry, type TwoFactorToken } from '../api'
import { formatDate, Link, Loading, useLoad } from '../ui'
import { DueBadge } from './history'

type Due = { dueStatus?: string; expiresAt?: string | null; rotatedAt?: string | null; rotateEveryDays?: number | null; createdAt: string }

/** When the item is due (expiry or rotation, whichever comes first). */
function dueAt(item: Due): string | null {
  const rotation = item.rotateEveryDays ? Date.parse(item.rotatedAt ?? item.createdAt) + item.rotateEveryDays * 86_400_000 : null
  const expiry = item.expiresAt ? Date.parse(item.expiresAt) : null
  const at = [rotation, expiry].filter((t): t is number => t !== null)
  return at.length ? new Date(Math.min(...at)).toISOString() : null
}

export function NeedsAttentionCard() {
  const due = useLoad(async () => {
    const [entries, tokens] = await Promise.all([api<(Entry & Due)[]>('GET', '/api/entries?due=30'), api<(TwoFactorToken & Due)[]>('GET', '/api/2fa')])
    return [
      ...entries.map((e) => ({ id: e.id, name: e.name, where: e.category?.name ?? '', href: '/keys', item: e })),
      ...tokens.filter((t) => t.dueStatus && t.dueStatus !== 'ok').map((t) => ({ id: t.id, name: t.service, where: t.accountName, href: '/2fa', item: t })),
    ].sort((a, b) => (dueAt(a.item) ?? '').localeCompare(dueAt(b.item) ?? ''))
  })
  return (
    <div class="card needs-attention" aria-labelledby="needs-attention-title">
      <h2 id="needs-attention-title">Needs attention</h2>
      {!due.data ? (
        <Loading error={due.error} />
      ) : due.data.length === 0 ? (
        <p class="muted">Nothing expires or is due for rotation in the next 30 days.</p>
      ) : (
        <ul class="list">
          {due.data.map((row) => (
            <li key={row.id} class="list-row" data-attention={row.name}>
              <span class="grow">
                <Link href={row.href}>
                  <strong>{row.name}</strong>
                </Link>{' '}
                <span class="muted">· {row.where}</span>
              </span>
              <DueBadge status={row.item.dueStatus ?? 'due_soon'} expiresAt={row.item.expiresAt} />
              <span class="muted small">{formatDate(dueAt(row.item))}</span>
            </li>
          ))}
        </ul>
      )}
    </div>
  )
}
