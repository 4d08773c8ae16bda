// Shared vaults: the list (with invites for you and creating one), a vault's settings (members,
// invites, what to rotate after a removal), and an invite link's page. Loaded lazily (main.tsx).
import { useState } from 'preact/hooks'
import { api, ApiError, currentUser, type User } from '../api'
import { LoginCard } from '../components/login-card'
import { navigate } from '../router'
import { confirmAction, CopyButton, Field, FormError, formatDate, inputValue, Link, Loading, toast, toastError, useLoad, useSubmission } from '../ui'
import { chooseVault, currentVaultId, setSharedVaults, sharedVaults, type SharedVault, type VaultRole } from '../vault'
import { LoginPage } from './login'

const ROLES: VaultRole[] = ['viewer', 'editor', 'admin']
const ROLE_NOTE: Record<VaultRole, string> = {
  viewer: 'reads and reveals',
  editor: 'also creates, changes, deletes',
  admin: 'also manages members, invites and the vault',
}

interface Member {
  userId: string
  email: string
  name: string | null
  role: VaultRole
  addedAt: string
}
interface Invite {
  id: string
  role: VaultRole
  expiresAt: string
  email?: string | null
  createdAt?: string
  vaultId?: string
  vaultName?: string
  vault?: { id: string; name: string }
}
interface CreatedInvite extends Invite {
  token: string
  url: string
}
interface RotationItem {
  kind: string
  id: string
  name: string
  revealedBy: unknown
  since: string
  rotatedAt: string | null
}

/** Reads the vault list again (after a create, an accept, a leave). */
async function reloadVaults(): Promise<SharedVault[]> {
  const list = await api<SharedVault[]>('GET', '/api/vaults')
  setSharedVaults(list)
  return list
}

/** The vault an accept answered (its shape is the invites API's): its id, if it names one. */
function acceptedVaultId(answer: unknown): string | null {
  if (!answer || typeof answer !== 'object') return null
  const a = answer as { vaultId?: unknown; id?: unknown; vault?: { id?: unknown } }
  const id = a.vaultId ?? a.vault?.id ?? a.id
  return typeof id === 'string' ? id : null
}

async function enterAccepted(answer: unknown, before: SharedVault[]): Promise<void> {
  const list = await reloadVaults()
  const named = acceptedVaultId(answer)
  const joined = list.find((vault) => vault.id === named) ?? list.find((vault) => !before.some((old) => old.id === vault.id))
  if (joined) {
    chooseVault(joined.id)
    toast(`You joined ${joined.name} as ${joined.role}`)
  } else toast('Invite accepted')
  navigate('/', true)
}

