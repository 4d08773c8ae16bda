// The `auth` macro: a route declares what it needs (a scope, "session" or "any") and gets the
// caller's identity. It runs at transform time, before body validation, so an unauthenticated
// request hears 401 rather than a complaint about its body. A session bypasses scopes; a bearer
// key needs the scope. When the answer is ready, a key revoked meanwhile turns it into 401.
import { Elysia } from 'elysia'
import type { Config } from '../config'
import { isCrossOriginWrite } from '../http/csrf'
import { AppError } from '../http/errors'
import type { AccessKeyRecord, UserRecord } from '../store/records'
import type { AccessKeys } from './access-keys'
import type { Accounts } from './accounts'
import type { Scope } from './scopes'
import type { AuditAction } from '../modules/audit/model'
import type { AuditRecordRef, AuditService } from '../modules/audit/service'

/** The session cookie's name over plain http; over https it is `__Host-svc_session` (config.sessionCookie). */
export const SESSION_COOKIE = 'svc_session'

export type Requirement = Scope | 'session' | 'any'

export interface AuthContext {
  user: UserRecord
  userId: string
  method: 'session' | 'access-key'
  /** The key's scopes; null for a session (full access). */
  scopes: string[] | null
  accessKey: AccessKeyRecord | null
  sessionTokenHash: string | null
}

const authRequired = () => new AppError(401, 'AUTH_REQUIRED', 'Authentication required: sign in or send an access key')
const invalidKey = () => new AppError(401, 'AUTH_INVALID_KEY', 'The access key is unknown, revoked or expired')

export function securityFor(need: Requirement) {
  if (need === 'session') return [{ sessionCookie: [] }]
  if (need === 'any') return [{ bearerAuth: [] }, { sessionCookie: [] }]
  return [{ bearerAuth: [need] }, { sessionCookie: [] }]
}

export interface GuardDeps {
  config: Pick<Config, 'origin'> & Partial<Pick<Config, 'sessionCookie'>>
  accounts: Accounts
  accessKeys: AccessKeys
  /** The audit log (issue 17): routes get an `audit` helper; a key's missing scope is recorded. */
  audit?: AuditService
}

/** Records an action of the caller; resolves once the event is on disk (await it before sending a secret). */
export type AuditFn = (action: AuditAction, records?: AuditRecordRef[], details?: Record<string, unknown>) => Promise<void>

export function authenticate(
  deps: GuardDeps,
  request: Request,
  sessionToken: string | undefined,
  need: Requirement,
): AuthContext {
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
    if (need !== 'any' && !key.scopes.includes(need)) {
      throw new AppError(403, 'AUTH_SCOPE_REQUIRED', `This access key lacks the scope ${need}`)
    }
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

async function recordDenied(deps: GuardDeps, audit: AuditService, request: Request, server: Parameters<AuditService['origin']>[0]['server'], need: Requirement) {
  const bearer = /^Bearer\s+(.+)$/i.exec(request.headers.get('authorization')?.trim() ?? '')
  const key = bearer ? deps.accessKeys.authenticate(bearer[1].trim()) : null
  if (!key) return
  const origin = audit.origin({ request, server }, { accessKey: key, sessionTokenHash: null })
  await audit.recordQuietly(key.userId, {
    action: 'scope.denied',
    outcome: 'denied',
    ...origin,
    records: [{ kind: 'access_key', id: key.id, name: key.name }],
    details: { required: need, method: request.method, path: new URL(request.url).pathname },
  })
}

/** Scopes whose answers hold plaintext (reveal, export, AI extract). */
const carriesSecrets = (need: Requirement) => need.endsWith(':reveal') || need === 'export:read' || need === 'ai:extract'

export function authGuard(deps: GuardDeps) {
  const resolved = new WeakMap<Request, AuthContext>()
  // A key revoked while its request was being answered: the secret is not sent.
  const recheckKey = ({ request }: { request: Request }) => {
    const key = resolved.get(request)?.accessKey
    if (key && !deps.accessKeys.isLive(key)) throw invalidKey()
  }
  return new Elysia({ name: 'auth.guard' }).macro({
    auth: (need: Requirement) => ({
      detail: {
        security: securityFor(need),
        'x-required-scope': need === 'session' || need === 'any' ? undefined : need,
      } as Record<string, unknown>,
      transform({ request, server }) {
        try {
          resolved.set(request, authenticate(deps, request, sessionToken(request.headers.get('cookie'), deps.config.sessionCookie), need))
        } catch (error) {
          // A valid key without the scope: the attempt is recorded (scope.denied), then refused.
          if (deps.audit && error instanceof AppError && (error.code === 'AUTH_SCOPE_REQUIRED' || error.code === 'SESSION_REQUIRED')) {
            return recordDenied(deps, deps.audit, request, server, need).then(() => Promise.reject(error))
          }
          throw error
        }
      },
      resolve({ request, server }) {
        const auth = resolved.get(request)!
        const audit: AuditFn = deps.audit
          ? (action, records, details) => deps.audit!.recordFor(auth, { request, server }, action, records, details)
          : async () => {}
        // For a scope a handler requires itself (extract's export:read, say): `throw await denyScope('export:read')`
        // records scope.denied like the guard does, and gives the 403 to throw.
        const denyScope = async (scope: Scope) => {
          if (deps.audit && auth.accessKey) await recordDenied(deps, deps.audit, request, server, scope)
          return new AppError(403, 'AUTH_SCOPE_REQUIRED', `This access key lacks the scope ${scope}`)
        }
        return { auth, audit, denyScope }
      },
      // Only answers that carry secrets wait on this check (a hook costs every request it runs on).
      ...(carriesSecrets(need) ? { afterHandle: recheckKey } : {}),
    }),
  })
}
