// /api/access-keys: session authentication only, so a key can neither mint nor revoke keys.
import { Elysia, t } from 'elysia'
import type { AccessKeys } from '../../auth/access-keys'
import { requireFreshProof } from '../../auth/fresh-proof'
import { authGuard, type GuardDeps } from '../../auth/guard'
import { errorResponses, IdParams, NoContent } from '../../http/schemas'
import { AccessKeySchema, CreateAccessKeyBody, CreatedAccessKeySchema } from './model'

export function accessKeyRoutes(deps: GuardDeps & { accessKeys: AccessKeys }) {
  const { accessKeys } = deps
  return new Elysia({ prefix: '/api/access-keys', tags: ['Access keys'] })
    .use(authGuard(deps))
    .get('/', ({ auth }) => accessKeys.list(auth.userId), {
      auth: 'session',
      response: { 200: t.Array(AccessKeySchema), ...errorResponses() },
      detail: { operationId: 'listAccessKeys', summary: 'List your access keys (never the key itself)' },
    })
    .post(
      '/',
      async ({ auth, audit, body, set }) => {
        // A key outlives the session: a stolen cookie alone must not mint one.
        requireFreshProof(deps.accounts, auth)
        const created = await accessKeys.create(auth.userId, body)
        await audit('access_key.create', [{ kind: 'access_key', id: created.id, name: created.name }], {
          scopes: created.scopes,
          expiresAt: created.expiresAt,
          ...(created.vaultId ? { vaultId: created.vaultId } : {}),
        })
        set.status = 201
        return created
      },
      {
        auth: 'session',
        body: CreateAccessKeyBody,
        response: { 201: CreatedAccessKeySchema, ...errorResponses(400, 404, 413) },
        detail: {
          operationId: 'createAccessKey',
          summary: 'Create an access key; the answer holds the key, shown this once',
          description:
            'Needs a fresh proof: a sign-in or POST /api/auth/reauth of this session within the last 10 minutes, else 403 REAUTHENTICATION_REQUIRED. `vaultId` binds the key to a shared vault you are a member of (404 NOT_FOUND otherwise).',
        },
      },
    )
    .delete(
      '/:id',
      async ({ auth, audit, params, set }) => {
        const key = accessKeys.list(auth.userId).find((k) => k.id === params.id)
        await accessKeys.revoke(auth.userId, params.id)
        await audit('access_key.revoke', [{ kind: 'access_key', id: params.id, name: key?.name ?? null }])
        set.status = 204
      },
      {
        auth: 'session',
        params: IdParams,
        response: { 204: NoContent, ...errorResponses(404) },
        detail: { operationId: 'revokeAccessKey', summary: 'Revoke an access key, at once' },
      },
    )
}
