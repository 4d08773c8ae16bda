// /api/auth: register, login, logout, me, providers. OIDC routes come from auth/oidc-routes.
import { Elysia, type Cookie } from 'elysia'
import type { Config } from '../config'
import { errorResponses, NoContent, publicErrorResponses, withResponseHeaders } from '../http/schemas'
import type { AccessKeys } from './access-keys'
import { publicUser, type Accounts, type SignedIn } from './accounts'
import { authGuard, SESSION_COOKIE } from './guard'
import type { Scope } from './scopes'
import { LoginBody, MeAnswer, ProvidersAnswer, RegisterBody, UserAnswer } from './model'

export interface AuthRouteDeps {
  config: Config
  accounts: Accounts
  accessKeys: AccessKeys
}

export function setSessionCookie(cookie: Record<string, Cookie<unknown>>, config: Config, signedIn: SignedIn): void {
  cookie[SESSION_COOKIE].set({
    value: signedIn.token,
    httpOnly: true,
    sameSite: 'lax',
    path: '/',
    secure: config.secureCookies,
    expires: signedIn.expiresAt,
  })
}

export function clearSessionCookie(cookie: Record<string, Cookie<unknown>>, config: Config): void {
  cookie[SESSION_COOKIE].set({ value: '', httpOnly: true, sameSite: 'lax', path: '/', secure: config.secureCookies, maxAge: 0, expires: new Date(0) })
}

export function clientAddress(server: { requestIP(request: Request): { address: string } | null } | null, request: Request): string {
  return server?.requestIP(request)?.address ?? 'unknown'
}

/** Register and login answers set the session cookie. */
const SignedInAnswer = withResponseHeaders(UserAnswer, {
  'Set-Cookie': {
    description: 'The session: `svc_session=<token>; HttpOnly; SameSite=Lax; Path=/` (and `Secure` behind https), valid for SVC_SESSION_TTL. Send it back as a cookie.',
  },
})

export function authRoutes(deps: AuthRouteDeps) {
  const { config, accounts } = deps
  return new Elysia({ prefix: '/api/auth', tags: ['Authentication'] })
    .use(authGuard(deps))
    .post(
      '/register',
      async ({ body, cookie, set }) => {
        const signedIn = await accounts.register(body)
        setSessionCookie(cookie, config, signedIn)
        set.status = 201
        return { user: publicUser(signedIn.user) }
      },
      {
        body: RegisterBody,
        response: { 201: SignedInAnswer, ...publicErrorResponses(400, 403, 409, 413) },
        detail: {
          operationId: 'register',
          summary: 'Create an account and sign in',
          description: 'Sets the session cookie. 403 SIGNUP_DISABLED when sign-up is closed; 409 EMAIL_TAKEN when the e-mail has an account.',
        },
      },
    )
    .post(
      '/login',
      async ({ body, cookie, request, server }) => {
        const signedIn = await accounts.login(body.email, body.password, clientAddress(server, request))
        setSessionCookie(cookie, config, signedIn)
        return { user: publicUser(signedIn.user) }
      },
      {
        body: LoginBody,
        response: { 200: SignedInAnswer, ...publicErrorResponses(400, 401, 413, 429) },
        detail: {
          operationId: 'login',
          summary: 'Sign in with e-mail and password',
          description: 'Sets the session cookie. 401 INVALID_CREDENTIALS for a wrong e-mail or password; 429 TOO_MANY_ATTEMPTS (with Retry-After) after repeated failures.',
        },
      },
    )
    .post(
      '/logout',
      async ({ auth, cookie, set }) => {
        await accounts.endSession(auth.sessionTokenHash!)
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
          ? { user: publicUser(auth.user), auth: 'session' as const }
          : { user: publicUser(auth.user), auth: 'access-key' as const, scopes: [...auth.scopes!] as Scope[] }, // checked when the key was made
      { auth: 'any', response: { 200: MeAnswer, ...errorResponses() }, detail: { operationId: 'getCurrentUser', summary: 'Who is calling' } },
    )
    .get(
      '/providers',
      () => ({
        password: true,
        signup: config.signup,
        oidc: { enabled: config.oidc !== undefined, name: config.oidc?.name ?? null },
      }),
      {
        response: { 200: ProvidersAnswer, ...publicErrorResponses() },
        detail: { operationId: 'getSignInMethods', summary: 'Sign-in methods this vault offers' },
      },
    )
}
