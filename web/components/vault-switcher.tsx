// The vault switcher: the personal vault and each shared one. Switching keeps the page one is on
// (a record's own page goes to its list: its id is the other vault's no more).
import { currentPath, match, navigate } from '../router'
import { Link, okToLeave } from '../ui'
import { chooseVault, currentVaultId, sharedVaults } from '../vault'

const PERSONAL = ''

/** Where the same page is in the other vault. */
export function samePlaceIn(path: string, vaultId: string | null): string {
  if (match('/envs/:id', path)) return '/envs'
  if (match('/vaults/:id', path)) return vaultId ? `/vaults/${vaultId}` : '/vaults'
  return path
}

export function VaultSwitcher() {
  const list = sharedVaults.value ?? []
  const chosen = currentVaultId.value
  const onChange = async (event: Event) => {
    const select = event.currentTarget as HTMLSelectElement
    const next = select.value === PERSONAL ? null : select.value
    if (!(await okToLeave())) {
      select.value = chosen ?? PERSONAL
      return
    }
    const place = samePlaceIn(currentPath.value, next)
    chooseVault(next)
    if (place !== currentPath.value) navigate(place, true)
  }
  return (
    <div class="vault-switcher">
      <label class="muted" for="vault-switcher">
        Vault
      </label>
      <select id="vault-switcher" value={chosen ?? PERSONAL} onChange={onChange}>
        <option value={PERSONAL}>Personal</option>
        {list.map((vault) => (
          <option key={vault.id} value={vault.id}>
            {vault.name} ({vault.role})
          </option>
        ))}
      </select>
      <Link href={chosen ? `/vaults/${chosen}` : '/vaults'} class="btn btn-small">
        {chosen ? 'Vault settings' : 'Shared vaults'}
      </Link>
    </div>
  )
}
