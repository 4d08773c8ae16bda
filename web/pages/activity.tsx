// Activity: the audit log, newest first, filtered by action, access key and date;
// "last used from" for an access key's row; the dashboard's card of the last 7 days.
import { useState } from 'preact/hooks'
import { api, type AccessKey, type EnvProject, type Entry } from '../api'
import { keyLabel, variableOf } from '../components/key-names'
import type { TrashItem } from './trash'
import { AUDIT_ACTIONS, SECRET_READS } from '../../src/modules/audit/actions'
import { Field, formatDate, inputValue, Link, Loading, relativeTime, toastError, useLoad } from '../ui'

export interface AuditEvent {
  id: string
  time: string
  action: string
  outcome: 'ok' | 'denied' | 'failed'
  actor: { type: 'session' | 'access-key' | 'anonymous' | 'device-login'; id: string | null; name: string | null }
  clientAddress: string
  userAgent: string | null
  records: { kind: string; id: string; name: string | null }[]
  details: Record<string, unknown>
}
interface AuditPage {
  items: AuditEvent[]
  nextCursor: string | null
  /** The hash of the log's last line (keep it elsewhere: audit-verify --expect-last). */
  head?: string
  /** What the server found opening the log in this run, when it no longer reached its anchor. */
  chainBroken?: { problem: string; line: number; message: string } | null
}

/** The log no longer reached its anchor when the server opened it: said in red, with what to run. */
function ChainBrokenNote(props: { message: string }) {
  return (
    <p class="card error-text" role="alert" data-chain-broken>
      <strong>The audit log's chain is broken:</strong> {props.message}. Lines may have been removed or rewritten; run <code>svc-vault audit-verify</code> (or{' '}
      <code>bun run audit-verify</code>) on the server and compare with a copy kept elsewhere.
    </p>
  )
}

const DAY_MS = 86_400_000

function actorLabel(actor: AuditEvent['actor']): string {
  if (actor.type === 'access-key') return `key “${actor.name ?? actor.id}”`
  if (actor.type === 'session') return `session ${actor.id}`
  if (actor.type === 'device-login') return `device sign-in “${actor.name ?? ''}”`
  return 'not signed in'
}

const KIND_WORDS: Record<string, string> = {
  entry: 'an entry',
  category: 'a category',
  twofa: 'a 2FA token',
  envproject: 'an env project',
  envfile: 'an env file',
  accesskey: 'an access key',
  passkey: 'a passkey',
  session: 'a session',
}
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b ?/g

/**
 * Names for the records the log knows only by project ("blog") or by id: an entry as
 * "OPENAI_API_KEY of blog (production)", from the entries and the trash as they are now.
 */
async function loadRecordNames(): Promise<Map<string, string>> {
  const [entries, trash, envs] = await Promise.all([
    api<Entry[]>('GET', '/api/entries').catch(() => []),
    api<TrashItem[]>('GET', '/api/trash').catch(() => []),
    api<{ data: EnvProject[] }>('GET', '/api/envs').catch(() => ({ data: [] as EnvProject[] })),
  ])
  const names = new Map<string, string>()
  for (const project of envs.data) names.set(project.id, `env project ${project.name}`)
  for (const entry of entries) names.set(entry.id, keyLabel(variableOf(entry.category), entry.name, entry.environment))
  for (const item of trash) if (item.label) names.set(item.recordId, item.label)
  return names
}

/** What the event touched, in words: record names (never a raw id where a name is known), or what the details say. */
function subject(event: AuditEvent, known: Map<string, string> = new Map()): string {
  const records = event.records.filter((r) => r.kind !== 'user')
  const named = records.map((r) => {
    if (r.kind === 'trash') {
      // "entry <id> (blog)": the item's kind and its record's name, without the id.
      const recordId = /[0-9a-f-]{36}/.exec(r.name ?? '')?.[0]
      return (recordId && known.get(recordId)) || (r.name ?? 'trash item').replace(UUID, '')
    }
    // A record the log kept without a name, and that is gone now: its kind, never a bare id.
    return known.get(r.id) ?? r.name ?? KIND_WORDS[r.kind] ?? r.kind
  })
  // A restored item and its record would say the same twice.
  const names = named.filter((name, index) => named.indexOf(name) === index)
  const parts: string[] = []
  if (names.length > 0) parts.push(names.slice(0, 4).join(', ') + (names.length > 4 ? ` and ${names.length - 4} more` : ''))
  const d = event.details
  if (typeof d.method === 'string') parts.push(`via ${d.method}`)
  // Failed sign-ins counted rather than recorded one by one: how many, from where, when.
  if (d.summary === true && typeof d.count === 'number') {
    const addresses = Array.isArray(d.addresses) ? d.addresses.map(String) : []
    const others = typeof d.fromOtherAddresses === 'number' ? d.fromOtherAddresses : 0
    parts.push(`${d.count} attempt${d.count === 1 ? '' : 's'}${typeof d.reason === 'string' ? ` (${d.reason.replace(/_/g, ' ')})` : ''}`)
    if (addresses.length > 0)
      parts.push(
        `from ${addresses.slice(0, 3).join(', ')}${addresses.length > 3 ? ` and ${addresses.length - 3} more` : ''}${others > 0 ? ` (+${others} from others)` : ''}`,
      )
    if (typeof d.firstAt === 'string' && typeof d.lastAt === 'string') parts.push(`${formatDate(d.firstAt)} – ${formatDate(d.lastAt)}`)
    return parts.join(' · ')
  }
  if (typeof d.lockedUntil === 'string') parts.push(`locked until ${formatDate(d.lockedUntil)}`)
  if (typeof d.count === 'number') parts.push(`${d.count} value${d.count === 1 ? '' : 's'}`)
  if (typeof d.required === 'string') parts.push(`needed ${d.required}`)
  if (typeof d.email === 'string') parts.push(d.email)
  return parts.join(' · ')
}

