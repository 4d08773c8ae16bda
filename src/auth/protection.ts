// The account-protection services (issue 16), one set per app: the routes of /api/auth and
// /api/account share them (used challenges, pending passkey registrations).
import type { AppDeps } from '../deps'
import { Passkeys } from './passkeys'
import { SealedChallenges, TwoFactorSignIn } from './second-factor'

export interface AccountProtection {
  twoFactor: TwoFactorSignIn
  passkeys: Passkeys
  challenges: SealedChallenges
}

const perApp = new WeakMap<object, AccountProtection>()

export function accountProtection(deps: Pick<AppDeps, 'accounts' | 'vaults' | 'keyring' | 'now'>): AccountProtection {
  let services = perApp.get(deps.accounts)
  if (!services) {
    services = {
      twoFactor: new TwoFactorSignIn(deps),
      passkeys: new Passkeys(deps.accounts, deps.now),
      challenges: new SealedChallenges(deps.keyring, deps.now),
    }
    perApp.set(deps.accounts, services)
  }
  return services
}
