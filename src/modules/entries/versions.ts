// /api/entries/{id}…/versions…: an entry's previous values. The history itself is kept by lifecycle/.
import { Elysia } from 'elysia'
import { authGuard } from '../../auth/guard'
import { routePrefix } from '../../auth/vault-mount'
import type { AppDeps } from '../../deps'
import { errorResponses, IdParams } from '../../http/schemas'
import { ref } from '../audit/service'
import { EntryVersionParams, NO_STORE, RevealedEntryVersionSchema, VERSION_404, VersionListSchema } from '../lifecycle/model'
import { HistoryService } from '../lifecycle/service'
import { policyOf } from '../lifecycle/trash'
import { versionAuthor } from '../lifecycle/versions'
import { EntrySchema } from './model'

export function entryVersionRoutes(deps: AppDeps) {
  const history = new HistoryService(deps.vaults, deps.now, policyOf(deps.config))
  return new Elysia({ prefix: routePrefix(deps, '/api/entries'), tags: ['History'] })
    .use(authGuard(deps))
    .get('/:id/versions', ({ auth, params }) => history.entryVersions(auth.userId, params.id), {
      auth: 'entries:read',
      params: IdParams,
      response: { 200: VersionListSchema, ...errorResponses(404) },
      detail: {
        operationId: 'listEntryVersions',
        summary: "List an entry's previous values, newest first (never a value)",
        description: `The last SVC_HISTORY_VERSIONS (default 20) values an entry had. 404 ENTRY_NOT_FOUND when missing, foreign or in the trash.`,
      },
    })
    .post(
      '/:id/versions/:version/reveal',
      async ({ auth, audit, params, set }) => {
        set.headers['cache-control'] = NO_STORE
        const revealed = await history.revealEntryVersion(auth.userId, params.id, params.version)
        // Recorded on disk before the value leaves; if it cannot be, the answer is 500.
        await audit('entry.version_reveal', [ref('entry', revealed)], { version: revealed.version, environment: revealed.environment })
        return revealed
      },
      {
        auth: 'entries:reveal',
        params: EntryVersionParams,
        response: { 200: RevealedEntryVersionSchema, ...errorResponses(400, 404) },
        detail: {
          operationId: 'revealEntryVersion',
          summary: 'Reveal a previous value of an entry',
          description: `Answers carry Cache-Control: no-store. ${VERSION_404}`,
        },
      },
    )
    .post(
      '/:id/versions/:version/restore',
      async ({ auth, audit, params }) => {
        const entry = await history.restoreEntryVersion(auth.userId, params.id, params.version, versionAuthor(auth))
        await audit('entry.version_restore', [ref('entry', entry)], { version: params.version })
        return entry
      },
      {
        auth: 'entries:write',
        params: EntryVersionParams,
        response: { 200: EntrySchema, ...errorResponses(400, 404) },
        detail: {
          operationId: 'restoreEntryVersion',
          summary: 'Make a previous value the current one',
          description: `The restored value becomes a new version (the value replaced is kept too). 400 INVALID_VALUE when a group value no longer fits the category's fields. ${VERSION_404}`,
        },
      },
    )
}