function query(filters: { action: string; actor: string; since: string; until: string }, cursor: string | null): string {
  const params = new URLSearchParams({ limit: '50' })
  if (filters.action) params.set('action', filters.action)
  if (filters.actor) params.set('actor', filters.actor)
  // Dates are whole local days: from the start of `since` to the end of `until`.
  if (filters.since) params.set('since', new Date(`${filters.since}T00:00:00`).toISOString())
  if (filters.until) params.set('until', new Date(new Date(`${filters.until}T00:00:00`).getTime() + DAY_MS).toISOString())
  if (cursor) params.set('cursor', cursor)
  return `/api/audit?${params}`
}

export function ActivityPage() {
  const initial = new URLSearchParams(location.search)
  const [filters, setFilters] = useState({ action: initial.get('action') ?? '', actor: initial.get('actor') ?? '', since: '', until: '' })
  const keys = useLoad(() => api<AccessKey[]>('GET', '/api/access-keys'))
  const recordNames = useLoad(loadRecordNames)
  const [more, setMore] = useState<AuditEvent[]>([])
  const [cursor, setCursor] = useState<string | null>(null)
  const page = useLoad(async () => {
    const answer = await api<AuditPage>('GET', query(filters, null))
    setMore([])
    setCursor(answer.nextCursor)
    return answer
  }, [filters.action, filters.actor, filters.since, filters.until])
  const set = (name: keyof typeof filters) => (event: Parameters<typeof inputValue>[0]) => setFilters({ ...filters, [name]: inputValue(event) })
  const loadMore = async () => {
    try {
      const answer = await api<AuditPage>('GET', query(filters, cursor))
      setMore([...more, ...answer.items])
      setCursor(answer.nextCursor)
    } catch (failure) {
      toastError(failure)
    }
  }
  const events = [...(page.data?.items ?? []), ...more]
  return (
    <section>
      <h1>Activity</h1>
      <p class="muted">
        Every sign-in, every read of a secret and every change, newest first. The log is hash-chained: <code>svc-vault audit-verify</code> (or{' '}
        <code>bun run audit-verify</code>) on the server shows whether a line was edited or removed.
      </p>
      {page.data?.chainBroken && <ChainBrokenNote message={page.data.chainBroken.message} />}
      {page.data?.head && (
        <p class="muted small">
          Last line's hash: <code data-audit-head>{page.data.head}</code> (keep it elsewhere; <code>audit-verify --expect-last</code> checks the log still
          reaches it)
        </p>
      )}
      <form class="card activity-filters" onSubmit={(event) => event.preventDefault()}>
        <Field label="Action">
          <select name="action" value={filters.action} onChange={set('action')}>
            <option value="">All actions</option>
            {AUDIT_ACTIONS.map((action) => (
              <option key={action} value={action}>
                {action}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Key">
          <select name="actor" value={filters.actor} onChange={set('actor')}>
            <option value="">Anyone</option>
            <option value="session">Signed-in sessions</option>
            {(keys.data ?? []).map((key) => (
              <option key={key.id} value={key.id}>
                {key.name}
              </option>
            ))}
            {filters.actor && filters.actor !== 'session' && !(keys.data ?? []).some((key) => key.id === filters.actor) && (
              <option value={filters.actor}>A revoked key</option>
            )}
          </select>
        </Field>
        <Field label="From">
          <input type="date" name="since" value={filters.since} onInput={set('since')} />
        </Field>
        <Field label="To">
          <input type="date" name="until" value={filters.until} onInput={set('until')} />
        </Field>
      </form>
      {!page.data ? (
        <Loading error={page.error} />
      ) : events.length === 0 ? (
        <p class="muted">No activity matches.</p>
      ) : (
        <>
          <ul class="list card activity-list">
            {events.map((event) => (
              <li key={event.id} class="list-row activity-event" data-action={event.action}>
                <span class={`badge ${event.outcome === 'ok' ? 'badge-none' : 'badge-production'}`}>{event.outcome}</span>
                <span class="grow">
                  <strong>{event.action}</strong> <span class="muted">{subject(event, recordNames.data)}</span>
                  <br />
                  <span class="muted small">
                    {actorLabel(event.actor)} · from {event.clientAddress}
                    {event.userAgent ? ` · ${event.userAgent.slice(0, 60)}` : ''}
                  </span>
                </span>
                <time class="muted small" dateTime={event.time} title={event.time}>
                  {formatDate(event.time)}
                </time>
              </li>
            ))}
          </ul>
          {cursor && (
            <div class="actions actions-start">
              <button type="button" class="btn" onClick={loadMore}>
                Load older
              </button>
            </div>
          )}
        </>
      )}
    </section>
  )
}

/** "last used from <address>" on an access key's row, with a link to its events. */
export function KeyLastUsedFrom(props: { keyId: string }) {
  const last = useLoad(() => api<AuditPage>('GET', `/api/audit?actor=${encodeURIComponent(props.keyId)}&limit=1`), [props.keyId])
  const event = last.data?.items[0]
  return (
    <p class="muted small key-activity">
      {event ? `Last used from ${event.clientAddress} (${relativeTime(event.time)}, ${event.action})` : last.data ? 'No recorded use yet' : ''}
      {last.data && (
        <>
          {' · '}
          <Link href={`/activity?actor=${encodeURIComponent(props.keyId)}`}>Its events</Link>
        </>
      )}
    </p>
  )
}

/** The dashboard's card: failed sign-ins and secret reads of the last 7 days. */
export function RecentActivityCard() {
  const [chainBroken, setChainBroken] = useState<string | null>(null)
  const week = useLoad(async () => {
    const since = new Date(Date.now() - 7 * DAY_MS).toISOString()
    const events: AuditEvent[] = []
    let cursor: string | null = null
    // The newest chain.broken event, however old: a broken log stays broken until an operator looks.
    const broken = await api<AuditPage>('GET', '/api/audit?action=chain.broken&limit=1')
    const found = broken.chainBroken?.message ?? broken.items[0]?.details.message
    setChainBroken(typeof found === 'string' ? found : null)
    // At most a few pages: the card counts, the Activity page lists.
    for (let page = 0; page < 4; page++) {
      const answer: AuditPage = await api<AuditPage>('GET', `/api/audit?limit=500&since=${encodeURIComponent(since)}${cursor ? `&cursor=${cursor}` : ''}`)
      events.push(...answer.items)
      cursor = answer.nextCursor
      if (!cursor) break
    }
    return events
  })
  const events = week.data
  const failed = events?.filter((e) => e.action === 'auth.login_failed') ?? []
  // A summary event stands for `details.count` attempts (throttled, or past the log's budget).
  const failedCount = failed.reduce((sum, e) => sum + (e.details.summary === true && typeof e.details.count === 'number' ? e.details.count : 1), 0)
  const reads = events?.filter((e) => (SECRET_READS as readonly string[]).includes(e.action)) ?? []
  return (
    <div class="card recent-activity">
      <h2>Last 7 days</h2>
      {chainBroken && (
        <p class="error-text" role="alert" data-chain-broken>
          <Link href="/activity?action=chain.broken">The audit log's chain is broken</Link>: {chainBroken}
        </p>
      )}
      {!events ? (
        <Loading error={week.error} />
      ) : (
        <ul class="list">
          <li class="list-row" data-count="failed-sign-ins">
            <span class="grow">
              <Link href="/activity?action=auth.login_failed">Failed sign-ins</Link>
              {failed[0] && (
                <span class="muted small">
                  {' '}
                  · last from {failed[0].clientAddress}, {relativeTime(failed[0].time)}
                </span>
              )}
            </span>
            <strong class="activity-count">{failedCount}</strong>
          </li>
          <li class="list-row" data-count="secret-reads">
            <span class="grow">
              <Link href="/activity">Secret reads</Link>
              <span class="muted small"> · reveals, exports, extracts</span>
            </span>
            <strong class="activity-count">{reads.length}</strong>
          </li>
        </ul>
      )}
    </div>
  )
}

/**
 * The dashboard's warning when the account's second step was locked in the last 7 days:
 * 20 wrong codes after the right password mean someone has the password.
 */
export function SecondStepLockNotice() {
  const locks = useLoad(async () => {
    const since = new Date(Date.now() - 7 * DAY_MS).toISOString()
    return (await api<AuditPage>('GET', `/api/audit?action=auth.twofa_locked&limit=20&since=${encodeURIComponent(since)}`)).items
  })
  const last = locks.data?.[0]
  if (!last) return null
  const until = typeof last.details.lockedUntil === 'string' ? last.details.lockedUntil : null
  const stillLocked = until !== null && Date.parse(until) > Date.now()
  return (
    <div class="card second-step-locked" role="alert">
      <h2>Two-factor sign-in was locked</h2>
      <p>
        Someone signed in with your password and then tried wrong two-factor codes: after 20 wrong codes within a day the second step locked for 15 minutes (
        {locks.data!.length === 1 ? 'once' : `${locks.data!.length} times`} in the last 7 days, last {relativeTime(last.time)} from {last.clientAddress}
        {stillLocked ? `, locked until ${formatDate(until)}` : ''}). Change your password now.
      </p>
      <div class="actions actions-start">
        <Link href="/settings" class="btn btn-primary">
          Change the password
        </Link>
        <Link href="/activity?action=auth.twofa_locked">See the events</Link>
      </div>
    </div>
  )
}
