// Composition: services from config (openVault) and the HTTP app from services (createApp).
// Tests call createApp(deps).handle(request) or start src/index.ts as a process.
import { VERSION } from './version'
import { Elysia, type AnyElysia } from 'elysia'
import { Kind } from '@sinclair/typebox'
import { AccessKeys } from './auth/access-keys'
import { authBeforeBody } from './auth/guard'
import { createAccountProtection } from './auth/protection'
import { Accounts } from './auth/accounts'
import type { Config } from './config'
import { Keyring, keyCheckIsCurrent } from './crypto/keyring'
import { loadMasterKey } from './crypto/master-key'
import { jsonBody, MAX_BODY_BYTES } from './http/body'
import { errorHandler, type Logger } from './http/error-handler'
import { apiDocs, type Documentation } from './http/openapi'
import { securityHeaders } from './http/security-headers'
import { hostCheck } from './http/host-check'
import { accessKeyRoutes } from './modules/access-keys'
import { authRoutes } from './modules/auth'
import { Vaults } from './modules/vault-access'
import { holdsVaults, Store, type StoreOptions } from './store/store'
import type { PgStoreOptions } from './store/postgres/store'
import { FileAuditLogStore, type AuditLogStore } from './store/audit-log-store'
import type { DataSync } from './store/audit-log'
import type { DataStore } from './store/data-store'
import type { AppDeps } from './deps'
import { categoryRoutes } from './modules/categories'
import { entryRoutes } from './modules/entries'
import { envRoutes } from './modules/envs'
import { twoFactorRoutes } from './modules/two-factor'
import { statsRoutes } from './modules/stats'
import { exportRoutes } from './modules/export'
import { aiRoutes } from './modules/ai'
import { webRoutes } from './web'
import { Metrics } from './http/metrics'
import { observeRequests } from './http/observe'
import { healthRoutes } from './modules/health'
import type { RequestRecord } from './log'
import { accountRoutes } from './modules/account'
import { lifecycleJobs } from './modules/lifecycle/jobs'
import { trashRoutes } from './modules/trash'
import { entryVersionRoutes } from './modules/entries/versions'
import { envFileVersionRoutes } from './modules/envs/versions'
import { tokenVersionRoutes } from './modules/two-factor/versions'
import { createNotifier, notificationRoutes } from './modules/account/notifications'
import { securityAlerts } from './modules/account/security-alerts'
import { auditRoutes } from './modules/audit'
import { AuditService } from './modules/audit/service'
import { AUDIT_ACTIONS } from './modules/audit/model'
import { SharedVaults } from './modules/vaults/service'
import { Moves, type MoveCrashPoint } from './modules/vaults/move'
import { vaultRoutes } from './modules/vaults'
import { VaultInvites } from './modules/vaults/invites'
import { inviteRoutes } from './modules/vaults/invite-routes'
import { documentSharedRoutes, sharedMount } from './modules/vaults/mount'

export type { AppDeps }

/**
 * Closed vaults are garbage that the engine leaves for its next full collection, which comes
 * only once the heap has grown a good deal: under a stream of users each opening their vault
 * once, RSS grew with every vault opened. After many vaults were closed, one full collection
 * (some tens of ms on a large data set), at most every 10 s: the pause comes only with churn.
 */
const COLLECT_AFTER_CLOSED = 200
const COLLECT_EVERY_MS = 10_000
let closedSinceCollect = 0
let lastCollect = 0
function collectSoon(): void {
  if (++closedSinceCollect < COLLECT_AFTER_CLOSED) return
  const now = performance.now()
  if (now - lastCollect < COLLECT_EVERY_MS) return
  lastCollect = now
  closedSinceCollect = 0
  setTimeout(() => Bun.gc(true), 0).unref?.()
}

