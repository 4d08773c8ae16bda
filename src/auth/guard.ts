// The `auth` macro: a route declares what it needs (a scope, "session" or "any") and gets the
// caller's identity. It runs at transform time, before body validation, so an unauthenticated
// request hears 401 rather than a complaint about its body. A session bypasses scopes; a bearer
// key needs the scope. When the answer is ready, a key revoked meanwhile turns it into 401.
import { Elysia } from 'elysia'
import type { Config } from '../config'
import { isCrossOriginWrite } from '../http/csrf'
import { AppError } from '../http/errors'
import type { AccessKeyRecord, UserRecord, VaultRole } from '../store/records'
import { vaultRoleFor, type VaultMount } from './vault-mount'
import type { AccessKeys } from './access-keys'
import type { Accounts } from './accounts'
import type { Scope } from './scopes'
import type { AuditAction } from '../audit/actions'
import type { AuditRecordRef, AuditService, AuditSource } from '../audit/recorder'

/** The session cookie's name over plain http; over https it is `__Host-svc_session` (config.sessionCookie). */
export const SESSION_COOKIE = 'svc_session'

export type Requirement = Scope | 'session' | 'any'
/** Scopes a key must all hold (such as AI extract: `ai:extract` and `export:read`). */
export type AuthNeed = Requirement | readonly Scope[]

export interface AuthContext {
  user: UserRecord
  userId: string
  method: 'session' | 'access-key'
  /** The key's scopes; null for a session (full access). */
  scopes: readonly string[] | null
  accessKey: AccessKeyRecord | null
  sessionTokenHash: string | null
  /**
   * Under /api/vaults/{vaultId}: `userId` is the vault id (the owner id of its documents), and
   * these name the member acting (their own user id, role; `member` for the audit event's actor).
   */
  memberId?: string
  vaultId?: string
  vaultRole?: VaultRole
  member?: { userId: string; email: string } | null
}

const authRequired = () => new AppError(401, 'AUTH_REQUIRED', 'Authentication required: sign in or send an access key')
const invalidKey = () => new AppError(401, 'AUTH_INVALID_KEY', 'The access key is unknown, revoked or expired')

export function securityFor(need: AuthNeed) {
  if (need === 'session') return [{ sessionCookie: [] }]
  if (need === 'any') return [{ bearerAuth: [] }, { sessionCookie: [] }]
  return [{ bearerAuth: typeof need === 'string' ? [need] : [...need] }, { sessionCookie: [] }]
}

export interface GuardDeps {
  config: Pick<Config, 'origin'> & Partial<Pick<Config, 'sessionCookie'>>
  accounts: Accounts
  accessKeys: AccessKeys
  /** The audit log: routes get an `audit` helper; a key's missing scope is recorded. */
  audit: AuditService
  /** The resource routes' vault: personal (a key bound to a shared vault is refused) or shared (vault-mount.ts). */
  vaultMount?: VaultMount
}

const vaultNotFound = () => new AppError(404, 'NOT_FOUND', 'Vault not found')

/**
 * The caller as the route sees it. Personal resource routes refuse a key bound to a shared vault
 * (403 KEY_BOUND_TO_VAULT: every guarded route documents 403); a shared vault's routes need the member's role there, and answer
 * with the vault as the owner.
 */
function enterVault(mount: VaultMount | undefined, auth: AuthContext, need: AuthNeed, method: string, route: string, vaultId: unknown): AuthContext {
  if (!mount) return auth
  if (mount.kind === 'personal') {
    if (auth.accessKey?.vaultId)
      throw new AppError(403, 'KEY_BOUND_TO_VAULT', 'This access key is bound to a shared vault: it works only under /api/vaults/{vaultId}/…')
    return auth
  }
  if (typeof vaultId !== 'string') throw vaultNotFound()
  const role = mount.roleIn!(auth, vaultId, vaultRoleFor(need, method, route))
  return { ...auth, userId: vaultId, memberId: auth.userId, vaultId, vaultRole: role, member: { userId: auth.userId, email: auth.user.email } }
}

