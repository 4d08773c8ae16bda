// /api/auth: the second step of a two-factor sign-in, and signing in with a passkey.
// Single sign-on sign-ins are not asked for a second factor: the identity provider owns that.
import { Elysia, t, type Cookie } from 'elysia'
import type { AppDeps } from '../../deps'
import { clientAddress } from '../../http/client-address'
import { AppError } from '../../http/errors'
import { assertSameSite } from '../../http/csrf'
import { component, errorResponses } from '../../http/schemas'
import { publicUser } from '../../auth/accounts'
import { UserAnswer } from '../../auth/model'
import { PASSKEY_CHALLENGE_TTL_MS, PASSKEY_SIGN_IN_COOKIE, passkeyFailed, relyingParty } from '../../auth/passkeys'
import { completeSignIn, recordFailedSignIn, setChallengeCookie, TWO_FACTOR_PURPOSE } from '../../auth/sign-in'
import { TWO_FACTOR_CHALLENGE_COOKIE, twoFactorRequired } from '../../auth/second-factor'

const PASSKEY_PURPOSE = 'passkey-sign-in'

type Cookies = Record<string, Cookie<unknown>>

const LoginSecondFactorBody = t.Object(
  {
    code: t.Optional(t.String({ maxLength: 32, description: 'The 6-digit code of the authenticator app' })),
    recoveryCode: t.Optional(t.String({ maxLength: 64, description: 'One of the recovery codes (each works once)' })),
  },
  { additionalProperties: false, description: 'Exactly one of code and recoveryCode' },
)

const PasskeyOptionsAnswer = component(
  'PasskeySignInOptions',
  t.Object(
    {},
    {
      additionalProperties: true,
      description: 'PublicKeyCredentialRequestOptionsJSON, for navigator.credentials.get (startAuthentication of @simplewebauthn/browser)',
    },
  ),
)
const PasskeySignInBody = t.Object(
  { response: t.Object({}, { additionalProperties: true, description: 'AuthenticationResponseJSON from the browser (startAuthentication)' }) },
  { additionalProperties: false },
)

