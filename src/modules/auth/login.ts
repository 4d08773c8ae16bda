// /api/auth: register, login, logout, me, providers. OIDC routes come from ./oidc.ts.
import { Elysia } from 'elysia'
import type { Config } from '../../config'
import { clientAddress } from '../../http/client-address'
import { assertSameSite } from '../../http/csrf'
import { errorResponses, NoContent, publicErrorResponses, withResponseHeaders } from '../../http/schemas'
import type { AccessKeys } from '../../auth/access-keys'
import { publicUser, signedInUser, type Accounts } from '../../auth/accounts'
import { authGuard } from '../../auth/guard'
import { sha256Hex } from '../../crypto/tokens'
import type { AuditService } from '../../audit/recorder'
import type { Scope } from '../../auth/scopes'
import { LoginAnswer, LoginBody, MeAnswer, ProvidersAnswer, RegisterBody, UserAnswer } from '../../auth/model'
import type { AppDeps } from '../../deps'
import { recordAccepted } from '../vaults/invite-routes'
import { clearSessionCookie, completeSignIn, recordFailedSignIn, setSessionCookie, setTwoFactorChallengeCookie } from '../../auth/sign-in'

export interface AuthRouteDeps extends Pick<AppDeps, 'keyring' | 'vaults' | 'now' | 'protection' | 'invites'> {
  config: Config
  accounts: Accounts
  accessKeys: AccessKeys
  audit: AuditService
}

/** Register and login answers set the session cookie. */
const SignedInAnswer = withResponseHeaders(UserAnswer, {
  'Set-Cookie': {
    description:
      'The session: `svc_session=<token>; HttpOnly; SameSite=Lax; Path=/` (and `Secure` behind https), valid for SVC_SESSION_TTL. Send it back as a cookie.',
  },
})

/** Login answers the session cookie, or the second-factor challenge cookie. */
const LoginAnswerWithCookie = withResponseHeaders(LoginAnswer, {
  'Set-Cookie': {
    description:
      'The session: `svc_session=<token>; HttpOnly; SameSite=Lax; Path=/` (and `Secure` behind https), valid for SVC_SESSION_TTL; or, when a second factor is needed, the short-lived challenge cookie `svc_2fa` instead.',
  },
})