/** Opens the data folder (lock, master key check) and builds the services. */
export async function openVault(
  config: Config,
  log: Logger = (line) => console.error(line),
  now = Date.now,
  logRequest?: (record: RequestRecord) => void,
): Promise<AppDeps> {
  const metrics = new Metrics()
  // With a database nothing of a user is written to the data folder (the key comes from the
  // environment, the audit logs go to the database): it is not even created.
  if (!config.databaseUrl) {
    const { chmodSync, mkdirSync } = await import('node:fs')
    mkdirSync(`${config.dataDir}/vaults`, { recursive: true, mode: 0o700 })
    // An existing folder keeps its mode through mkdir (a git checkout's data/ is 0755): owner only.
    try {
      chmodSync(config.dataDir, 0o700)
    } catch (error) {
      log(`warning: could not make ${config.dataDir} private (chmod 700): ${(error as Error).message}`)
    }
  }
  const keyring = new Keyring(config.databaseUrl ? config.masterKey! : loadMasterKey(config.dataDir, config.masterKey, log, () => holdsVaults(config.dataDir)))
  let accounts: Accounts | undefined
  let accessKeys: AccessKeys | undefined
  let audit: AuditService | undefined
  const storeOptions: StoreOptions & PgStoreOptions = {
    createKeyCheck: () => keyring.createKeyCheck(),
    onWriteError: (path, error) => {
      metrics.writeFailures++
      log(`error: could not write ${path}: ${(error as Error)?.message ?? error}`)
    },
    onFsync: (seconds) => metrics.fsync.observe(seconds),
    onQuery: (seconds) => metrics.dbQuery.observe(seconds),
    onAccountsReload: (data) => {
      accounts?.reindex(data)
      accessKeys?.reindex(data)
    },
    onAccountsChanges: (data, changes) => {
      accounts?.takeIn(changes)
      // Access keys are few beside users and sessions: rebuilt when one changed.
      if (changes.some((change) => change[0] !== 'set' && change[1] === 'accessKeys')) accessKeys?.reindex(data)
    },
    maxOpenVaults: config.maxOpenVaults,
    vaultIdleMs: config.vaultIdleMs,
    onVaultClosed: (userId) => {
      keyring.forgetVault(userId)
      audit?.closeUserLog(userId)
      collectSoon()
    },
    now,
  }
  let store: DataStore
  let auditLogs: (dataSync?: DataSync) => AuditLogStore
  if (config.databaseUrl) {
    // Loaded only with a database: its module reads Bun's SQL client, whose set-up a file store's
    // start need not pay (docs/performance.md, "Start-up").
    const [{ PgStore }, { PgAuditLogStore }] = await Promise.all([import('./store/postgres/store'), import('./store/postgres/audit-log')])
    const pgStore = await PgStore.open(config.databaseUrl, storeOptions)
    store = pgStore
    auditLogs = () => new PgAuditLogStore(pgStore.db)
  } else {
    store = await Store.open(config.dataDir, storeOptions)
    auditLogs = (dataSync) => new FileAuditLogStore(config.dataDir, dataSync)
  }
  try {
    await keyring.assertKeyCheck(store.accounts.data.keyCheck)
    if (!keyCheckIsCurrent(store.accounts.data.keyCheck)) {
      await store.accounts.update((_, write) => write.set('keyCheck', keyring.createKeyCheck()))
    }
  } catch (error) {
    await store.close()
    throw error
  }
  accounts = new Accounts(store.accounts, config, now, store.state)
  accessKeys = new AccessKeys(store.accounts, now)
  const vaults = new Vaults(store, keyring)
  audit = new AuditService({ config, store, vaults, now, log, keyring, auditLogs })
  await audit.start().catch((error) => log(`error: could not record when audit keying began: ${(error as Error).message}`))
  if (!config.audit.enabled) log('warning: SVC_AUDIT=off: nothing is recorded in the audit log; this switch is for the benchmark only')
  const protection = createAccountProtection({ accounts, vaults, keyring, now, state: store.state })
  const notifier = createNotifier({ accounts, vaults, store, config, now, log })
  // A locked second step is recorded and told to the owner.
  securityAlerts({ twoFactor: protection.twoFactor, notifier, audit, now, log })
  const auditLog = audit
  const sharedVaults = new SharedVaults({
    accountsDoc: store.accounts,
    accounts,
    accessKeys,
    discardVault: async (vaultId) => {
      await store.deleteVault(vaultId)
      await auditLog.discard(vaultId)
    },
    now,
  })
  const invites = new VaultInvites({ accountsDoc: store.accounts, sharedVaults, userById: (id) => accounts.userById(id), baseUrl: config.baseUrl, now })
  const crashAt = process.env.NODE_ENV === 'test' ? (process.env.SVC_TEST_MOVE_CRASH_AT as MoveCrashPoint | undefined) : undefined
  const moves = new Moves({
    accountsDoc: store.accounts,
    vaults,
    now,
    log,
    // Fault injection for the crash test (test/vaults/move.test.ts): never outside NODE_ENV=test.
    faultAt: crashAt ? (point) => point === crashAt && process.kill(process.pid, 'SIGKILL') : undefined,
  })
  // A move a crash interrupted is finished or undone before any request (move.ts).
  try {
    await moves.recover()
  } catch (error) {
    await store.close()
    throw error
  }
  return {
    config,
    store,
    keyring,
    accounts,
    accessKeys,
    vaults,
    log,
    now,
    metrics,
    logRequest,
    audit,
    auditLogs,
    protection,
    notifier,
    sharedVaults,
    invites,
    moves,
  }
}