export function secondFactorRoutes(deps: AppDeps) {
  const { config, accounts } = deps
  const { twoFactor, passkeys, challenges } = deps.protection

  const readTwoFactorChallenge = (cookie: Cookies) => challenges.read<{ userId: string }>(TWO_FACTOR_PURPOSE, cookie[TWO_FACTOR_CHALLENGE_COOKIE]?.value)

  return new Elysia({ prefix: '/api/auth', tags: ['Authentication'] })
    .post(
      '/login/2fa',
      async ({ body, cookie, request, server }) => {
        assertSameSite(request, config.origin)
        const challenge = await readTwoFactorChallenge(cookie)
        const user = challenge ? accounts.userById(challenge.userId) : undefined
        if (!challenge || !user || !user.twoFactor) throw twoFactorRequired()
        const client = clientAddress(request, server, config)
        // A challenge takes 5 wrong codes, then dies: the password step again.
        const tried = await challenges.tryCode(challenge)
        if (!tried) {
          setChallengeCookie(cookie, config, TWO_FACTOR_CHALLENGE_COOKIE, '', 0)
          throw twoFactorRequired()
        }
        // A recovery code's use must stand out (a stolen code): its own method in the session and the log.
        const method = typeof body.recoveryCode === 'string' && body.recoveryCode !== '' ? 'recovery_code' : '2fa'
        try {
          await twoFactor.verify(user, body, client)
          await tried.undo()
        } catch (error) {
          if (error instanceof AppError && error.code === 'INVALID_TWO_FACTOR_CODE') await tried.wrong()
          else await tried.undo()
          // A wrong code after the right password: recorded in the account's log.
          await recordFailedSignIn(deps, { request, server }, error, { userId: user.id, method })
          throw error
        }
        // The challenge is good for one sign-in: taken before the session's write.
        if (!(await challenges.consume(challenge))) throw twoFactorRequired()
        setChallengeCookie(cookie, config, TWO_FACTOR_CHALLENGE_COOKIE, '', 0)
        const signedIn = await completeSignIn(deps, { cookie, request, server }, method, user)
        return { user: publicUser(signedIn.user) }
      },
      {
        body: LoginSecondFactorBody,
        response: { 200: UserAnswer, ...errorResponses(400, 429) },
        detail: {
          operationId: 'completeTwoFactorLogin',
          summary: 'Finish a two-factor sign-in with a code or a recovery code',
          security: [],
          description:
            'Needs the challenge cookie set by POST /api/auth/login (5 minutes, one sign-in, 5 wrong codes: then 401 TWO_FACTOR_REQUIRED and the password step again). 20 wrong codes for one account within a day lock its second step for 15 minutes (429 TOO_MANY_ATTEMPTS with Retry-After, even for a right code; a passkey still signs in), recorded as auth.twofa_locked and told to the owner on the dashboard and by the webhook. `{ code }`: the current code of the authenticator app (one 30-second step of drift either way; each code is accepted once). `{ recoveryCode }`: one of the recovery codes, which is then used up. 200 `{ user }` with the session cookie. 401 TWO_FACTOR_REQUIRED when the challenge is missing, expired or used; 401 INVALID_TWO_FACTOR_CODE for a wrong or reused code; 429 TOO_MANY_ATTEMPTS with Retry-After as for passwords (counted before the check); 403 CSRF_REJECTED for a cross-site request.',
        },
      },
    )
    .post(
      '/passkey/options',
      async ({ cookie, request, server, set }) => {
        assertSameSite(request, config.origin)
        // As the second factor (a two-factor challenge is open): only that account's passkeys.
        const pending = await readTwoFactorChallenge(cookie)
        const user = pending ? (accounts.userById(pending.userId) ?? null) : null
        const rp = relyingParty(config, request, server?.port)
        const options = await passkeys.signInOptions(rp, user)
        const { sealed } = challenges.issue(PASSKEY_PURPOSE, { challenge: options.challenge, userId: user?.id ?? null, rp }, PASSKEY_CHALLENGE_TTL_MS)
        setChallengeCookie(cookie, config, PASSKEY_SIGN_IN_COOKIE, sealed, PASSKEY_CHALLENGE_TTL_MS)
        set.headers['cache-control'] = 'no-store'
        return options
      },
      {
        response: { 200: PasskeyOptionsAnswer, ...errorResponses() },
        detail: {
          operationId: 'passkeySignInOptions',
          summary: 'Start a passkey sign-in',
          security: [],
          description:
            "Answers the WebAuthn request options (discoverable credentials: no e-mail needed) and sets a short-lived, single-use challenge cookie. After a password when two-factor sign-in is on, only that account's passkeys are allowed. The relying party is the host of SVC_BASE_URL (without SVC_BASE_URL: the loopback host the request reached).",
        },
      },
    )
    .post(
      '/passkey/login',
      async ({ body, cookie, request, server }) => {
        assertSameSite(request, config.origin)
        const issued = await challenges.read<{ challenge: string; userId: string | null; rp: { rpID: string; origin: string } }>(
          PASSKEY_PURPOSE,
          cookie[PASSKEY_SIGN_IN_COOKIE]?.value,
        )
        setChallengeCookie(cookie, config, PASSKEY_SIGN_IN_COOKIE, '', 0)
        // One ceremony per challenge, whatever its outcome.
        if (!issued || !(await challenges.consume(issued))) throw passkeyFailed('Start the passkey sign-in again (no challenge, or it expired)')
        let user
        try {
          user = await passkeys.verifySignIn(body.response as never, issued.challenge, issued.rp, issued.userId)
        } catch (error) {
          // Recorded in the passkey owner's log (or the account of an open two-step sign-in); an
          // unknown passkey in the server's.
          await recordFailedSignIn(deps, { request, server }, error, {
            userId: issued.userId ?? passkeys.ownerOf((body.response as { id?: unknown })?.id),
            method: 'passkey',
          })
          throw error
        }
        // A passkey completes an open two-factor sign-in too.
        const pending = await readTwoFactorChallenge(cookie)
        if (pending) {
          await challenges.consume(pending)
          setChallengeCookie(cookie, config, TWO_FACTOR_CHALLENGE_COOKIE, '', 0)
        }
        const signedIn = await completeSignIn(deps, { cookie, request, server }, 'passkey', user)
        return { user: publicUser(signedIn.user) }
      },
      {
        body: PasskeySignInBody,
        response: { 200: UserAnswer, ...errorResponses(400) },
        detail: {
          operationId: 'passkeySignIn',
          summary: 'Sign in with a passkey',
          security: [],
          description:
            "Verifies the assertion against the challenge of POST /api/auth/passkey/options (origin, relying party, signature, and a signature counter that must move forward) and answers 200 `{ user }` with the session cookie. A passkey is a sign-in of its own (possession and, where the authenticator offers it, user verification): it also completes an open two-factor sign-in, for that account only. 401 PASSKEY_FAILED for an unknown passkey, another account's, another origin's, a replayed assertion, or a missing or used challenge; 403 CSRF_REJECTED for a cross-site request.",
        },
      },
    )
}