export function loginRoutes(deps: AuthRouteDeps) {
  const { config, accounts } = deps
  const { challenges } = deps.protection
  return new Elysia({ prefix: '/api/auth', tags: ['Authentication'] })
    .use(authGuard(deps))
    .post(
      '/register',
      async ({ body, cookie, set, request, server }) => {
        assertSameSite(request, config.origin)
        // An invite link's token admits the account even when sign-up is closed, and joins its vault.
        const admission = body.invite === undefined ? undefined : deps.invites.admission(body.invite)
        const signedIn = await accounts.register(body, clientAddress(request, server, config), request.headers.get('user-agent'), admission)
        const sessionTokenHash = sha256Hex(signedIn.token)
        const origin = deps.audit.origin({ request, server }, { accessKey: null, sessionTokenHash })
        await deps.audit.recordQuietly(signedIn.user.id, {
          action: 'auth.register',
          ...origin,
          records: [{ kind: 'user', id: signedIn.user.id, name: null }],
          details: admission ? { method: 'password', invite: true } : { method: 'password' },
        })
        const accepted = admission?.accepted()
        if (accepted) await recordAccepted(deps, { request, server }, { user: signedIn.user, sessionTokenHash }, accepted, 'register')
        setSessionCookie(cookie, config, signedIn)
        set.status = 201
        return { user: publicUser(signedIn.user) }
      },
      {
        body: RegisterBody,
        response: { 201: SignedInAnswer, ...publicErrorResponses(400, 403, 404, 409, 413, 429) },
        detail: {
          operationId: 'register',
          summary: 'Create an account and sign in',
          description:
            'Sets the session cookie. 403 SIGNUP_DISABLED when sign-up is closed (SVC_SIGNUP=closed, or SVC_SIGNUP=first, the default, once the first account exists), unless `invite` holds a pending invite link’s token: the invite is the permission, the account joins that shared vault (with the invite’s role) in the same write, and the invite is used up; 404 INVITE_NOT_FOUND (nothing made) for an unknown, expired, used or revoked one. 403 CSRF_REJECTED for a cross-site request; 409 EMAIL_TAKEN when the e-mail has an account; 429 TOO_MANY_ATTEMPTS with Retry-After past SVC_REGISTER_LIMIT (default 10) new accounts per client address per hour.',
        },
      },
    )
    .post(
      '/login',
      async ({ body, cookie, request, server }) => {
        assertSameSite(request, config.origin)
        const client = clientAddress(request, server, config)
        let user
        try {
          user = await accounts.checkPassword(body.email, body.password, client)
        } catch (error) {
          // The account's log, or the server's when no account has the e-mail.
          await recordFailedSignIn(deps, { request, server }, error, {
            userId: accounts.userByEmail(body.email)?.id ?? null,
            method: 'password',
            email: body.email,
          })
          throw error
        }
        if (user.twoFactor) {
          // Two-factor sign-in: no session yet, only a short-lived single-use challenge.
          setTwoFactorChallengeCookie(cookie, config, challenges, user)
          return { twoFactorRequired: true as const }
        }
        const signedIn = await completeSignIn(deps, { cookie, request, server }, 'password', user)
        return { user: publicUser(signedIn.user) }
      },
      {
        body: LoginBody,
        response: { 200: LoginAnswerWithCookie, ...publicErrorResponses(400, 401, 403, 413, 429) },
        detail: {
          operationId: 'login',
          summary: 'Sign in with e-mail and password',
          description:
            'Sets the session cookie, unless a second factor is needed. 401 INVALID_CREDENTIALS for an unknown e-mail or a wrong password alike. 429 TOO_MANY_ATTEMPTS with Retry-After past 10 attempts for one e-mail from one client address, 100 for one e-mail from all addresses, or 50 from one address, within 15 minutes (counted before the password check). 403 CSRF_REJECTED for a cross-site request. With two-factor sign-in on, the right password answers 200 `{ twoFactorRequired: true }` and a short-lived (5 minutes), single-use, HttpOnly challenge cookie, without a session: finish with POST /api/auth/login/2fa or a passkey (POST /api/auth/passkey/login).',
        },
      },
    )
    .post(
      '/logout',
      async ({ auth, cookie, request, server, set }) => {
        await accounts.endSession(auth.sessionTokenHash!)
        await deps.audit.recordForQuietly(auth, { request, server }, 'auth.logout')
        clearSessionCookie(cookie, config)
        set.status = 204
      },
      {
        auth: 'session',
        response: { 204: NoContent, ...errorResponses(413) },
        detail: { operationId: 'logout', summary: 'Sign out: deletes the session' },
      },
    )
    .get(
      '/me',
      ({ auth }) =>
        auth.method === 'session'
          ? { user: signedInUser(auth.user), auth: 'session' as const }
          : { user: signedInUser(auth.user), auth: 'access-key' as const, scopes: [...auth.scopes!] as Scope[] }, // checked when the key was made
      { auth: 'any', response: { 200: MeAnswer, ...errorResponses() }, detail: { operationId: 'getCurrentUser', summary: 'Who is calling' } },
    )
    .get(
      '/providers',
      () => ({
        password: true,
        // SVC_SIGNUP=first reads as open until the first account exists, then as closed.
        signup: accounts.signupOpen() ? ('open' as const) : ('closed' as const),
        oidc: { enabled: config.oidc !== undefined, name: config.oidc?.name ?? null },
        signupPolicy: config.signup,
        firstAccount: accounts.users().length === 0,
      }),
      {
        response: { 200: ProvidersAnswer, ...publicErrorResponses() },
        detail: { operationId: 'getSignInMethods', summary: 'Sign-in methods this vault offers' },
      },
    )
}
