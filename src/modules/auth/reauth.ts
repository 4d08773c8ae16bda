// /api/auth/reauth: a signed-in session proves again that its owner is there, for the
// actions that outlive a session (auth/fresh-proof.ts). The proof counts for 10 minutes.
import { Elysia, t, type Cookie } from 'elysia'
import type { AppDeps } from '../../deps'
import { clientAddress } from '../../http/client-address'
import { AppError } from '../../http/errors'
import { component, errorResponses, Timestamp } from '../../http/schemas'
import { authGuard } from '../../auth/guard'
import { PASSKEY_CHALLENGE_TTL_MS, passkeyFailed, relyingParty } from '../../auth/passkeys'
import { refusalOutcome, setStepCookie } from '../../auth/sign-in'

const PURPOSE = 'passkey-reauth'
/** The passkey challenge of a re-authentication: its own cookie, so a sign-in ceremony elsewhere does not replace it. */
export const REAUTH_PASSKEY_COOKIE = 'svc_reauth'
const COOKIE_PATH = '/api/auth/reauth'

const ReauthBody = t.Object(
  {
    password: t.Optional(t.String({ maxLength: 1024, description: "The account's password" })),
    code: t.Optional(t.String({ maxLength: 32, description: 'With the password when two-factor sign-in is on: a code of the authenticator app' })),
    recoveryCode: t.Optional(t.String({ maxLength: 64, description: 'With the password when two-factor sign-in is on: a recovery code (used up)' })),
    passkey: t.Optional(
      t.Object(
        {},
        { additionalProperties: true, description: 'AuthenticationResponseJSON for the challenge of POST /api/auth/reauth/options (instead of the password)' },
      ),
    ),
  },
  { additionalProperties: false, description: 'The password (plus code or recoveryCode when two-factor sign-in is on), or a passkey assertion' },
)

const ReauthAnswer = component(
  'Reauthenticated',
  t.Object({
    freshUntil: { ...Timestamp, description: 'Until when the actions that need a fresh proof are allowed without asking again' },
  }),
)

const ReauthStatus = component(
  'ReauthStatus',
  t.Object({
    freshUntil: { ...Timestamp, description: "Until when this session's proof counts" },
    fresh: t.Boolean({ description: 'Whether it counts now' }),
  }),
)

const ReauthOptions = component(
  'ReauthPasskeyOptions',
  t.Object(
    {},
    { additionalProperties: true, description: "PublicKeyCredentialRequestOptionsJSON limited to the account's passkeys, for navigator.credentials.get" },
  ),
)

