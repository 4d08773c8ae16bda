// /api/envs/{id}…/versions…: an env file's previous contents. The history itself is kept by lifecycle/.
import { Elysia } from 'elysia'
import { authGuard } from '../../auth/guard'
import { routePrefix } from '../../auth/vault-mount'
import type { AppDeps } from '../../deps'
import { errorResponses } from '../../http/schemas'
import { ref } from '../audit/service'
import { EnvFileVersionListAnswer, EnvFileVersionParams, NO_STORE, RevealedEnvFileVersionAnswer, VERSION_404 } from '../lifecycle/model'
import { HistoryService } from '../lifecycle/service'
import { policyOf } from '../lifecycle/trash'
import { versionAuthor } from '../lifecycle/versions'
import { EnvFileAnswer, EnvFileParams } from './model'

export function envFileVersionRoutes(deps: AppDeps) {
  const history = new HistoryService(deps.vaults, deps.now, policyOf(deps.config))
  return new Elysia({ prefix: routePrefix(deps, '/api/envs'), tags: ['History'] })
    .use(authGuard(deps))
    .get('/:id/files/:fileId/versions', async ({ auth, params }) => ({ data: await history.envFileVersions(auth.userId, params.id, params.fileId) }), {
      auth: 'envs:read',
      params: EnvFileParams,
      response: { 200: EnvFileVersionListAnswer, ...errorResponses(404) },
      detail: { operationId: 'listEnvFileVersions', summary: "List an env file's previous contents, newest first (never a content)" },
    })
    .post(
      '/:id/files/:fileId/versions/:version/reveal',
      async ({ auth, audit, params, set }) => {
        set.headers['cache-control'] = NO_STORE
        const revealed = await history.revealEnvFileVersion(auth.userId, params.id, params.fileId, params.version)
        await audit('envfile.version_reveal', [ref('envproject', { id: revealed.projectId }), ref('envfile', revealed, revealed.fileType)], {
          version: revealed.version,
        })
        return { data: revealed }
      },
      {
        auth: 'envs:reveal',
        params: EnvFileVersionParams,
        response: { 200: RevealedEnvFileVersionAnswer, ...errorResponses(400, 404) },
        detail: {
          operationId: 'revealEnvFileVersion',
          summary: 'Reveal a previous content of an env file',
          description: `Answers carry Cache-Control: no-store. ${VERSION_404}`,
        },
      },
    )
    .post(
      '/:id/files/:fileId/versions/:version/restore',
      async ({ auth, audit, params }) => {
        const file = await history.restoreEnvFileVersion(auth.userId, params.id, params.fileId, params.version, versionAuthor(auth))
        await audit('envfile.version_restore', [ref('envproject', { id: params.id }), ref('envfile', file, file.fileType)], { version: params.version })
        return { data: file }
      },
      {
        auth: 'envs:write',
        params: EnvFileVersionParams,
        response: { 200: EnvFileAnswer, ...errorResponses(400, 404) },
        detail: {
          operationId: 'restoreEnvFileVersion',
          summary: 'Make a previous content the current one',
          description: `The restored content becomes a new version. ${VERSION_404}`,
        },
      },
    )
}
