// The app shell: who is signed in, the navigation, and which page the path shows.
import { render } from 'preact'
import type { ComponentType } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { api, currentUser, sessionLost, type User } from './api'
import { DashboardPage } from './pages/dashboard'
import { EnvProjectPage, EnvProjectsPage } from './pages/envs'
import { ExportPage } from './pages/export'
import { KeysPage } from './pages/keys'
import { LoginPage } from './pages/login'
import { ProjectPage, ProjectsPage } from './pages/projects'
import { TwoFactorPage } from './pages/two-factor'
import { TrashPage } from './pages/trash'
import { currentPath, match, navigate } from './router'
import { ConfirmHost, forgetUnsavedWork, Link, Loading, okToLeave, toastError, Toasts } from './ui'
import { ReauthHost } from './components/reauth'
import { canWrite, currentVault, currentVaultId, restoreVault, setSharedVaults, sharedVaults, type SharedVault } from './vault'
import { VaultSwitcher } from './components/vault-switcher'
// Brings a signed-out visit of a `svc login` link back to /cli after sign-in.
import './cli-return'

// Pages one visits now and then are fetched when first shown: the first load stays small.
function lazyPage<P extends object>(load: () => Promise<ComponentType<P>>): ComponentType<P> {
  let loaded: ComponentType<P> | null = null
  return function LazyPage(props: P) {
    const [page, setPage] = useState(() => loaded)
    const [error, setError] = useState<string | null>(null)
    useEffect(() => {
      if (!page)
        load().then(
          (component) => setPage(() => (loaded = component)),
          () => setError('This page could not be loaded: reload to try again.'),
        )
    }, [])
    const Loaded = page
    return Loaded ? <Loaded {...props} /> : <Loading error={error} />
  }
}
const AccessKeysPage = lazyPage(() => import('./pages/access-keys').then((m) => m.AccessKeysPage))
const CliPage = lazyPage(() => import('./pages/cli').then((m) => m.CliPage))
const ActivityPage = lazyPage(() => import('./pages/activity').then((m) => m.ActivityPage))
const ImportPage = lazyPage(() => import('./pages/import').then((m) => m.ImportPage))
const SettingsPage = lazyPage(() => import('./pages/settings').then((m) => m.SettingsPage))
const VaultsPage = lazyPage(() => import('./pages/vaults').then((m) => m.VaultsPage))
const VaultSettingsPage = lazyPage(() => import('./pages/vaults').then((m) => m.VaultSettingsPage))
const InvitePage = lazyPage(() => import('./pages/vaults').then((m) => m.InvitePage))

const NAV = [
  { href: '/', label: 'Dashboard' },
  { href: '/projects', label: 'Projects' },
  { href: '/keys', label: 'Keys' },
  { href: '/2fa', label: '2FA' },
  { href: '/envs', label: 'Env projects' },
  { href: '/import', label: 'Import' },
  { href: '/access-keys', label: 'Access keys' },
  { href: '/export', label: 'Export' },
  { href: '/trash', label: 'Trash' },
  { href: '/activity', label: 'Activity' },
  { href: '/settings', label: 'Settings' },
]

function Page(props: { path: string }) {
  const { path } = props
  let params: Record<string, string> | null
  if (path === '/' || path === '') return <DashboardPage />
  if (match('/keys', path)) return <KeysPage />
  if (match('/projects', path)) return <ProjectsPage />
  if ((params = match('/projects/:name', path))) return <ProjectPage name={params.name} />
  if (match('/2fa', path)) return <TwoFactorPage />
  if (match('/envs', path)) return <EnvProjectsPage />
  if ((params = match('/envs/:id', path))) return <EnvProjectPage id={params.id} />
  if (match('/import', path)) return <ImportPage />
  if (match('/access-keys', path)) return <AccessKeysPage />
  if (match('/export', path)) return <ExportPage />
  if (match('/settings', path)) return <SettingsPage />
  if (match('/trash', path)) return <TrashPage />
  if (match('/cli', path)) return <CliPage />
  if (match('/activity', path.split('?')[0])) return <ActivityPage />
  if (match('/vaults', path)) return <VaultsPage />
  if ((params = match('/vaults/:id', path))) return <VaultSettingsPage id={params.id} />
  if ((params = match('/invite/:token', path))) return <InvitePage token={params.token} />
  return (
    <section>
      <h1>Not found</h1>
      <p>
        There is no page here. <Link href="/">Go to the dashboard</Link>.
      </p>
    </section>
  )
}

