// /api/auth/oidc: the redirect to the identity provider and its callback. The sealed transaction
// cookie lives 10 minutes, is sent only to the callback path, and is cleared by the callback
// whatever its outcome.
import { Elysia, t, type Cookie } from 'elysia'
import type { AppDeps } from '../../deps'
import { clientAddress } from '../../http/client-address'
import { AppError } from '../../http/errors'
import { component, errorResponses, NoContent, publicErrorResponses, withResponseHeaders } from '../../http/schemas'
import { requireFreshProof } from '../../auth/fresh-proof'
import { authGuard, sessionToken } from '../../auth/guard'
import { tooManyAttempts } from '../../auth/login-throttle'
import { OIDC_CALLBACK_PATH, OIDC_TRANSACTION_COOKIE, OIDC_TRANSACTION_TTL_MS, OidcSignIn } from '../../auth/oidc'
import { completeSignIn, recordFailedSignIn, setStepCookie } from '../../auth/sign-in'

/** Callbacks per client address per 15 minutes (CONTRACT.md): each one costs calls to the provider. */
export const MAX_CALLBACKS_PER_CLIENT = 60
const CALLBACK_WINDOW_MS = 15 * 60_000
/** Where the browser lands after linking an identity from Settings. */
export const AFTER_LINK_PATH = '/settings'

const LinkStatus = component(
  'OidcLinkStatus',
  t.Object({
    enabled: t.Boolean({ description: 'Whether single sign-on is configured on this vault' }),
    name: t.Union([t.String(), t.Null()], { description: "The provider's display name (SVC_OIDC_NAME)" }),
    linked: t.Boolean({ description: 'Whether an identity at the provider is linked to this account' }),
    canUnlink: t.Boolean({ description: 'False while the provider is the only way into the account (no password)' }),
  }),
)

