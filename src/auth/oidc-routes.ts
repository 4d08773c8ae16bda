// /api/auth/oidc: the redirect to the identity provider and its callback. The sealed transaction
// cookie lives 10 minutes, is sent only to the callback path, and is cleared by the callback
// whatever its outcome.
import { Elysia, t, type Cookie } from 'elysia'
import type { AppDeps } from '../deps'
import { AppError } from '../http/errors'
import { publicErrorResponses, withResponseHeaders } from '../http/schemas'
import { OIDC_CALLBACK_PATH, OIDC_TRANSACTION_COOKIE, OIDC_TRANSACTION_TTL_MS, OidcSignIn } from './oidc'
import { setSessionCookie } from './routes'

const redirect = (description: string, cookie: string) => withResponseHeaders(t.Void({ description }), { 'Set-Cookie': { description: cookie } })

// Providers add their own parameters to the callback (iss, session_state, scope, authuser...).
const CallbackQuery = t.Object(
  {
    code: t.Optional(t.String({ description: 'Authorization code' })),
    state: t.Optional(t.String({ description: 'The state sent with the redirect' })),
    error: t.Optional(t.String({ description: 'Error code from the provider' })),
  },
  { additionalProperties: true },
)

const oidcDisabled = () => new AppError(404, 'OIDC_DISABLED', 'Sign-in with an identity provider is not configured on this vault')

export function oidcRoutes(deps: AppDeps) {
  const { config } = deps
  const oidc = config.oidc ? new OidcSignIn({ ...deps, config: { baseUrl: config.baseUrl, oidc: config.oidc } }) : undefined

  const transactionCookie = (cookie: Record<string, Cookie<unknown>>, value: string, maxAgeMs: number) =>
    cookie[OIDC_TRANSACTION_COOKIE].set({
      value,
      httpOnly: true,
      sameSite: 'lax',
      path: OIDC_CALLBACK_PATH,
      secure: config.secureCookies,
      maxAge: Math.floor(maxAgeMs / 1000),
      ...(maxAgeMs === 0 ? { expires: new Date(0) } : {}),
    })

  return new Elysia({ prefix: '/api/auth', tags: ['Authentication'] })
    .get(
      '/oidc',
      async ({ cookie, set }) => {
        if (!oidc) throw oidcDisabled()
        const { authorizationUrl, transaction } = await oidc.begin()
        transactionCookie(cookie, transaction, OIDC_TRANSACTION_TTL_MS)
        set.headers['cache-control'] = 'no-store'
        set.headers.location = authorizationUrl
        set.status = 302
      },
      {
        response: { 302: redirect('To the identity provider (Location header)', 'The sealed sign-in transaction, for the callback only (10 minutes)'), ...publicErrorResponses(400, 404) },
        detail: {
          operationId: 'startOidcSignIn',
          summary: 'Sign in with the identity provider (redirect)',
          description:
            'Redirects (302) to the identity provider with state, nonce and PKCE (S256), and sets a short-lived sealed cookie for the callback. 404 OIDC_DISABLED when SVC_OIDC_ISSUER and SVC_OIDC_CLIENT_ID are not set; 400 OIDC_FAILED when the provider cannot be reached.',
        },
      },
    )
    .get(
      '/oidc/callback',
      async ({ cookie, request, set }) => {
        if (!oidc) throw oidcDisabled()
        const sealed = cookie[OIDC_TRANSACTION_COOKIE]?.value
        // One use only: cleared whatever happens next.
        transactionCookie(cookie, '', 0)
        const signedIn = await oidc.complete(new URL(request.url).search, typeof sealed === 'string' ? sealed : undefined)
        setSessionCookie(cookie, config, signedIn)
        set.headers['cache-control'] = 'no-store'
        set.headers.location = '/'
        set.status = 302
      },
      {
        query: CallbackQuery,
        response: { 302: redirect('Signed in: to `/` (Location header), with the session cookie', 'The session cookie `svc_session`; the transaction cookie is cleared'), ...publicErrorResponses(400, 403, 404) },
        detail: {
          operationId: 'completeOidcSignIn',
          summary: 'Identity provider callback',
          description:
            'Checks state, exchanges the code (PKCE) and verifies the ID token (signature, issuer, audience, expiry, nonce), then signs in and redirects (302) to `/` with the session cookie. An identity is linked by issuer and subject; a first sign-in joins the account with the same e-mail only when the provider says the e-mail is verified, else creates an account. 400 OIDC_FAILED on any failure (no session); 403 SIGNUP_DISABLED for a new user when SVC_SIGNUP=closed.',
        },
      },
    )
}
