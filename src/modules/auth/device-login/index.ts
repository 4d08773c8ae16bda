// Device login for `svc login` (RFC 8628-like) and the calling key's own record:
//   POST /api/auth/device                       public: device code, user code, link
//   POST /api/auth/device/token                 public: the CLI polls; the key once approved
//   GET  /api/auth/device/{userCode}            session: what the approval page shows
//   POST /api/auth/device/{userCode}/approve    session
//   POST /api/auth/device/{userCode}/deny       session
//   GET  /api/auth/key, DELETE /api/auth/key    the access key the request is made with
// Token errors are 400 with RFC 8628's codes upper-cased: AUTHORIZATION_PENDING, SLOW_DOWN,
// EXPIRED_TOKEN, ACCESS_DENIED, INVALID_GRANT.
import { Elysia } from 'elysia'
import { publicAccessKey } from '../../../auth/access-keys'
import { requireFreshProof } from '../../../auth/fresh-proof'
import { authGuard, type AuthContext } from '../../../auth/guard'
import { clientAddress } from '../../../http/client-address'
import type { AppDeps } from '../../../deps'
import { AppError } from '../../../http/errors'
import { errorResponses, NoContent, publicErrorResponses } from '../../../http/schemas'
import { AccessKeySchema, CreatedAccessKeySchema } from '../../access-keys/model'
import {
  ApproveDeviceLoginBody,
  DeviceAuthorizationSchema,
  DeviceDecisionSchema,
  DeviceRequestSchema,
  PollDeviceLoginBody,
  StartDeviceLoginBody,
  UserCodeParams,
} from './model'
import { DeviceLogins, keyNameFor } from './service'

const TOKEN_ERRORS =
  '400 AUTHORIZATION_PENDING (not yet approved: poll again after `interval` seconds), SLOW_DOWN (polled too soon: the interval grows by 5 seconds), EXPIRED_TOKEN (10 minutes passed), ACCESS_DENIED (denied on the page), INVALID_GRANT (unknown or already used device code), VALIDATION_ERROR.'

function ownKey(auth: AuthContext) {
  if (!auth.accessKey) throw new AppError(403, 'ACCESS_KEY_REQUIRED', 'Send the access key itself (Authorization: Bearer svc_…); a session has no key')
  return auth.accessKey
}