const redirect = (description: string, cookie?: string) =>
  cookie ? withResponseHeaders(t.Void({ description }), { 'Set-Cookie': { description: cookie } }) : t.Void({ description })

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
  const { config, accounts } = deps
  const callbacks = deps.store.state.window('oidc-callback', CALLBACK_WINDOW_MS)
  const oidc = config.oidc ? new OidcSignIn({ ...deps, state: deps.store.state, config: { baseUrl: config.baseUrl, oidc: config.oidc } }) : undefined

  const transactionCookie = (cookie: Record<string, Cookie<unknown>>, value: string, maxAgeMs: number) =>
    setStepCookie(cookie, config, { name: OIDC_TRANSACTION_COOKIE, path: OIDC_CALLBACK_PATH, sameSite: 'lax' }, value, maxAgeMs)

  return new Elysia({ prefix: '/api/auth', tags: ['Authentication'] })
    .use(authGuard(deps))
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
        response: {
          302: redirect('To the identity provider (Location header)', 'The sealed sign-in transaction, for the callback only (10 minutes)'),
          ...publicErrorResponses(400, 404),
        },
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
      async ({ cookie, request, server, set }) => {
        if (!oidc) throw oidcDisabled()
        const client = clientAddress(request, server, config)
        const key = `c:${client}`
        const counted = await callbacks.take([{ key, max: MAX_CALLBACKS_PER_CLIENT }])
        if ('retryAfter' in counted) {
          throw tooManyAttempts('Too many sign-in callbacks from this address; try again later', counted.retryAfter)
        }
        const sealed = cookie[OIDC_TRANSACTION_COOKIE]?.value
        // One use only: cleared whatever happens next.
        transactionCookie(cookie, '', 0)
        const session = accounts.session(sessionToken(request.headers.get('cookie'), config.sessionCookie))
        let outcome
        try {
          outcome = await oidc.complete(new URL(request.url).search, typeof sealed === 'string' ? sealed : undefined, {
            sessionHash: session?.tokenHash ?? null,
            client,
            userAgent: request.headers.get('user-agent'),
          })
        } catch (error) {
          // Nobody is known to have tried (the provider did not vouch for anyone): the server's log, or the signed-in user's when linking.
          await recordFailedSignIn(deps, { request, server }, error, { userId: session?.userId ?? null, method: 'oidc' })
          throw error
        }
        if ('signedIn' in outcome) await completeSignIn(deps, { cookie, request, server }, 'oidc', outcome.signedIn)
        else if (session) {
          const origin = deps.audit.origin({ request, server }, { accessKey: null, sessionTokenHash: session.tokenHash })
          await deps.audit.recordQuietly(outcome.linked.id, {
            action: 'auth.oidc_link',
            ...origin,
            records: [{ kind: 'user', id: outcome.linked.id, name: null }],
            details: { method: 'oidc' },
          })
        }
        set.headers['cache-control'] = 'no-store'
        set.headers.location = 'signedIn' in outcome ? '/' : AFTER_LINK_PATH
        set.status = 302
      },
      {
        query: CallbackQuery,
        response: {
          302: redirect('Signed in: to `/` (Location header), with the session cookie', 'The session cookie; the transaction cookie is cleared'),
          ...publicErrorResponses(400, 403, 404, 429),
        },
        detail: {
          operationId: 'completeOidcSignIn',
          summary: 'Identity provider callback',
          description:
            'Checks state, exchanges the code (PKCE) and verifies the ID token (signature, issuer, audience, expiry, nonce), then signs in and redirects (302) to `/` with the session cookie. An identity is found by issuer and subject; a first sign-in creates an account, and is refused (400 OIDC_FAILED) when the e-mail already belongs to an account: its owner signs in and links the provider in Settings (POST /api/auth/oidc/link), after which this callback links the identity and redirects to `/settings`. 400 OIDC_FAILED on any failure (no session); 403 SIGNUP_DISABLED for a new user when sign-up is closed; 429 TOO_MANY_ATTEMPTS past 60 callbacks per client address per 15 minutes or SVC_REGISTER_LIMIT new accounts an hour.',
        },
      },
    )
    .get(
      '/oidc/link',
      ({ auth }) => ({
        enabled: oidc !== undefined,
        name: config.oidc?.name ?? null,
        linked: config.oidc !== undefined && auth.user.identities.length > 0,
        canUnlink: auth.user.passwordHash !== null,
      }),
      {
        auth: 'session',
        response: { 200: LinkStatus, ...errorResponses() },
        detail: { operationId: 'getOidcLink', summary: 'Whether single sign-on is linked to this account' },
      },
    )
    .post(
      '/oidc/link',
      async ({ auth, cookie, set }) => {
        if (!oidc) throw oidcDisabled()
        // A linked identity signs in for ever after: not on a stolen cookie alone.
        requireFreshProof(accounts, auth)
        const { authorizationUrl, transaction } = await oidc.begin({ userId: auth.userId, sessionHash: auth.sessionTokenHash! })
        transactionCookie(cookie, transaction, OIDC_TRANSACTION_TTL_MS)
        set.headers['cache-control'] = 'no-store'
        set.headers.location = authorizationUrl
        set.status = 302
      },
      {
        auth: 'session',
        response: { 302: redirect('To the identity provider (Location header)'), ...errorResponses(400, 404) },
        detail: {
          operationId: 'linkOidcIdentity',
          summary: 'Link single sign-on to this account (redirect)',
          description:
            'Starts the same round trip as GET /api/auth/oidc (302 to the identity provider); the callback then links the identity to the signed-in account (the same session must finish it), ends every other session of the account, and redirects to `/settings`. An identity already linked to another account is refused (400 OIDC_FAILED). 404 OIDC_DISABLED when single sign-on is not configured. Needs a fresh proof (a sign-in or POST /api/auth/reauth within the last 10 minutes), else 403 REAUTHENTICATION_REQUIRED.',
        },
      },
    )
    .delete(
      '/oidc/link',
      async ({ auth, request, server, set }) => {
        if (!config.oidc) throw oidcDisabled()
        const linked = auth.user.identities.length > 0
        await accounts.unlinkIdentities(auth.user)
        if (linked) await deps.audit.recordForQuietly(auth, { request, server }, 'auth.oidc_unlink', [{ kind: 'user', id: auth.userId, name: null }])
        set.status = 204
      },
      {
        auth: 'session',
        response: { 204: NoContent, ...errorResponses(404, 409) },
        detail: {
          operationId: 'unlinkOidcIdentity',
          summary: 'Unlink single sign-on from this account',
          description:
            'Removes the linked identity (204, also when none was linked). 409 LAST_SIGN_IN_METHOD while it is the only way into the account (an account made through single sign-on has no password). 404 OIDC_DISABLED when single sign-on is not configured.',
        },
      },
    )
}
