// /api/account: two-factor sign-in, passkeys, sessions, password and deletion.
// Every route is session-only: an access key gets 403 SESSION_REQUIRED (before its body is read).
import { Elysia, t } from 'elysia'
import { requireFreshProof } from '../../auth/fresh-proof'
import { authGuard } from '../../auth/guard'
import { relyingParty } from '../../auth/passkeys'
import { clearSessionCookie } from '../../auth/sign-in'
import type { AppDeps } from '../../deps'
import { clientAddress } from '../../http/client-address'
import { errorResponses, IdParams, NoContent } from '../../http/schemas'
import {
  ChangePasswordBody,
  EnableBody,
  PasskeyItem,
  PasskeyList,
  PasskeyRegisterBody,
  PasskeyRegistrationOptions,
  PasswordBody,
  RecentAdditionsAnswer,
  RecoveryCodesAnswer,
  RevokeOthersBody,
  SecondFactorWithPasswordBody,
  SessionList,
  TwoFactorSetupAnswer,
} from './model'
import { AccountSettings, type Removed } from './service'
import { sessionActor } from '../audit/service'
import type { AuditFn } from '../../auth/guard'

const userRef = (id: string) => ({ kind: 'user', id, name: null })

/** One event per removed item, as their own endpoints record them. */
async function auditRemoved(audit: AuditFn, userId: string, removed: Removed): Promise<void> {
  for (const p of removed.passkeys) await audit('passkey.delete', [{ kind: 'passkey', id: p.id, name: p.name }], { recent: true })
  for (const k of removed.accessKeys) await audit('access_key.revoke', [{ kind: 'access_key', id: k.id, name: k.name }], { recent: true })
  if (removed.oidcLink) await audit('auth.oidc_unlink', [userRef(userId)], { recent: true })
}

const REMOVE =
  'With `remove` (chosen from GET /api/account/recent-additions), the passkeys, access keys and single sign-on link named go in the same step; every id is checked first (404 PASSKEY_NOT_FOUND, ACCESS_KEY_NOT_FOUND, nothing changed), and unlinking the only way in is 409 LAST_SIGN_IN_METHOD.'
const REAUTH =
  'The password is checked like a sign-in (401 INVALID_CREDENTIALS, 429 TOO_MANY_ATTEMPTS, counted before the check); an account without a password (single sign-on only) instead needs a single sign-on sign-in within the last 10 minutes (else 403 REAUTHENTICATION_REQUIRED).'

