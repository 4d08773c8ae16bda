// /api/2fa/{id}…/versions…: a two-factor token's previous secrets. The history itself is kept by lifecycle/.
import { Elysia } from 'elysia'
import { authGuard } from '../../auth/guard'
import { routePrefix } from '../../auth/vault-mount'
import type { AppDeps } from '../../deps'
import { errorResponses, IdParams } from '../../http/schemas'
import { ref } from '../audit/service'
import { EntryVersionParams, NO_STORE, RevealedTwoFactorVersionSchema, VERSION_404, VersionListSchema } from '../lifecycle/model'
import { HistoryService } from '../lifecycle/service'
import { policyOf } from '../lifecycle/trash'
import { versionAuthor } from '../lifecycle/versions'
import { TwoFactorSchema } from './model'

export function tokenVersionRoutes(deps: AppDeps) {
  const history = new HistoryService(deps.vaults, deps.now, policyOf(deps.config))
  return new Elysia({ prefix: routePrefix(deps, '/api/2fa'), tags: ['History'] })
    .use(authGuard(deps))
    .get('/:id/versions', ({ auth, params }) => history.tokenVersions(auth.userId, params.id), {
      auth: '2fa:read',
      params: IdParams,
      response: { 200: VersionListSchema, ...errorResponses(404) },
      detail: { operationId: 'listTwoFactorTokenVersions', summary: "List a two-factor token's previous secrets, newest first (never a secret)" },
    })
    .post(
      '/:id/versions/:version/reveal',
      async ({ auth, audit, params, set }) => {
        set.headers['cache-control'] = NO_STORE
        const revealed = await history.revealTokenVersion(auth.userId, params.id, params.version)
        await audit('twofa.version_reveal', [ref('twofa', revealed, `${revealed.service} (${revealed.accountName})`)], { version: revealed.version })
        return revealed
      },
      {
        auth: '2fa:reveal',
        params: EntryVersionParams,
        response: { 200: RevealedTwoFactorVersionSchema, ...errorResponses(400, 404) },
        detail: {
          operationId: 'revealTwoFactorTokenVersion',
          summary: 'The current code of a previous secret',
          description: `As for the current secret, the secret itself is never answered: the code it makes now is. Answers carry Cache-Control: no-store. ${VERSION_404}`,
        },
      },
    )
    .post(
      '/:id/versions/:version/restore',
      async ({ auth, audit, params }) => {
        const token = await history.restoreTokenVersion(auth.userId, params.id, params.version, versionAuthor(auth))
        await audit('twofa.version_restore', [ref('twofa', token, `${token.service} (${token.accountName})`)], { version: params.version })
        return token
      },
      {
        auth: '2fa:write',
        params: EntryVersionParams,
        response: { 200: TwoFactorSchema, ...errorResponses(400, 404) },
        detail: {
          operationId: 'restoreTwoFactorTokenVersion',
          summary: 'Make a previous secret (and its code parameters) the current one',
          description: `The restored secret becomes a new version. ${VERSION_404}`,
        },
      },
    )
}