/** `/vaults`: your shared vaults, invites addressed to you, and a new vault. */
export function VaultsPage() {
  const list = sharedVaults.value
  const invites = useLoad(() =>
    api<Invite[] | { data: Invite[] }>('GET', '/api/invites').then(
      (answer) => (Array.isArray(answer) ? answer : answer.data),
      // The invites API may be absent on this server: no invites then.
      (error) => (error instanceof ApiError && error.status === 404 ? [] : Promise.reject(error)),
    ),
  )
  const [name, setName] = useState('')
  const { busy, error, setError, run } = useSubmission()
  const create = async (event: Event) => {
    event.preventDefault()
    setError(null)
    await run(async () => {
      const vault = await api<SharedVault>('POST', '/api/vaults', { name: name.trim() })
      await reloadVaults()
      chooseVault(vault.id)
      toast(`Created ${vault.name}`)
      navigate(`/vaults/${vault.id}`)
    })
  }
  const answer = async (invite: Invite, accept: boolean) => {
    try {
      const before = sharedVaults.value ?? []
      const result = await api(accept ? 'POST' : 'DELETE', accept ? `/api/invites/${invite.id}/accept` : `/api/invites/${invite.id}`)
      if (accept) await enterAccepted(result, before)
      else {
        toast('Invite declined')
        invites.reload()
      }
    } catch (failure) {
      toastError(failure)
    }
  }
  return (
    <section class="stack">
      <h1>Shared vaults</h1>
      <p class="muted">
        A shared vault holds keys, 2FA tokens and env projects for several people, each with a role. Choose one in the <strong>Vault</strong> menu at the top:
        every page then shows that vault.
      </p>
      {list === null ? (
        <Loading />
      ) : list.length === 0 ? (
        <p>You are in no shared vault yet.</p>
      ) : (
        <ul class="stack" aria-label="Your shared vaults">
          {list.map((vault) => (
            <li key={vault.id}>
              <Link href={`/vaults/${vault.id}`}>{vault.name}</Link>{' '}
              <span class="muted">
                {vault.role} · {vault.memberCount} {vault.memberCount === 1 ? 'member' : 'members'}
              </span>
            </li>
          ))}
        </ul>
      )}
      {invites.data && invites.data.length > 0 && (
        <>
          <h2>Invites for you</h2>
          <ul class="stack">
            {invites.data.map((invite) => (
              <li key={invite.id}>
                {invite.vaultName ?? invite.vault?.name ?? 'A shared vault'} as {invite.role} <span class="muted">(until {formatDate(invite.expiresAt)})</span>{' '}
                <button type="button" class="btn btn-small btn-primary" onClick={() => answer(invite, true)}>
                  Accept
                </button>{' '}
                <button type="button" class="btn btn-small" onClick={() => answer(invite, false)}>
                  Decline
                </button>
              </li>
            ))}
          </ul>
        </>
      )}
      <h2>New shared vault</h2>
      <form class="stack" onSubmit={create}>
        <Field label="Name" hint="You become its first admin; invite the others from its settings.">
          <input name="vault-name" required maxLength={100} value={name} onInput={(event) => setName(inputValue(event))} />
        </Field>
        <FormError error={error} />
        <div>
          <button type="submit" class="btn btn-primary" disabled={busy || !name.trim()}>
            Create vault
          </button>
        </div>
      </form>
    </section>
  )
}