export function accountRoutes(deps: AppDeps) {
  const { config } = deps
  const { twoFactor, passkeys } = deps.protection
  const settings = new AccountSettings(deps.accounts, deps.accessKeys, deps.store, deps.now)

  return new Elysia({ prefix: '/api/account', tags: ['Account'] })
    .use(authGuard(deps))
    .post(
      '/2fa/setup',
      async ({ auth, body, request, server, set }) => {
        await settings.reauthenticate(auth, body.password, clientAddress(request, server, config))
        set.headers['cache-control'] = 'no-store'
        return twoFactor.setup(auth.user)
      },
      {
        auth: 'session',
        body: PasswordBody,
        response: { 200: TwoFactorSetupAnswer, ...errorResponses(400, 409, 429) },
        detail: {
          operationId: 'setupAccountTwoFactor',
          summary: 'Start two-factor sign-in: a new TOTP secret',
          description: `Answers a new secret, its otpauth:// URI and a QR code (SVG); two-factor sign-in turns on with POST /api/account/2fa/enable and a code from it. 409 TWO_FACTOR_ALREADY_ENABLED when it is on. ${REAUTH}`,
        },
      },
    )
    .post(
      '/2fa/enable',
      async ({ auth, audit, body, request, server, set }) => {
        const recoveryCodes = await twoFactor.enable(auth.user, body.code, clientAddress(request, server, config))
        await audit('auth.twofa_change', [userRef(auth.userId)], { change: 'enabled' })
        set.headers['cache-control'] = 'no-store'
        return { recoveryCodes }
      },
      {
        auth: 'session',
        body: EnableBody,
        response: { 200: RecoveryCodesAnswer, ...errorResponses(400, 409, 429) },
        detail: {
          operationId: 'enableAccountTwoFactor',
          summary: 'Turn two-factor sign-in on',
          description:
            'Checks a code of the secret from POST /api/account/2fa/setup (401 INVALID_TWO_FACTOR_CODE when wrong; throttled like passwords) and answers ten one-time recovery codes, shown only now. 409 TWO_FACTOR_SETUP_REQUIRED without a setup; 409 TWO_FACTOR_ALREADY_ENABLED.',
        },
      },
    )
    .post(
      '/2fa/disable',
      async ({ auth, audit, body, request, server, set }) => {
        const client = clientAddress(request, server, config)
        await settings.reauthenticate(auth, body.password, client)
        await twoFactor.verify(auth.user, body, client)
        await twoFactor.disable(auth.user)
        await audit('auth.twofa_change', [userRef(auth.userId)], { change: 'disabled' })
        set.status = 204
      },
      {
        auth: 'session',
        body: SecondFactorWithPasswordBody,
        response: { 204: NoContent, ...errorResponses(400, 409, 429) },
        detail: {
          operationId: 'disableAccountTwoFactor',
          summary: 'Turn two-factor sign-in off',
          description: `Needs the password and a code or a recovery code (401 INVALID_TWO_FACTOR_CODE when wrong). 409 TWO_FACTOR_NOT_ENABLED when it is off. ${REAUTH}`,
        },
      },
    )
    .post(
      '/2fa/recovery-codes',
      async ({ auth, audit, body, request, server, set }) => {
        const client = clientAddress(request, server, config)
        await settings.reauthenticate(auth, body.password, client)
        await twoFactor.verify(auth.user, body, client)
        const recoveryCodes = await twoFactor.regenerateRecoveryCodes(auth.user)
        // That they were replaced; never the codes.
        await audit('auth.twofa_change', [userRef(auth.userId)], { change: 'recovery_codes' })
        set.headers['cache-control'] = 'no-store'
        return { recoveryCodes }
      },
      {
        auth: 'session',
        body: SecondFactorWithPasswordBody,
        response: { 200: RecoveryCodesAnswer, ...errorResponses(400, 409, 429) },
        detail: {
          operationId: 'regenerateRecoveryCodes',
          summary: 'Replace the recovery codes',
          description: `Needs the password and a code or a recovery code; the earlier recovery codes stop working. 409 TWO_FACTOR_NOT_ENABLED when two-factor sign-in is off. ${REAUTH}`,
        },
      },
    )
    .get('/sessions', ({ auth }) => settings.sessions(auth), {
      auth: 'session',
      response: { 200: SessionList, ...errorResponses() },
      detail: {
        operationId: 'listSessions',
        summary: 'Every live session of the account',
        description: 'Most recently seen first. `lastSeenAt` moves at most once a minute.',
      },
    })
    .delete(
      '/sessions/:id',
      async ({ auth, audit, params, cookie, set }) => {
        const ended = deps.accounts.liveSessions(auth.userId).find((s) => s.id === params.id)
        const current = ended !== undefined && ended.tokenHash === auth.sessionTokenHash
        await deps.accounts.endSessionById(auth.userId, params.id)
        if (current) clearSessionCookie(cookie, config)
        // `session`: the ended session's actor id in the log (its events carry the same prefix).
        await audit('auth.session_end', [{ kind: 'session', id: params.id, name: null }], { current, session: ended ? sessionActor(ended.tokenHash).id : null })
        set.status = 204
      },
      {
        auth: 'session',
        params: IdParams,
        response: { 204: NoContent, ...errorResponses(404) },
        detail: {
          operationId: 'endSession',
          summary: 'End one session',
          description: '404 SESSION_NOT_FOUND for an unknown or foreign id. Ending the current session signs this browser out.',
        },
      },
    )
    .get('/recent-additions', ({ auth }) => settings.recentAdditions(auth.user, config.oidc?.name ?? null), {
      auth: 'session',
      response: { 200: RecentAdditionsAnswer, ...errorResponses() },
      detail: {
        operationId: 'listRecentAdditions',
        summary: 'Passkeys, access keys and single sign-on links added in the last 30 days',
        description:
          'What outlives a session and a stolen session could have added: "sign out everywhere else" and a password change offer to remove them in the same step (their `remove` field).',
      },
    })
    .post(
      '/sessions/revoke-others',
      async ({ auth, audit, body, set }) => {
        settings.checkRemoval(auth.user, body?.remove)
        const others = deps.accounts.liveSessions(auth.userId).filter((s) => s.tokenHash !== auth.sessionTokenHash)
        const count = await deps.accounts.endOtherSessions(auth.userId, auth.sessionTokenHash)
        await audit(
          'auth.session_end',
          others.map((s) => ({ kind: 'session', id: s.id!, name: null })),
          { others: true, count, sessions: others.map((s) => sessionActor(s.tokenHash).id) },
        )
        await auditRemoved(audit, auth.userId, await settings.removeAdditions(auth.user, body?.remove))
        set.status = 204
      },
      {
        auth: 'session',
        body: t.Optional(RevokeOthersBody),
        response: { 204: NoContent, ...errorResponses(400, 404, 409) },
        detail: { operationId: 'endOtherSessions', summary: 'End every session but this one', description: REMOVE },
      },
    )
    .post(
      '/password',
      async ({ auth, audit, body, request, server, set }) => {
        settings.checkRemoval(auth.user, body.remove, true)
        await settings.changePassword(auth, body, clientAddress(request, server, config))
        await audit('auth.password_change', [userRef(auth.userId)])
        await auditRemoved(audit, auth.userId, await settings.removeAdditions(auth.user, body.remove))
        set.status = 204
      },
      {
        auth: 'session',
        body: ChangePasswordBody,
        response: { 204: NoContent, ...errorResponses(400, 429) },
        detail: {
          operationId: 'changePassword',
          summary: 'Change the password',
          description: `Sets newPassword (8 to 1024 characters) and ends every other session of the account. A wrong currentPassword is 401 INVALID_CREDENTIALS. An account without a password (single sign-on only) sets its first one without currentPassword within 10 minutes of a single sign-on sign-in (else 403 REAUTHENTICATION_REQUIRED). ${REAUTH} ${REMOVE}`,
        },
      },
    )
    .delete(
      '',
      async ({ auth, body, cookie, request, server, set }) => {
        // The password confirms the intent; with two-factor sign-in on it is not the whole proof.
        if (auth.user.twoFactor) requireFreshProof(deps.accounts, auth)
        await settings.deleteAccount(auth, body?.password, clientAddress(request, server, config))
        clearSessionCookie(cookie, config)
        if (deps.audit) {
          // The account's own log goes with it; the deletion itself is kept in the server's log.
          await deps.audit.discard(auth.userId)
          await deps.audit.record(null, { action: 'account.delete', ...deps.audit.origin({ request, server }, auth), records: [userRef(auth.userId)] })
        }
        set.status = 204
      },
      {
        auth: 'session',
        body: PasswordBody,
        response: { 204: NoContent, ...errorResponses(400, 409, 429) },
        detail: {
          operationId: 'deleteAccount',
          summary: 'Delete the account',
          description: `Deletes the account, its vault file and change log, its access keys and its sessions (204, and the cookie is cleared); device sign-ins it approved and deliveries queued for it are cancelled. A backup taken before still restores it. The account leaves every shared vault it is a member of; 409 LAST_ADMIN while it is the last admin of one (make another member admin, or delete the vault, first). ${REAUTH} With two-factor sign-in on, the session must also have signed in or re-authenticated (POST /api/auth/reauth) within the last 10 minutes, else 403 REAUTHENTICATION_REQUIRED.`,
        },
      },
    )
    .get('/passkeys', ({ auth }) => passkeys.list(auth.user), {
      auth: 'session',
      response: { 200: PasskeyList, ...errorResponses() },
      detail: { operationId: 'listPasskeys', summary: "The account's passkeys" },
    })
    .post(
      '/passkeys/options',
      async ({ auth, request, server, set }) => {
        requireFreshProof(deps.accounts, auth)
        set.headers['cache-control'] = 'no-store'
        return passkeys.registrationOptions(auth.user, auth.sessionTokenHash!, relyingParty(config, request, server?.port))
      },
      {
        auth: 'session',
        response: { 200: PasskeyRegistrationOptions, ...errorResponses() },
        detail: {
          operationId: 'passkeyRegistrationOptions',
          summary: 'Start registering a passkey',
          description:
            'WebAuthn creation options (a discoverable credential; relying party: the host of SVC_BASE_URL, or without it the loopback host the request reached). The challenge is good for 5 minutes and one POST /api/account/passkeys from this session. Needs a fresh proof (a sign-in or POST /api/auth/reauth within the last 10 minutes), else 403 REAUTHENTICATION_REQUIRED.',
        },
      },
    )
    .post(
      '/passkeys',
      async ({ auth, audit, body, set }) => {
        requireFreshProof(deps.accounts, auth)
        const created = await passkeys.register(auth.user, auth.sessionTokenHash!, body.name ?? '', body.response as never)
        await audit('passkey.create', [{ kind: 'passkey', id: created.id, name: created.name }])
        set.status = 201
        return created
      },
      {
        auth: 'session',
        body: PasskeyRegisterBody,
        response: { 201: PasskeyItem, ...errorResponses(400, 409) },
        detail: {
          operationId: 'registerPasskey',
          summary: 'Register a passkey',
          description:
            "Verifies the browser's registration response against the challenge of POST /api/account/passkeys/options. 401 PASSKEY_FAILED when it does not verify or the challenge is missing or used; 409 PASSKEY_FAILED past 20 passkeys. Needs a fresh proof (a sign-in or POST /api/auth/reauth within the last 10 minutes), else 403 REAUTHENTICATION_REQUIRED.",
        },
      },
    )
    .delete(
      '/passkeys/:id',
      async ({ auth, audit, params, set }) => {
        const removed = passkeys.list(auth.user).find((p) => p.id === params.id)
        await passkeys.remove(auth.user, params.id)
        await audit('passkey.delete', [{ kind: 'passkey', id: params.id, name: removed?.name ?? null }])
        set.status = 204
      },
      {
        auth: 'session',
        params: IdParams,
        response: { 204: NoContent, ...errorResponses(404) },
        detail: { operationId: 'deletePasskey', summary: 'Delete a passkey', description: '404 PASSKEY_NOT_FOUND for an unknown or foreign id.' },
      },
    )
}
