// What every route module may use. Built by openVault() in app.ts.
import type { AccessKeys } from './auth/access-keys'
import type { Accounts } from './auth/accounts'
import type { AccountProtection } from './auth/protection'
import type { Config } from './config'
import type { Keyring } from './crypto/keyring'
import type { Logger } from './http/error-handler'
import type { Metrics } from './http/metrics'
import type { RequestRecord } from './log'
import type { Vaults } from './modules/vault-access'
import type { AuditService } from './modules/audit/service'
import type { Notifier } from './modules/account/notifications'
import type { DataStore } from './store/data-store'
import type { AuditLogStore } from './store/audit-log-store'
import type { DataSync } from './store/audit-log'
import type { SharedVaults } from './modules/vaults/service'
import type { VaultInvites } from './modules/vaults/invites'
import type { Moves } from './modules/vaults/move'
import type { VaultMount } from './auth/vault-mount'

export interface AppDeps {
  config: Config
  store: DataStore
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
  /** Where this store keeps audit logs (the data folder's files, or the database); `dataSync`: a file store's syncs (tests). */
  auditLogs: (dataSync?: DataSync) => AuditLogStore
  /** Second step, passkeys, sign-in challenges and re-authentication, shared by /api/auth and /api/account. */
  protection: AccountProtection
  /** The due-items and security-alert webhook (routes, the background pass and alerts share it). */
  notifier: Notifier
  /** Shared vaults: their members and the resolver of /api/vaults/{vaultId} routes. */
  sharedVaults: SharedVaults
  /** Invites into shared vaults (by e-mail or link). */
  invites: VaultInvites
  /** Moving and copying projects between a personal vault and a shared one (journalled in the accounts document). */
  moves: Moves
  /** Set on the copies of deps that build the resource routes: which vault they work on (auth/vault-mount.ts). */
  vaultMount?: VaultMount
}