async function signOut() {
  if (!(await okToLeave())) return
  try {
    await api('POST', '/api/auth/logout')
  } catch (error) {
    toastError(error)
  }
  forgetUnsavedWork()
  sessionLost.value = false
  currentUser.value = null
  navigate('/login', true)
}

function Shell(props: { user: User; hidden: boolean }) {
  const path = currentPath.value
  // The stored vault choice is read before any page asks the API (this component is keyed by the user).
  useState(() => restoreVault(props.user.id))
  useEffect(() => {
    api<SharedVault[]>('GET', '/api/vaults').then(setSharedVaults, (error) => {
      setSharedVaults([])
      toastError(error)
    })
  }, [])
  const vaultId = currentVaultId.value
  // A stored shared vault waits for the list (it may be gone: then the personal vault).
  const ready = vaultId === null || sharedVaults.value !== null
  const viewer = !canWrite.value
  const section = (href: string) => (href === '/' ? path === '/' : path === href || path.startsWith(href + '/'))
  return (
    <div class="shell" hidden={props.hidden} {...{ inert: props.hidden }}>
      <header class="topbar">
        <Link href="/" class="brand">
          <span class="brand-mark" aria-hidden="true">
            ◆
          </span>{' '}
          svc-vault
        </Link>
        <VaultSwitcher />
        <div class="topbar-user">
          <span class="muted user-email">{props.user.email}</span>
          <button type="button" class="btn btn-small" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <nav class="nav" aria-label="Main">
        {NAV.filter((item) => !(viewer && item.href === '/import')).map((item) => (
          <Link key={item.href} href={item.href} class="nav-link" aria-current={section(item.href) ? 'page' : undefined}>
            {item.label}
          </Link>
        ))}
      </nav>
      <main class="content">
        {viewer && (
          <p class="notice" role="note">
            You are a viewer in {currentVault.value?.name}: you can read and reveal, not change anything.
          </p>
        )}
        {/* Keyed by the vault: switching loads the same page afresh from the other vault. */}
        {ready ? <Page key={vaultId ?? 'personal'} path={path} /> : <Loading />}
      </main>
    </div>
  )
}

function App() {
  const user = currentUser.value
  const path = currentPath.value
  useEffect(() => {
    // The server marks whether this browser has a session: no need to ask (and hear 401) when not.
    if (document.querySelector('meta[name="svc-session"]')?.getAttribute('content') === 'signed-out') {
      currentUser.value = null
      return
    }
    api<{ user: User }>('GET', '/api/auth/me').then(
      (answer) => (currentUser.value = answer.user),
      () => (currentUser.value = null),
    )
  }, [])
  const lost = sessionLost.value
  useEffect(() => {
    // An invite link opened signed out stays: its page offers to sign in or create an account.
    if (user === null && path !== '/login' && !path.startsWith('/invite/')) navigate('/login', true)
    if (user && path === '/login') navigate('/', true)
  }, [user, path])
  // A lost session keeps the page (and what was typed) mounted under the sign-in form; keyed by
  // the user, so signing in as someone else starts afresh.
  return (
    <>
      {user === undefined ? (
        <p class="muted boot">Loading…</p>
      ) : user === null ? (
        match('/invite/:token', path) ? (
          <Page path={path} />
        ) : (
          <LoginPage />
        )
      ) : (
        <>
          {lost && <LoginPage again={user} />}
          <Shell key={user.id} user={user} hidden={lost} />
        </>
      )}
      <ReauthHost />
      <ConfirmHost />
      <Toasts />
    </>
  )
}

render(<App />, document.getElementById('app')!)