/** Records an action of the caller; resolves once the event is on disk (await it before sending a secret). */
export type AuditFn = (action: AuditAction, records?: AuditRecordRef[], details?: Record<string, unknown>) => Promise<void>

export function authenticate(deps: GuardDeps, request: Request, sessionToken: string | undefined, need: AuthNeed): AuthContext {
  const header = request.headers.get('authorization')
  const bearer = header ? /^Bearer\s+(.+)$/i.exec(header.trim()) : null
  if (bearer) {
    const key = deps.accessKeys.authenticate(bearer[1].trim())
    if (!key) throw invalidKey()
    const user = deps.accounts.userById(key.userId)
    if (!user) throw invalidKey()
    if (need === 'session') {
      throw new AppError(403, 'SESSION_REQUIRED', 'This endpoint accepts a signed-in session only, not an access key')
    }
    const needed: readonly string[] = need === 'any' ? [] : typeof need === 'string' ? [need] : need
    const missing = needed.find((scope) => !key.scopes.includes(scope))
    if (missing) throw new AppError(403, 'AUTH_SCOPE_REQUIRED', `This access key lacks the scope ${missing}`)
    deps.accessKeys.markUsed(key)
    return { user, userId: user.id, method: 'access-key', scopes: key.scopes, accessKey: key, sessionTokenHash: null }
  }
  if (!sessionToken) throw authRequired()
  const session = deps.accounts.session(sessionToken)
  if (!session) throw authRequired()
  if (isCrossOriginWrite(request, deps.config.origin)) {
    throw new AppError(403, 'CSRF_REJECTED', 'Cross-origin request refused')
  }
  const user = deps.accounts.userById(session.userId)!
  deps.accounts.touchSession(session)
  return { user, userId: user.id, method: 'session', scopes: null, accessKey: null, sessionTokenHash: session.tokenHash }
}

/**
 * The session token from a Cookie header. Read here rather than through Elysia's `cookie`
 * context, which would parse every cookie of every request, bearer ones included.
 */
export function sessionToken(header: string | null, name = SESSION_COOKIE): string | undefined {
  if (!header) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim())
      } catch {
        return undefined
      }
    }
  }
  return undefined
}

async function recordDenied(deps: GuardDeps, request: Request, server: AuditSource['server'], need: Requirement) {
  const bearer = /^Bearer\s+(.+)$/i.exec(request.headers.get('authorization')?.trim() ?? '')
  const key = bearer ? deps.accessKeys.authenticate(bearer[1].trim()) : null
  if (!key) return
  const origin = deps.audit.origin({ request, server }, { accessKey: key, sessionTokenHash: null })
  await deps.audit.recordQuietly(key.userId, {
    action: 'scope.denied',
    outcome: 'denied',
    ...origin,
    records: [{ kind: 'access_key', id: key.id, name: key.name }],
    details: { required: need, method: request.method, path: new URL(request.url).pathname },
  })
}

/**
 * authenticate, for the guard's two moments (before the body, and the route's transform): a
 * valid key without the scope is recorded (scope.denied), then refused.
 */
async function authenticateOrRecord(deps: GuardDeps, request: Request, server: AuditSource['server'], need: AuthNeed): Promise<AuthContext> {
  await deps.accounts.fresh(request)
  try {
    return authenticate(deps, request, sessionToken(request.headers.get('cookie'), deps.config.sessionCookie), need)
  } catch (error) {
    if (error instanceof AppError && (error.code === 'AUTH_SCOPE_REQUIRED' || error.code === 'SESSION_REQUIRED')) {
      await recordDenied(deps, request, server, need as Requirement)
    }
    throw error
  }
}

/** Scopes whose answers hold plaintext (reveal, export, AI extract). */
const carriesSecrets = (need: AuthNeed): boolean =>
  typeof need === 'string' ? need.endsWith(':reveal') || need === 'export:read' || need === 'ai:extract' : need.some(carriesSecrets)

/** Requests authenticated before their body was read (authBeforeBody), for the route's own check. */
const authenticatedEarly = new WeakMap<Request, AuthContext>()

