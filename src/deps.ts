// What every route module may use. Built by openVault() in app.ts.
import type { AccessKeys } from './auth/access-keys'
import type { Accounts } from './auth/accounts'
import type { Config } from './config'
import type { Keyring } from './crypto/keyring'
import type { Logger } from './http/error-handler'
import type { Metrics } from './http/metrics'
import type { RequestRecord } from './log'
import type { Vaults } from './modules/vault-access'
import type { AuditService } from './modules/audit/service'
import type { Store } from './store/store'

export interface AppDeps {
  config: Config
  store: Store
  keyring: Keyring
  accounts: Accounts
  accessKeys: AccessKeys
  vaults: Vaults
  log: Logger
  now: () => number
  // Operations: counters for GET /metrics, and where answered requests are logged (none: not logged).
  metrics: Metrics
  logRequest?: (record: RequestRecord) => void
  /** The audit log. */
  audit: AuditService
}
