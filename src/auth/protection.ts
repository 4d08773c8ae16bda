// The account-protection services (issue 16), one set per app: the routes of /api/auth and
// /api/account share them (used challenges, pending passkey registrations).
import type { AppDeps } from '../deps'
import { FreshProof } from './fresh-proof'
import { Passkeys } from './passkeys'
import { SealedChallenges, TwoFactorSignIn } from './second-factor'

export interface AccountProtection {
  twoFactor: TwoFactorSignIn
  passkeys: Passkeys
  challenges: SealedChallenges
  /** Re-authentication checks (issue 36). */
  freshProof: FreshProof
}

const perApp = new WeakMap<object, AccountProtection>()

export function accountProtection(deps: Pick<AppDeps, 'accounts' | 'vaults' | 'keyring' | 'now'>): AccountProtection {
  let services = perApp.get(deps.accounts)
  if (!services) {
    const twoFactor = new TwoFactorSignIn(deps)
    services = {
      twoFactor,
      passkeys: new Passkeys(deps.accounts, deps.now),
      challenges: new SealedChallenges(deps.keyring, deps.now),
      freshProof: new FreshProof({ accounts: deps.accounts, twoFactor }),
    }
    perApp.set(deps.accounts, services)
  }
  return services
}