/** The need a route's `security` states (securityFor's inverse); undefined for a public route. */
export function needOf(security: unknown): AuthNeed | undefined {
  if (!Array.isArray(security) || security.length === 0) return undefined
  const bearer = security.find((item) => item && 'bearerAuth' in item)?.bearerAuth as Scope[] | undefined
  if (!bearer) return 'session'
  if (bearer.length === 0) return 'any'
  return bearer.length === 1 ? bearer[0] : bearer
}

interface GuardedRoute {
  method: string
  path: string
  hooks?: { detail?: { security?: unknown } }
}

/**
 * Authentication before the body is read: a request to a guarded route hears its
 * 401 or 403 at once, rather than after the server waited for up to 2 MiB of a stranger's body.
 * A global parse hook that answers nothing, registered ahead of the JSON body parser; the route's
 * need comes from the `security` its `auth` macro documented (`routes`: the composed app's).
 */
export function authBeforeBody(deps: GuardDeps, routes: () => readonly GuardedRoute[]) {
  let needs: Map<string, AuthNeed> | undefined
  // Async hooks: Elysia awaits a hook only when it looks async, and a refusal may wait for its record.
  return new Elysia({ name: 'auth.before-body' }).onParse({ as: 'global' }, async ({ request, route, server }) => {
    if (request.body === null || request.headers.get('content-length') === '0') return
    needs ??= new Map(
      routes().flatMap((r): [string, AuthNeed][] => {
        const need = needOf(r.hooks?.detail?.security)
        return need ? [[`${r.method} ${r.path}`, need]] : []
      }),
    )
    const need = needs.get(`${request.method} ${route}`)
    if (!need) return
    authenticatedEarly.set(request, await authenticateOrRecord(deps, request, server, need))
  })
}

export function authGuard(deps: GuardDeps) {
  const resolved = new WeakMap<Request, AuthContext>()
  // A key revoked while its request was being answered: the secret is not sent.
  const recheckKey = ({ request }: { request: Request }) => {
    const auth = resolved.get(request)
    const key = auth?.accessKey
    if (key && !deps.accessKeys.isLive(key)) throw invalidKey()
    // A member removed while the answer was being made: the secret is not sent.
    if (auth?.vaultId && auth.memberId) deps.vaultMount?.roleIn?.({ userId: auth.memberId, accessKey: key ?? null }, auth.vaultId, 'viewer')
  }
  // Seeded by the mount: the personal and the shared copies of a module each keep their own guard.
  return new Elysia({ name: 'auth.guard', seed: deps.vaultMount?.kind ?? 'none' }).macro({
    auth: (need: AuthNeed) => ({
      detail: {
        security: securityFor(need),
        // One scope as its name; several (all needed) as the list.
        'x-required-scope': need === 'session' || need === 'any' ? undefined : typeof need === 'string' ? need : [...need],
      } as Record<string, unknown>,
      async transform({ request, server, params, route }) {
        const caller = authenticatedEarly.get(request) ?? (await authenticateOrRecord(deps, request, server, need))
        resolved.set(request, enterVault(deps.vaultMount, caller, need, request.method, route, (params as Record<string, unknown> | undefined)?.vaultId))
      },
      resolve({ request, server }) {
        const auth = resolved.get(request)!
        const audit: AuditFn = (action, records, details) => deps.audit.recordFor(auth, { request, server }, action, records, details)
        // For a scope a handler requires itself (extract's export:read, say): `throw await denyScope('export:read')`
        // records scope.denied like the guard does, and gives the 403 to throw.
        const denyScope = async (scope: Scope) => {
          if (auth.accessKey) await recordDenied(deps, request, server, scope)
          return new AppError(403, 'AUTH_SCOPE_REQUIRED', `This access key lacks the scope ${scope}`)
        }
        // For a handler whose answer holds secrets under a need that does not say so (the 2FA
        // export: session only): call it last, after every await, as the hook above does.
        const recheck = () => recheckKey({ request })
        return { auth, audit, denyScope, recheck }
      },
      // Only answers that carry secrets wait on this check (a hook costs every request it runs on).
      ...(carriesSecrets(need) ? { afterHandle: recheckKey } : {}),
    }),
  })
}