/**
 * With a store other instances write too (PostgreSQL), each API request first takes in their
 * writes to the accounts (one query, usually answering nothing new): a session signed out or a
 * key revoked elsewhere is refused here too. The guard does the same before it authenticates
 * (which may come first, before a body is read); vaults are brought up to date when opened.
 */
const OPERATIONS_PATHS = new Set(['/healthz', '/readyz', '/metrics'])

function freshAccounts(deps: AppDeps) {
  if (!deps.store.accounts.refresh) return new Elysia()
  return new Elysia({ name: 'fresh-accounts' }).onTransform({ as: 'global' }, async ({ request, path }) => {
    // The operations endpoints read no account, and must answer while the database is away:
    // /healthz stays 200 (the process lives), /readyz says 503 NOT_READY itself, /metrics shows it.
    if (OPERATIONS_PATHS.has(path)) return
    await deps.accounts.fresh(request)
  })
}

/**
 * On the database store, a request whose query found the database away fails its later queries
 * at once (store/postgres/database.ts, beginRequest): a cut network answers 503 within a second,
 * however many queries the request would run.
 */
function requestBudget(deps: AppDeps) {
  const begin = deps.store.beginRequest?.bind(deps.store)
  if (!begin) return new Elysia()
  const open = new WeakMap<Request, () => void>()
  return new Elysia({ name: 'request-budget' })
    .onRequest(({ request }) => {
      open.set(request, begin())
    })
    .onAfterResponse({ as: 'global' }, ({ request }) => {
      open.get(request)?.()
      open.delete(request)
    })
}

/** The routes of a vault's resources, on the personal vault or (vaultMount "shared") a shared one. */
function resourceRoutes(deps: AppDeps) {
  return new Elysia()
    .use(envRoutes(deps))
    .use(categoryRoutes(deps))
    .use(entryRoutes(deps))
    .use(twoFactorRoutes(deps))
    .use(statsRoutes(deps))
    .use(exportRoutes(deps))
    .use(entryVersionRoutes(deps))
    .use(envFileVersionRoutes(deps))
    .use(tokenVersionRoutes(deps))
    .use(trashRoutes(deps))
    .use(auditRoutes(deps))
    .use(aiRoutes(deps))
}

export function createApp(deps: AppDeps) {
  // The personal vault's routes refuse an access key bound to a shared vault.
  const personal: AppDeps = { ...deps, vaultMount: { kind: 'personal' } }
  // The docs read the composed app when the document is first asked for.
  let root: () => AnyElysia = () => {
    throw new Error('the app is still being composed')
  }
  const app = new Elysia({
    normalize: false,
    // Bun's own cap sits above ours so that ours answers with a JSON body (a declared length is
    // refused before any of it is read), up to a 10 MB file handed to the 2FA import.
    serve: { maxRequestBodySize: MAX_BODY_BYTES * 8 },
  })
    .use(requestBudget(deps))
    .use(securityHeaders)
    .use(hostCheck(deps.config, deps.log))
    // Per-request work (ids, counters, log lines) only when something reads it: /metrics or request logs.
    .use(deps.config.metricsToken || deps.logRequest ? observeRequests(deps.config.metricsToken ? deps.metrics : undefined, deps.logRequest) : new Elysia())
    .use(errorHandler(deps.log))
    .use(freshAccounts(deps))
    // Credentials are checked before a body is waited for; a body has SVC_BODY_TIMEOUT to arrive.
    .use(authBeforeBody(deps, () => root().routes))
    .use(jsonBody(deps.config.bodyTimeoutMs))
    .use(apiDocs(() => root(), apiDocumentation(deps.config)))
    .use(authRoutes(deps))
    .use(accessKeyRoutes(deps))
    .use(resourceRoutes(personal))
    .use(healthRoutes(deps))
    .use(accountRoutes(deps))
    .use(lifecycleJobs(deps))
    .use(notificationRoutes(deps))
    .use(vaultRoutes(deps))
    .use(inviteRoutes(deps))
    // The same resource routes for a shared vault, under /api/vaults/{vaultId} (modules/vaults/mount.ts).
    .use(documentSharedRoutes(resourceRoutes({ ...deps, vaultMount: sharedMount(deps.sharedVaults) })))
    .use(webRoutes(deps))
  root = () => app
  if (!deps.config.checkResponses) skipResponseChecks(app)
  return app
}