export function deviceLoginRoutes(deps: AppDeps) {
  const logins = new DeviceLogins(deps.accessKeys, deps.config.baseUrl, deps.now, (userId) => deps.sharedVaults.listFor(userId), deps.store.state)
  // A deleted account's approved sign-ins pay out nothing.
  deps.accounts.onUserRemoved(
    (userId) => void logins.cancelFor(userId).catch((error) => deps.log(`error: could not cancel device sign-ins: ${(error as Error)?.message ?? error}`)),
  )
  return new Elysia({ name: 'deviceLoginRoutes', prefix: '/api/auth', tags: ['Authentication'] })
    .use(authGuard(deps))
    .post('/device', ({ body, request, server }) => logins.start(body, clientAddress(request, server, deps.config), request.headers.get('user-agent')), {
      body: StartDeviceLoginBody,
      response: { 200: DeviceAuthorizationSchema, ...publicErrorResponses(400, 413, 429) },
      detail: {
        operationId: 'startDeviceLogin',
        summary: 'Start a device sign-in (svc login)',
        description:
          'RFC 8628-like. Answers a secret `deviceCode` for the CLI and a `userCode` with the link `<SVC_BASE_URL>/cli?code=ABCD-EFGH`, where a signed-in person approves or denies. Codes last 10 minutes and are single-use. The key, once approved, is named `svc on <deviceName>`, expires after 90 days and holds the default scopes among `scopes` (default: entries:read entries:reveal export:read envs:read envs:reveal 2fa:read 2fa:reveal categories:read); any other scope asked for is granted only when the approver picks it on the page. `vault` (svc login --vault) asks for a key bound to that shared vault of the approver. 429 TOO_MANY_ATTEMPTS when too many sign-ins are waiting from one address (10), one IPv6 /64 (20) or in all (1,000).',
        security: [],
      },
    })
    .post(
      '/device/token',
      async ({ body, request, server, set }) => {
        set.headers['cache-control'] = 'no-store'
        const issued = await logins.poll(body.deviceCode)
        if (deps.audit) {
          // In the approving user's log before the key leaves (never the key); the actor is the device sign-in.
          const origin = deps.audit.origin({ request, server }, null)
          await deps.audit.record(issued.userId, {
            action: 'access_key.create',
            ...origin,
            actor: { type: 'device-login', id: null, name: issued.deviceName },
            records: [{ kind: 'access_key', id: issued.key.id, name: issued.key.name }],
            details: {
              scopes: issued.key.scopes,
              expiresAt: issued.key.expiresAt,
              via: 'device_login',
              ...(issued.key.vaultId ? { vaultId: issued.key.vaultId } : {}),
            },
          })
        }
        return issued.key
      },
      {
        body: PollDeviceLoginBody,
        response: { 200: CreatedAccessKeySchema, ...publicErrorResponses(400, 404, 413) },
        detail: {
          operationId: 'pollDeviceLogin',
          summary: 'Poll a device sign-in; answers the new access key once approved',
          description: `The answer holds the key, this once. ${TOKEN_ERRORS} 404 NOT_FOUND: approved for a shared vault the approver has left or been removed from since (no key is made).`,
          security: [],
        },
      },
    )
    .get('/device/:userCode', ({ auth, params }) => logins.describe(auth.userId, params.userCode), {
      auth: 'session',
      params: UserCodeParams,
      response: { 200: DeviceRequestSchema, ...errorResponses(404, 429) },
      detail: {
        operationId: 'getDeviceLogin',
        summary: 'A pending device sign-in: the device name, where and when it started, the scopes asked for',
        description:
          '`scopes` is what the device asked for; `grantedByDefault` what an approval without a choice grants (the default scopes among them); `address` and `userAgent` are the client that started it. 404 DEVICE_CODE_NOT_FOUND when the code is unknown, expired or already decided. 429 after 20 unknown codes in 15 minutes.',
      },
    })
    .post(
      '/device/:userCode/approve',
      async ({ auth, audit, body, params }) => {
        // Approving pays out a 90-day key: not on a stolen cookie alone.
        requireFreshProof(deps.accounts, auth)
        const decided = await logins.decide(auth.userId, params.userCode, true, body?.scopes)
        await audit('device_login.approve', [], {
          deviceName: decided.deviceName,
          keyName: keyNameFor(decided.deviceName),
          scopes: decided.scopes,
          requestedScopes: decided.requestedScopes,
          ...(decided.vault ? { vaultId: decided.vault.id, vaultName: decided.vault.name } : {}),
        })
        return { status: decided.status }
      },
      {
        auth: 'session',
        params: UserCodeParams,
        body: ApproveDeviceLoginBody,
        response: { 200: DeviceDecisionSchema, ...errorResponses(400, 404, 409, 413, 429) },
        detail: {
          operationId: 'approveDeviceLogin',
          summary: 'Approve a device sign-in: the CLI receives a new access key of yours on its next poll',
          description:
            "Needs a fresh proof (a sign-in or POST /api/auth/reauth within the last 10 minutes), else 403 REAUTHENTICATION_REQUIRED. Without a body, the key holds the default scopes among those asked for (400 VALIDATION_ERROR when none of them is a default one); `scopes` grants exactly the scopes the approver picked, wider or narrower. A sign-in that asked for a shared vault (`vault`) gets a key bound to the approver's vault of that name or id: 404 NOT_FOUND when the approver has none, 409 VAULT_NAME_AMBIGUOUS when several of theirs bear the name.",
        },
      },
    )
    .post(
      '/device/:userCode/deny',
      async ({ auth, audit, params }) => {
        const decided = await logins.decide(auth.userId, params.userCode, false)
        await audit('device_login.deny', [], { deviceName: decided.deviceName, keyName: keyNameFor(decided.deviceName), scopes: decided.requestedScopes })
        return { status: decided.status }
      },
      {
        auth: 'session',
        params: UserCodeParams,
        response: { 200: DeviceDecisionSchema, ...errorResponses(404, 413, 429) },
        detail: { operationId: 'denyDeviceLogin', summary: 'Deny a device sign-in: the CLI is told so and gets no key' },
      },
    )
    .get('/key', ({ auth }) => publicAccessKey(ownKey(auth)), {
      auth: 'any',
      response: { 200: AccessKeySchema, ...errorResponses() },
      detail: {
        operationId: 'getCurrentAccessKey',
        summary: 'The access key this request is made with (never the key itself)',
        description: '403 ACCESS_KEY_REQUIRED with a session.',
      },
    })
    .delete(
      '/key',
      async ({ auth, audit, set }) => {
        const key = ownKey(auth)
        await deps.accessKeys.revoke(auth.userId, key.id)
        await audit('access_key.revoke', [{ kind: 'access_key', id: key.id, name: key.name }], { own: true })
        set.status = 204
      },
      {
        auth: 'any',
        response: { 204: NoContent, ...errorResponses(413) },
        detail: {
          operationId: 'revokeCurrentAccessKey',
          summary: 'Revoke the access key this request is made with (svc logout)',
          description: 'From this answer on, the key gets 401. 403 ACCESS_KEY_REQUIRED with a session.',
        },
      },
    )
}
