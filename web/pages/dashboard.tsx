// Dashboard: totals as cards, two hand-drawn SVG bar charts, the most recently changed entries.
import { api, ENVIRONMENTS, type Entry, type Stats } from '../api'
import { EnvBadge, Icon, Link, Loading, relativeTime, useLoad } from '../ui'
import { projectPath } from './projects'
import { NeedsAttentionCard } from '../components/needs-attention'
import { RecentActivityCard, SecondStepLockNotice } from './activity'

interface Bar {
  label: string
  value: number
  tone: string
}

/** Horizontal bars in an SVG; colours come from CSS classes (no inline styles under the CSP). */
export function BarChart(props: { title: string; bars: Bar[] }) {
  const max = Math.max(1, ...props.bars.map((bar) => bar.value))
  const rowHeight = 30
  const labelWidth = 96
  const chartWidth = 200
  const height = props.bars.length * rowHeight
  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      <svg viewBox={`0 0 ${labelWidth + chartWidth + 40} ${height}`} role="img" aria-label={props.title}>
        {props.bars.map((bar, index) => {
          const y = index * rowHeight
          const width = Math.max(bar.value > 0 ? 3 : 0, (bar.value / max) * chartWidth)
          return (
            <g key={bar.label}>
              <text x={labelWidth - 8} y={y + rowHeight / 2 + 4} text-anchor="end" class="chart-label">
                {bar.label}
              </text>
              <rect x={labelWidth} y={y + 6} width={chartWidth} height={rowHeight - 12} rx="4" class="chart-track" />
              <rect x={labelWidth} y={y + 6} width={width} height={rowHeight - 12} rx="4" class={`chart-bar tone-${bar.tone}`} />
              <text x={labelWidth + chartWidth + 8} y={y + rowHeight / 2 + 4} class="chart-value">
                {bar.value}
              </text>
            </g>
          )
        })}
      </svg>
    </figure>
  )
}

export function DashboardPage() {
  const stats = useLoad(() => api<Stats>('GET', '/api/stats'))
  const entries = useLoad(() => api<Entry[]>('GET', '/api/entries'))
  const recent = [...(entries.data ?? [])].sort((a, b) => b.updatedAt.localeCompare(a.updatedAt)).slice(0, 6)
  const s = stats.data
  return (
    <section>
      <h1>Dashboard</h1>
      <SecondStepLockNotice />
      {s && s.totalEntries === 0 && s.totalCategories === 0 && (
        <div class="card welcome stack">
          <h2 class="empty-title">Your vault is empty</h2>
          <p>
            The quickest start: paste a project's <code>.env</code> file (or JSON, YAML) into Import. The vault files each key under a category and keeps the
            values encrypted; only the key names are used to suggest categories.
          </p>
          <div class="actions actions-start">
            <Link href="/import" class="btn btn-primary">
              Import a config
            </Link>
            <Link href="/keys" class="btn">
              Add keys by hand
            </Link>
            <Link href="/2fa" class="btn">
              Add a 2FA token
            </Link>
          </div>
        </div>
      )}
      {!s ? (
        <Loading error={stats.error} />
      ) : (
        <>
          <div class="cards">
            <Link href="/keys" class="card stat">
              <span class="stat-value">{s.totalCategories}</span>
              <span class="stat-label">Categories</span>
            </Link>
            <Link href="/keys" class="card stat">
              <span class="stat-value">{s.totalEntries}</span>
              <span class="stat-label">Entries</span>
            </Link>
            <Link href="/2fa" class="card stat">
              <span class="stat-value">{s.total2fa}</span>
              <span class="stat-label">2FA tokens</span>
            </Link>
          </div>
          <div class="charts">
            <div class="card">
              <BarChart
                title="Entries by key type"
                bars={(['simple', 'group', 'ssh', 'json'] as const).map((type, index) => ({
                  label: type,
                  value: s.byKeyType[type] ?? 0,
                  tone: String(index + 1),
                }))}
              />
            </div>
            <div class="card">
              <BarChart title="Entries by environment" bars={ENVIRONMENTS.map((env) => ({ label: env, value: s.byEnvironment[env] ?? 0, tone: env }))} />
            </div>
          </div>
        </>
      )}
      <NeedsAttentionCard />
      <RecentActivityCard />
      <h2>Recent entries</h2>
      {!entries.data ? (
        <Loading error={entries.error} />
      ) : recent.length === 0 ? (
        <p class="muted">
          Nothing yet. <Link href="/keys">Add your first key</Link> or <Link href="/import">import a config</Link>.
        </p>
      ) : (
        <ul class="list card">
          {recent.map((entry) => (
            <li key={entry.id} class="list-row">
              <Icon slug={entry.category?.icon} name={entry.category?.name ?? entry.name} size="sm" />
              <span class="grow">
                <Link href={projectPath(entry.name)} class="project-link">
                  <strong>{entry.name}</strong>
                </Link>{' '}
                <span class="muted">· {entry.category?.name}</span>
              </span>
              <EnvBadge environment={entry.environment} />
              <span class="muted small">{relativeTime(entry.updatedAt)}</span>
            </li>
          ))}
        </ul>
      )}
    </section>
  )
}
