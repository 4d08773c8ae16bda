// The account-protection services, one set per vault, built by openVault: the routes
// of /api/auth and /api/account share them (used challenges, pending passkey registrations: kept
// in the store's shared state, so any instance on a database finishes what another started).
import type { Keyring } from '../crypto/keyring'
import type { SharedState } from '../store/shared-state'
import type { Vaults } from '../vault-access'
import type { Accounts } from './accounts'
import { FreshProof } from './fresh-proof'
import { Passkeys } from './passkeys'
import { SealedChallenges, TwoFactorSignIn } from './second-factor'

export interface AccountProtection {
  twoFactor: TwoFactorSignIn
  passkeys: Passkeys
  challenges: SealedChallenges
  /** Re-authentication checks. */
  freshProof: FreshProof
}

export function createAccountProtection(deps: {
  accounts: Accounts
  vaults: Vaults
  keyring: Keyring
  now: () => number
  state: SharedState
}): AccountProtection {
  const twoFactor = new TwoFactorSignIn(deps)
  return {
    twoFactor,
    passkeys: new Passkeys(deps.accounts, deps.now, deps.state),
    challenges: new SealedChallenges(deps.keyring, deps.now, deps.state),
    freshProof: new FreshProof({ accounts: deps.accounts, twoFactor }),
  }
}
