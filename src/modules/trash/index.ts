// /api/trash: what was deleted, kept for SVC_TRASH_DAYS days; restoring and purging.
// The rules (what an item holds, when it expires) are lifecycle/'s.
import { Elysia, t } from 'elysia'
import { authGuard } from '../../auth/guard'
import { routePrefix } from '../../auth/vault-mount'
import type { AppDeps } from '../../deps'
import { errorResponses, IdParams, NoContent } from '../../http/schemas'
import { RestoredTrashItemSchema, TrashItemSchema } from '../lifecycle/model'
import { TrashService } from '../lifecycle/service'

/** The trash item, and what it was (kind, record id, name), for an event. */
const trashItemRef = (item: { id: string; kind: string; name: string; recordId: string }) => ({
  kind: 'trash',
  id: item.id,
  name: `${item.kind} ${item.recordId} (${item.name})`,
})

/** A restored item's records back in place (ids; the item's own name on its record). */
function trashRecords(restored: { id: string; kind: string; name: string; recordId: string; restored: Record<string, string[]> }) {
  const kinds: Record<string, string> = { categories: 'category', entries: 'entry', twoFactor: 'twofa', envProjects: 'envproject', envFiles: 'envfile' }
  return [
    trashItemRef(restored),
    ...Object.entries(restored.restored).flatMap(([group, ids]) =>
      ids.map((id) => ({ kind: kinds[group] ?? group, id, name: id === restored.recordId ? restored.name : null })),
    ),
  ]
}

const TRASH_SCOPE_NOTE =
  "With an access key, the items of a kind need that kind's read scope to be seen (entries:read, categories:read, 2fa:read, envs:read) and its write scope to be restored (entries:write, categories:write, 2fa:write, envs:write: the scope that deleted it); a session sees and restores everything."

export function trashRoutes(deps: AppDeps) {
  const trash = new TrashService(deps.vaults, deps.now)
  return new Elysia({ prefix: routePrefix(deps, '/api/trash'), tags: ['Trash'] })
    .use(authGuard(deps))
    .get('/', ({ auth }) => trash.list(auth.userId, auth.scopes), {
      auth: 'any',
      response: { 200: t.Array(TrashItemSchema), ...errorResponses() },
      detail: {
        operationId: 'listTrash',
        summary: 'List what was deleted: what, when, by whom, until when (newest first)',
        description: `Deleted entries, categories (with their entries), two-factor tokens, env projects (with their files) and env files stay here for SVC_TRASH_DAYS (default 30) days, then are purged. ${TRASH_SCOPE_NOTE}`,
      },
    })
    .post(
      '/:id/restore',
      async ({ auth, audit, denyScope, params }) => {
        const restored = await trash.restore(auth.userId, params.id, auth.scopes, denyScope)
        await audit('trash.restore', trashRecords(restored), { kind: restored.kind, name: restored.name })
        return restored
      },
      {
        auth: 'any',
        params: IdParams,
        response: { 200: RestoredTrashItemSchema, ...errorResponses(404, 409) },
        detail: {
          operationId: 'restoreTrashItem',
          summary: 'Put a deleted item back, with its ids, versions and (for a category or project) what was deleted with it',
          description: `409 CATEGORY_EXISTS, ENTRY_EXISTS, ENV_PROJECT_EXISTS or ENV_FILE_EXISTS when something of that name lives there now; 409 TRASH_PARENT_MISSING when an entry's category or a file's project is gone (restore that first). 404 TRASH_ITEM_NOT_FOUND when missing, foreign or expired. ${TRASH_SCOPE_NOTE}`,
        },
      },
    )
    .delete(
      '/:id',
      async ({ auth, audit, params, set }) => {
        const item = await trash.purge(auth.userId, params.id)
        await audit('trash.purge', [trashItemRef(item)], { count: 1 })
        set.status = 204
      },
      {
        auth: 'session',
        params: IdParams,
        response: { 204: NoContent, ...errorResponses(404) },
        detail: {
          operationId: 'purgeTrashItem',
          summary: 'Purge one trash item now, for good (session only)',
          description: 'Its versions go with it. 404 TRASH_ITEM_NOT_FOUND when missing, foreign or expired.',
        },
      },
    )
    .delete(
      '/',
      async ({ auth, audit, set }) => {
        const items = await trash.purgeAll(auth.userId)
        // Nothing purged, nothing written: no event.
        if (items.length > 0) await audit('trash.purge', items.map(trashItemRef), { count: items.length, all: true })
        set.status = 204
      },
      {
        auth: 'session',
        response: { 204: NoContent, ...errorResponses() },
        detail: { operationId: 'emptyTrash', summary: 'Purge everything in the trash now, for good (session only)' },
      },
    )
}
