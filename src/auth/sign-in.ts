// The end of every sign-in (password, two-factor code, passkey, single sign-on), written once:
// a succeeded one starts the session, records it and sets the cookie; a refused one is recorded
// by the one rule below. The session and the audit event name the same method: a sign-in that
// finished with a two-factor code is `2fa` on both.
import type { Cookie } from 'elysia'
import type { Config } from '../config'
import { sha256Hex } from '../crypto/tokens'
import { clientAddress } from '../http/client-address'
import { AppError } from '../http/errors'
import type { AuditOutcome } from '../audit/schema'
import type { AuditService, AuditSource, SignInMethod } from '../audit/recorder'
import type { UserRecord } from '../store/records'
import type { Accounts, SignedIn } from './accounts'
import { TWO_FACTOR_CHALLENGE_COOKIE, TWO_FACTOR_CHALLENGE_TTL_MS, type SealedChallenges } from './second-factor'
import { clearSessionCookie, setSessionCookie } from './session-cookie'

export interface SignInDeps {
  config: Config
  accounts: Accounts
  audit: AuditService
}

export interface SignInRequest extends AuditSource {
  cookie: Record<string, Cookie<unknown>>
}

export { clearSessionCookie, setSessionCookie }

export interface StepCookie {
  name: string
  path: string
  sameSite: 'strict' | 'lax'
}

/** Sets a step's short-lived HttpOnly cookie, or clears it (maxAgeMs 0). */
export function setStepCookie(
  cookie: Record<string, Cookie<unknown>>,
  config: Pick<Config, 'secureCookies'>,
  step: StepCookie,
  value: string,
  maxAgeMs: number,
): void {
  cookie[step.name].set({
    value,
    httpOnly: true,
    sameSite: step.sameSite,
    path: step.path,
    secure: config.secureCookies,
    maxAge: Math.floor(maxAgeMs / 1000),
    ...(maxAgeMs === 0 ? { expires: new Date(0) } : {}),
  })
}

export const TWO_FACTOR_PURPOSE = 'login-2fa'
/** The sign-in steps' challenge cookies are sent to /api/auth only. */
const COOKIE_PATH = '/api/auth'

type Cookies = Record<string, Cookie<unknown>>

export const setChallengeCookie = (cookie: Cookies, config: Pick<Config, 'secureCookies'>, name: string, value: string, maxAgeMs: number) =>
  setStepCookie(cookie, config, { name, path: COOKIE_PATH, sameSite: 'strict' }, value, maxAgeMs)

/** Issues the two-factor challenge after a right password: good for 5 minutes and one sign-in. */
export function setTwoFactorChallengeCookie(cookie: Cookies, config: Pick<Config, 'secureCookies'>, challenges: SealedChallenges, user: UserRecord) {
  const { sealed } = challenges.issue(TWO_FACTOR_PURPOSE, { userId: user.id }, TWO_FACTOR_CHALLENGE_TTL_MS)
  setChallengeCookie(cookie, config, TWO_FACTOR_CHALLENGE_COOKIE, sealed, TWO_FACTOR_CHALLENGE_TTL_MS)
}

/**
 * Starts the session of `user` (or takes one already started with the account it created: a
 * first single sign-on), records the sign-in and sets the session cookie.
 */
export async function completeSignIn(deps: SignInDeps, req: SignInRequest, method: SignInMethod, who: UserRecord | SignedIn): Promise<SignedIn> {
  const signedIn =
    'token' in who
      ? who
      : await deps.accounts.startSession(who, {
          client: clientAddress(req.request, req.server, deps.config),
          userAgent: req.request.headers.get('user-agent'),
          method,
        })
  // The session exists already: an event that cannot be written does not undo it.
  await deps.audit.signInQuietly({ userId: signedIn.user.id, method, ok: true, source: req, sessionTokenHash: sha256Hex(signedIn.token) })
  setSessionCookie(req.cookie, deps.config, signedIn)
  return signedIn
}

/** Reasons recorded for the refusals every method shares; any other refusal is recorded by its code. */
const REASONS: Record<string, string> = {
  INVALID_CREDENTIALS: 'invalid_credentials',
  INVALID_TWO_FACTOR_CODE: 'invalid_code',
  PASSKEY_FAILED: 'passkey_failed',
  TOO_MANY_ATTEMPTS: 'throttled',
}

/**
 * Whether a failure is a refused attempt worth recording, and as what: a client error (4xx) other
 * than malformed input (not an attempt at all) is; a 403 or 429 (a policy or the throttle said
 * no, whatever was presented) is `denied`, the rest `failed`. Null: not recorded.
 */
export function refusalOutcome(error: unknown): AuditOutcome | null {
  if (!(error instanceof AppError) || error.status < 400 || error.status >= 500 || error.code === 'VALIDATION_ERROR') return null
  return error.status === 403 || error.status === 429 ? 'denied' : 'failed'
}

/**
 * Records a refused sign-in in the account's log (`userId`), or the server's when no account is
 * known; `email` is what was typed (kept only in the server's log). Best effort: never rejects.
 */
export async function recordFailedSignIn(
  deps: Pick<SignInDeps, 'audit'>,
  source: AuditSource,
  error: unknown,
  attempt: { userId: string | null; method: SignInMethod; email?: string },
): Promise<void> {
  const outcome = refusalOutcome(error)
  if (outcome === null) return
  const { code } = error as AppError
  await deps.audit.signInQuietly({ ...attempt, ok: false, source, reason: REASONS[code] ?? code, outcome })
}