/** `/vaults/<id>`: members, invites, what to rotate, rename, leave, delete. */
export function VaultSettingsPage(props: { id: string }) {
  const { id } = props
  const me = currentUser.value!
  const base = `/api/vaults/${encodeURIComponent(id)}`
  const vault = useLoad(() => api<SharedVault>('GET', base), [id])
  const members = useLoad(() => api<Member[]>('GET', `${base}/members`), [id])
  const admin = vault.data?.role === 'admin'
  const [rotationShown, setRotationShown] = useState(0)

  if (vault.error || !vault.data) return <Loading error={vault.error} />
  const act = async (what: () => Promise<unknown>, done: string) => {
    try {
      await what()
      toast(done)
      members.reload()
      await reloadVaults()
    } catch (failure) {
      toastError(failure)
    }
  }
  const setRole = (member: Member, role: VaultRole) => act(() => api('PATCH', `${base}/members/${member.userId}`, { role }), `${member.email} is ${role} now`)
  const remove = async (member: Member) => {
    if (
      !(await confirmAction(`Remove ${member.email} from ${vault.data!.name}? They lose it at once; the secrets they revealed are listed to rotate.`, 'Remove'))
    )
      return
    await act(() => api('DELETE', `${base}/members/${member.userId}`), `${member.email} removed`)
    setRotationShown((n) => n + 1)
  }
  const leave = async () => {
    if (!(await confirmAction(`Leave ${vault.data!.name}? You lose it at once; an admin can invite you again.`, 'Leave'))) return
    try {
      await api('DELETE', `${base}/members/${me.id}`)
      if (currentVaultId.value === id) chooseVault(null)
      await reloadVaults()
      toast(`You left ${vault.data!.name}`)
      navigate('/vaults', true)
    } catch (failure) {
      toastError(failure)
    }
  }
  const deleteVault = async () => {
    if (!(await confirmAction(`Delete ${vault.data!.name} with everything in it, for every member? This cannot be undone.`, 'Delete vault'))) return
    try {
      await api('DELETE', base)
      if (currentVaultId.value === id) chooseVault(null)
      await reloadVaults()
      toast(`Deleted ${vault.data!.name}`)
      navigate('/vaults', true)
    } catch (failure) {
      toastError(failure)
    }
  }
  return (
    <section class="stack">
      <h1>{vault.data.name}</h1>
      <p class="muted">
        Shared vault · your role: <strong>{vault.data.role}</strong> ({ROLE_NOTE[vault.data.role]}) · created {formatDate(vault.data.createdAt)}
      </p>
      {admin && <RenameVault base={base} name={vault.data.name} onRenamed={() => (vault.reload(), void reloadVaults())} />}
      <h2>Members</h2>
      {members.error || !members.data ? (
        <Loading error={members.error} />
      ) : (
        <table class="table" aria-label="Members">
          <thead>
            <tr>
              <th scope="col">Member</th>
              <th scope="col">Role</th>
              <th scope="col">Added</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {members.data.map((member) => (
              <tr key={member.userId}>
                <td>
                  {member.email}
                  {member.userId === me.id && <span class="muted"> (you)</span>}
                </td>
                <td>
                  {admin ? (
                    <select aria-label={`Role of ${member.email}`} value={member.role} onChange={(event) => setRole(member, inputValue(event) as VaultRole)}>
                      {ROLES.map((role) => (
                        <option key={role} value={role}>
                          {role}
                        </option>
                      ))}
                    </select>
                  ) : (
                    member.role
                  )}
                </td>
                <td>{formatDate(member.addedAt)}</td>
                <td>
                  {member.userId === me.id ? (
                    <button type="button" class="btn btn-small" onClick={leave}>
                      Leave
                    </button>
                  ) : (
                    admin && (
                      <button type="button" class="btn btn-small btn-danger" onClick={() => remove(member)} aria-label={`Remove ${member.email}`}>
                        Remove
                      </button>
                    )
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {admin && <Invites base={base} />}
      {admin && <Rotation key={rotationShown} base={base} />}
      {admin && (
        <>
          <h2>Delete this vault</h2>
          <p class="muted">Everything in it, its activity log and the access keys bound to it go, for every member.</p>
          <div>
            <button type="button" class="btn btn-danger" onClick={deleteVault}>
              Delete vault
            </button>
          </div>
        </>
      )}
    </section>
  )
}

function RenameVault(props: { base: string; name: string; onRenamed(): void }) {
  const [name, setName] = useState(props.name)
  const { busy, error, setError, run } = useSubmission()
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    await run(async () => {
      await api('PATCH', props.base, { name: name.trim() })
      toast(`Renamed to ${name.trim()}`)
      props.onRenamed()
    })
  }
  return (
    <form class="stack" onSubmit={submit}>
      <Field label="Vault name">
        <input name="vault-name" required maxLength={100} value={name} onInput={(event) => setName(inputValue(event))} />
      </Field>
      <FormError error={error} />
      <div>
        <button type="submit" class="btn" disabled={busy || !name.trim() || name.trim() === props.name}>
          Rename
        </button>
      </div>
    </form>
  )
}

/** Link invites: made with a role, the link shown once (only its hash is kept); pending ones revocable. */
function Invites(props: { base: string }) {
  const pending = useLoad(() =>
    api<Invite[] | { data: Invite[] }>('GET', `${props.base}/invites`).then(
      (answer) => (Array.isArray(answer) ? answer : answer.data),
      (error) => (error instanceof ApiError && error.status === 404 ? null : Promise.reject(error)),
    ),
  )
  const [role, setRole] = useState<VaultRole>('editor')
  const [email, setEmail] = useState('')
  const [created, setCreated] = useState<CreatedInvite | null>(null)
  const { busy, error, setError, run } = useSubmission()
  if (pending.data === null) return null // this server has no invites
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    // The last link goes at once: a link still shown while the next is made would be copied for it.
    setCreated(null)
    await run(async () => {
      const invite = await api<CreatedInvite>('POST', `${props.base}/invites`, { role, ...(email.trim() ? { email: email.trim() } : {}) })
      setCreated(invite.url ? invite : null)
      if (!invite.url) toast(`Invited ${email.trim()}: they accept it from their Shared vaults page`)
      setEmail('')
      pending.reload()
    })
  }
  const revoke = async (invite: Invite) => {
    if (!(await confirmAction(`Revoke this ${invite.role} invite? Its link stops working.`, 'Revoke'))) return
    try {
      await api('DELETE', `${props.base}/invites/${invite.id}`)
      toast('Invite revoked')
      if (created?.id === invite.id) setCreated(null)
      pending.reload()
    } catch (failure) {
      toastError(failure)
    }
  }
  return (
    <>
      <h2>Invites</h2>
      <form class="stack" onSubmit={submit}>
        <Field label="Role" hint={`viewer ${ROLE_NOTE.viewer}; editor ${ROLE_NOTE.editor}; admin ${ROLE_NOTE.admin}.`}>
          <select name="invite-role" value={role} onChange={(event) => setRole(inputValue(event) as VaultRole)}>
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </Field>
        <Field label="E-mail of an account (optional)" hint="Empty: a link anyone can use once within 7 days, even to create an account.">
          <input name="invite-email" type="email" value={email} onInput={(event) => setEmail(inputValue(event))} />
        </Field>
        <FormError error={error} />
        <div>
          <button type="submit" class="btn btn-primary" disabled={busy}>
            {email.trim() ? 'Invite' : 'Create invite link'}
          </button>
        </div>
      </form>
      {created && (
        <div class="notice stack" role="status">
          <p>
            Invite link for a new <strong>{created.role}</strong>, valid until {formatDate(created.expiresAt)}. It is shown only now: copy it and send it.
          </p>
          <p class="invite-link">
            <code data-testid="invite-url">{created.url}</code> <CopyButton value={created.url} what="Invite link copied" ariaLabel="Copy the invite link" />
          </p>
        </div>
      )}
      {pending.error ? (
        <Loading error={pending.error} />
      ) : pending.data && pending.data.length > 0 ? (
        <table class="table" aria-label="Pending invites">
          <thead>
            <tr>
              <th scope="col">Invite</th>
              <th scope="col">Role</th>
              <th scope="col">Expires</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {pending.data.map((invite) => (
              <tr key={invite.id}>
                <td>{invite.email ?? 'link'}</td>
                <td>{invite.role}</td>
                <td>{formatDate(invite.expiresAt)}</td>
                <td>
                  <button
                    type="button"
                    class="btn btn-small"
                    onClick={() => revoke(invite)}
                    aria-label={`Revoke the ${invite.role} invite ${invite.email ?? 'link'}`}
                  >
                    Revoke
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        pending.data && <p class="muted">No pending invites.</p>
      )}
    </>
  )
}

const revealers = (value: unknown): string =>
  Array.isArray(value) ? value.map((one) => (typeof one === 'string' ? one : ((one as { email?: string })?.email ?? ''))).join(', ') : String(value ?? '')

/** After a removal: every secret the member revealed or exported, to change and mark rotated. */
function Rotation(props: { base: string }) {
  const items = useLoad(() =>
    api<{ items: RotationItem[] }>('GET', `${props.base}/rotation`).then(
      (answer) => answer.items,
      (error) => (error instanceof ApiError && error.status === 404 ? null : Promise.reject(error)),
    ),
  )
  if (items.data === null || (items.data && items.data.length === 0)) return null
  if (items.error || !items.data) return <Loading error={items.error} />
  const rotated = async (item: RotationItem) => {
    try {
      await api('POST', `${props.base}/rotation/${encodeURIComponent(item.kind)}/${encodeURIComponent(item.id)}/rotated`)
      toast(`${item.name} marked rotated`)
      items.reload()
    } catch (failure) {
      toastError(failure)
    }
  }
  return (
    <>
      <h2>To rotate</h2>
      <p class="muted">A removed member revealed or exported these: change each value, then mark it rotated.</p>
      <ul class="stack" aria-label="Secrets to rotate">
        {items.data.map((item) => (
          <li key={`${item.kind}/${item.id}`}>
            <strong>{item.name}</strong> <span class="muted">({item.kind})</span> · revealed by {revealers(item.revealedBy)} · since {formatDate(item.since)}{' '}
            {item.rotatedAt ? (
              <span class="muted">rotated {formatDate(item.rotatedAt)}</span>
            ) : (
              <button type="button" class="btn btn-small" onClick={() => rotated(item)} aria-label={`Mark ${item.name} rotated`}>
                Mark rotated
              </button>
            )}
          </li>
        ))}
      </ul>
    </>
  )
}

/** `/invite/<token>`: signed in, accept; signed out, sign in or create an account with it. */
export function InvitePage(props: { token: string }) {
  const user = currentUser.value
  const [mode, setMode] = useState<'choose' | 'login' | 'register'>('choose')
  const { busy, error, setError, run } = useSubmission()
  const accept = async () => {
    setError(null)
    await run(async () => {
      const before = sharedVaults.value ?? (await api<SharedVault[]>('GET', '/api/vaults'))
      await enterAccepted(await api('POST', '/api/invites/accept', { token: props.token }), before)
    })
  }
  if (user)
    return (
      <section class="stack">
        <h1>Join a shared vault</h1>
        <p>
          You were invited to a shared vault. Accept to join it as <strong>{user.email}</strong>; the invite works once.
        </p>
        <FormError error={error} />
        <div>
          <button type="button" class="btn btn-primary" disabled={busy} onClick={accept}>
            Accept the invite
          </button>{' '}
          <Link href="/" class="btn">
            Not now
          </Link>
        </div>
      </section>
    )
  if (mode === 'login') return <LoginPage next={`/invite/${props.token}`} />
  if (mode === 'register') return <RegisterWithInvite token={props.token} onBack={() => setMode('choose')} />
  return (
    <LoginCard>
      <h2 class="login-heading">You are invited to a shared vault</h2>
      <p class="muted">Sign in to accept it, or create an account with it (the invite lets you even when sign-up is closed).</p>
      <button type="button" class="btn btn-primary btn-block" onClick={() => setMode('login')}>
        Sign in
      </button>
      <button type="button" class="btn btn-block" onClick={() => setMode('register')}>
        Create an account
      </button>
    </LoginCard>
  )
}

function RegisterWithInvite(props: { token: string; onBack(): void }) {
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const { busy, error, setError, run } = useSubmission()
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    await run(async () => {
      const answer = await api<{ user: User }>('POST', '/api/auth/register', { email, password, invite: props.token })
      setPassword('')
      // The shell (keyed by the user) reads the vault list; the new account's one vault is chosen.
      const list = await api<SharedVault[]>('GET', '/api/vaults').catch(() => [] as SharedVault[])
      if (list.length > 0) {
        try {
          localStorage.setItem(`svc.vault.${answer.user.id}`, list[0].id)
        } catch {
          // not kept: the personal vault shows first
        }
      }
      currentUser.value = answer.user
      navigate('/', true)
      toast(list.length > 0 ? `Welcome: you joined ${list[0].name} as ${list[0].role}` : 'Welcome')
    })
  }
  return (
    <LoginCard>
      <h2 class="login-heading">Create an account with the invite</h2>
      <form class="stack" onSubmit={submit}>
        <Field label="E-mail">
          <input name="email" type="email" autoComplete="username" required value={email} onInput={(event) => setEmail(inputValue(event))} />
        </Field>
        <Field label="Password" hint="At least 8 characters.">
          <input
            name="password"
            type="password"
            autoComplete="new-password"
            required
            minLength={8}
            value={password}
            onInput={(event) => setPassword(inputValue(event))}
          />
        </Field>
        <FormError error={error} />
        <button type="submit" class="btn btn-primary btn-block" disabled={busy}>
          Create account and join
        </button>
      </form>
      <button type="button" class="btn-link" onClick={props.onBack}>
        Back
      </button>
    </LoginCard>
  )
}