export type App = ReturnType<typeof createApp>

/** What the OpenAPI document says besides its operations. */
function apiDocumentation(config: AppDeps['config']): Documentation {
  return {
    info: {
      title: 'svc-vault API',
      // One version: the release's (package.json), as /readyz and --version say.
      version: VERSION,
      description:
        'A per-user vault for secrets. Authenticate with a session cookie (web interface) or an access key (`Authorization: Bearer svc_…`). A session bypasses scope checks; an access key needs the scope each operation lists (`security` and `x-required-scope`). Every failure answers `{ error, code }`.' +
        ` Audit log (GET /api/audit): every action leaves one event (AuditEvent) in the user's hash-chained log; its actions (AuditAction) are ${AUDIT_ACTIONS.map((action) => `\`${action}\``).join(', ')}.`,
    },
    // A client resolves a relative URL against where it fetched the document.
    servers: config.baseUrlConfigured
      ? [{ url: config.baseUrl, description: 'This vault (SVC_BASE_URL)' }]
      : [{ url: '/', description: 'The server that serves this document' }],
    tags: [
      { name: 'Authentication', description: 'Accounts, sessions and sign-in methods' },
      { name: 'Access keys', description: 'Scoped keys for scripts and CI (session only)' },
      { name: 'Env projects', description: 'Projects holding encrypted .env files' },
      { name: 'Categories', description: 'Key categories: which service a key is for and its variable name' },
      { name: 'Entries', description: 'Encrypted key values, each in a category' },
      { name: 'Two-factor tokens', description: 'TOTP secrets and their current codes' },
      { name: 'Stats', description: 'Counts over your vault' },
      { name: 'Export', description: 'Your entries as one .env text' },
      { name: 'AI', description: 'Building a .env from a description, filing a pasted config' },
      { name: 'History', description: 'Previous values of entries, env files and two-factor tokens' },
      { name: 'Trash', description: 'Deleted items, kept for SVC_TRASH_DAYS days' },
      { name: 'Notifications', description: 'A daily webhook listing expired and due keys (session only)' },
      { name: 'API description', description: 'This document' },
      {
        name: 'Shared vaults',
        description: "Vaults shared with other accounts, their members and roles; each one's resources are under /api/vaults/{vaultId}/… (x-required-role)",
      },
      { name: 'Audit log', description: 'Who did what, when, from where: one event per action, hash-chained (AuditEvent, AuditAction)' },
    ],
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'Access key: svc_<token>' },
        sessionCookie: {
          type: 'apiKey',
          in: 'cookie',
          name: config.sessionCookie,
          description: 'Session cookie set by /api/auth/login and /api/auth/register',
        },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'SVC_METRICS_TOKEN, for GET /metrics only' },
      },
    },
  }
}

/**
 * Makes every route's response schemas documentation only (Elysia's `noValidate`), on copies:
 * the schema objects are shared by every app in the process, tests' included. Handlers are
 * compiled on their first request, so this still takes effect after composition. Every route
 * declares its answers as a status map.
 */
function skipResponseChecks(app: AnyElysia) {
  for (const route of app.routes) {
    const response = route.hooks?.response as Record<string, unknown> | undefined
    if (!response || typeof response !== 'object' || Kind in response) continue
    for (const [status, schema] of Object.entries(response)) {
      if (schema && typeof schema === 'object') response[status] = { ...schema, noValidate: true }
    }
  }
}