export function reauthRoutes(deps: AppDeps) {
  const { config, accounts } = deps
  const { passkeys, challenges, freshProof } = deps.protection

  const challengeCookie = (cookie: Record<string, Cookie<unknown>>, value: string, maxAgeMs: number) =>
    setStepCookie(cookie, config, { name: REAUTH_PASSKEY_COOKIE, path: COOKIE_PATH, sameSite: 'strict' }, value, maxAgeMs)

  return new Elysia({ prefix: '/api/auth', tags: ['Authentication'] })
    .use(authGuard(deps))
    .get(
      '/reauth',
      ({ auth }) => {
        const until = accounts.freshUntil(auth.sessionTokenHash)!
        return { freshUntil: new Date(until).toISOString(), fresh: deps.now() <= until }
      },
      {
        auth: 'session',
        response: { 200: ReauthStatus, ...errorResponses() },
        detail: {
          operationId: 'getReauthStatus',
          summary: "Until when this session's last proof (sign-in or re-authentication) counts as fresh",
          description:
            'For a page about to start something that needs a fresh proof outside fetch (the single sign-on link is a form POST): ask first when `fresh` is false.',
        },
      },
    )
    .post(
      '/reauth/options',
      async ({ auth, cookie, request, server, set }) => {
        if ((auth.user.passkeys ?? []).length === 0) throw new AppError(409, 'PASSKEY_NOT_FOUND', 'This account has no passkey: confirm with the password')
        // The port the server listens on, as the sign-in ceremony takes it (SVC_PORT=0 in tests).
        const rp = relyingParty(config, request, server?.port)
        const options = await passkeys.signInOptions(rp, auth.user)
        // Bound to this session: another session's ceremony cannot be finished here.
        const { sealed } = challenges.issue(
          PURPOSE,
          { challenge: options.challenge, userId: auth.userId, session: auth.sessionTokenHash, rp },
          PASSKEY_CHALLENGE_TTL_MS,
        )
        challengeCookie(cookie, sealed, PASSKEY_CHALLENGE_TTL_MS)
        set.headers['cache-control'] = 'no-store'
        return options
      },
      {
        auth: 'session',
        response: { 200: ReauthOptions, ...errorResponses(409) },
        detail: {
          operationId: 'reauthPasskeyOptions',
          summary: 'Start re-authenticating with a passkey',
          description:
            "WebAuthn request options for the account's own passkeys, and a short-lived (5 minutes), single-use challenge cookie for POST /api/auth/reauth. 409 PASSKEY_NOT_FOUND when the account has no passkey.",
        },
      },
    )
    .post(
      '/reauth',
      async ({ auth, audit, body, cookie, request, server }) => {
        const client = clientAddress(request, server, config)
        const method = body.passkey ? 'passkey' : 'password'
        try {
          if (body.passkey) {
            const issued = await challenges.read<{ challenge: string; userId: string; session: string | null; rp: { rpID: string; origin: string } }>(
              PURPOSE,
              cookie[REAUTH_PASSKEY_COOKIE]?.value,
            )
            challengeCookie(cookie, '', 0)
            // One ceremony per challenge, whatever its outcome; only the session that started it.
            if (!issued || issued.session !== auth.sessionTokenHash || !(await challenges.consume(issued))) {
              throw passkeyFailed('Start the passkey confirmation again (no challenge, or it expired)')
            }
            await passkeys.verifySignIn(body.passkey as never, issued.challenge, issued.rp, auth.userId)
          } else {
            await freshProof.checkPassword(auth.user, body, client)
          }
        } catch (error) {
          // The sign-in's rule: a refused proof is recorded (as denied when throttled), malformed input is not.
          const outcome = refusalOutcome(error)
          if (outcome)
            await deps.audit.recordForQuietly(
              auth,
              { request, server },
              'auth.reauth',
              [{ kind: 'user', id: auth.userId, name: null }],
              { method, reason: (error as AppError).code },
              outcome,
            )
          throw error
        }
        // Written with what the proof used up (a code's step, a recovery code, the passkey's counter).
        const until = await accounts.stampReauth(auth.sessionTokenHash!)
        await audit('auth.reauth', [{ kind: 'user', id: auth.userId, name: null }], { method })
        return { freshUntil: new Date(until).toISOString() }
      },
      {
        auth: 'session',
        body: ReauthBody,
        response: { 200: ReauthAnswer, ...errorResponses(400, 403, 429) },
        detail: {
          operationId: 'reauthenticate',
          summary: 'Confirm it is you (re-authenticate) for the next 10 minutes',
          description:
            'Adding a passkey, linking single sign-on, creating an access key, approving a device sign-in, changing the webhook, exporting 2FA secrets and deleting the account need a fresh proof: a sign-in or a re-authentication of this session within the last 10 minutes (else 403 REAUTHENTICATION_REQUIRED). The proof is `{ password }`, plus `code` or `recoveryCode` when two-factor sign-in is on (400 VALIDATION_ERROR without it), or `{ passkey }`: the assertion for POST /api/auth/reauth/options. 401 INVALID_CREDENTIALS, INVALID_TWO_FACTOR_CODE or PASSKEY_FAILED when wrong; 429 TOO_MANY_ATTEMPTS as for sign-in (counted before the check). An account without a password confirms with a passkey or a new single sign-on sign-in (403 REAUTHENTICATION_REQUIRED for `{ password }`). Access keys get 403 SESSION_REQUIRED.',
        },
      },
    )
}
