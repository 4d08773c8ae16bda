// Settings: the account, and single sign-on linked to it. Linking is a form POST, so
// the browser itself follows the redirect to the identity provider and comes back here.
import { api, currentUser, reauthPrompt } from '../api'
import { confirmAction, Loading, toast, toastError, useLoad } from '../ui'
import { SecuritySettings } from './settings-security'
import { NotificationSettingsCard } from '../components/notification-settings'

interface LinkStatus {
  enabled: boolean
  name: string | null
  linked: boolean
  canUnlink: boolean
}

export function SettingsPage() {
  const status = useLoad(() => api<LinkStatus>('GET', '/api/auth/oidc/link'))
  const user = currentUser.value
  const provider = status.data?.name ?? 'single sign-on'
  async function unlink() {
    if (!(await confirmAction(`Unlink ${provider} from this account? You will sign in with your password.`, 'Unlink'))) return
    try {
      await api('DELETE', '/api/auth/oidc/link')
      toast('Single sign-on unlinked')
      status.reload()
    } catch (error) {
      toastError(error)
    }
  }
  // Linking outlives the session: a stale proof is renewed before the form leaves.
  async function link(event: Event) {
    event.preventDefault()
    const form = event.currentTarget as HTMLFormElement
    try {
      const status = await api<{ fresh: boolean }>('GET', '/api/auth/reauth')
      if (!status.fresh && !(await reauthPrompt.ask?.('Confirm it is you to link single sign-on'))) return
      form.submit()
    } catch (error) {
      toastError(error)
    }
  }
  return (
    <section>
      <h1>Settings</h1>
      <div class="card">
        <h2>Account</h2>
        <p class="muted">{user?.email}</p>
      </div>
      <div class="card">
        <h2>Single sign-on</h2>
        {!status.data ? (
          <Loading error={status.error} />
        ) : !status.data.enabled ? (
          <p class="muted">Single sign-on is not configured on this vault.</p>
        ) : status.data.linked ? (
          <>
            <p>Linked to {provider}: you can sign in with it.</p>
            {status.data.canUnlink ? (
              <button type="button" class="btn" onClick={unlink}>
                Unlink {provider}
              </button>
            ) : (
              <p class="muted">It is the only way into this account, so it cannot be unlinked.</p>
            )}
          </>
        ) : (
          <form method="post" action="/api/auth/oidc/link" onSubmit={link}>
            <p class="muted">Sign in at {provider} once to link it; every other session of this account then ends.</p>
            <button type="submit" class="btn btn-primary">
              Link single sign-on
            </button>
          </form>
        )}
      </div>
      <SecuritySettings />
      <NotificationSettingsCard />
    </section>
  )
}
