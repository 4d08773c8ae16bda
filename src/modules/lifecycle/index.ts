// Issue 20: version history (/api/entries/{id}/versions…, /api/envs/{id}/files/{fileId}/versions…,
// /api/2fa/{id}/versions…), the trash (/api/trash) and the background pass that purges expired
// trash and finds the users with a due-items webhook.
import { Elysia, t } from 'elysia'
import { authGuard } from '../../auth/guard'
import type { AppDeps } from '../../deps'
import { errorResponses, IdParams, NoContent } from '../../http/schemas'
import { EntrySchema } from '../entries/model'
import { EnvFileAnswer, EnvFileParams } from '../envs/model'
import { TwoFactorSchema } from '../two-factor/model'
import {
  EntryVersionParams,
  EnvFileVersionListAnswer,
  EnvFileVersionParams,
  RestoredTrashItemSchema,
  RevealedEntryVersionSchema,
  RevealedEnvFileVersionAnswer,
  RevealedTwoFactorVersionSchema,
  TrashItemSchema,
  VersionListSchema,
} from './model'
import { ref } from '../audit/service'
import { HistoryService, TrashService } from './service'
import { policyOf } from './trash'
import { versionAuthor } from './versions'
import { notifierOf } from '../account/notifications'

const NO_STORE = 'no-store'
const VERSION_404 = 'VERSION_NOT_FOUND when the version is not kept (any more); the record\'s own 404 when it is missing, foreign or in the trash.'

export function historyRoutes(deps: AppDeps) {
  const history = new HistoryService(deps.vaults, deps.now, policyOf(deps.config))
  return new Elysia({ tags: ['History'] })
    .use(authGuard(deps))
    .get('/api/entries/:id/versions', ({ auth, params }) => history.entryVersions(auth.userId, params.id), {
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
      '/api/entries/:id/versions/:version/reveal',
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
        detail: { operationId: 'revealEntryVersion', summary: 'Reveal a previous value of an entry', description: `Answers carry Cache-Control: no-store. ${VERSION_404}` },
      },
    )
    .post('/api/entries/:id/versions/:version/restore', async ({ auth, audit, params }) => {
      const entry = await history.restoreEntryVersion(auth.userId, params.id, params.version, versionAuthor(auth))
      await audit('entry.version_restore', [ref('entry', entry)], { version: params.version })
      return entry
    }, {
      auth: 'entries:write',
      params: EntryVersionParams,
      response: { 200: EntrySchema, ...errorResponses(400, 404) },
      detail: {
        operationId: 'restoreEntryVersion',
        summary: 'Make a previous value the current one',
        description: `The restored value becomes a new version (the value replaced is kept too). 400 INVALID_VALUE when a group value no longer fits the category's fields. ${VERSION_404}`,
      },
    })
    .get('/api/envs/:id/files/:fileId/versions', async ({ auth, params }) => ({ data: await history.envFileVersions(auth.userId, params.id, params.fileId) }), {
      auth: 'envs:read',
      params: EnvFileParams,
      response: { 200: EnvFileVersionListAnswer, ...errorResponses(404) },
      detail: { operationId: 'listEnvFileVersions', summary: "List an env file's previous contents, newest first (never a content)" },
    })
    .post(
      '/api/envs/:id/files/:fileId/versions/:version/reveal',
      async ({ auth, audit, params, set }) => {
        set.headers['cache-control'] = NO_STORE
        const revealed = await history.revealEnvFileVersion(auth.userId, params.id, params.fileId, params.version)
        await audit('envfile.version_reveal', [ref('envproject', { id: revealed.projectId }), ref('envfile', revealed, revealed.fileType)], { version: revealed.version })
        return { data: revealed }
      },
      {
        auth: 'envs:reveal',
        params: EnvFileVersionParams,
        response: { 200: RevealedEnvFileVersionAnswer, ...errorResponses(400, 404) },
        detail: { operationId: 'revealEnvFileVersion', summary: 'Reveal a previous content of an env file', description: `Answers carry Cache-Control: no-store. ${VERSION_404}` },
      },
    )
    .post(
      '/api/envs/:id/files/:fileId/versions/:version/restore',
      async ({ auth, audit, params }) => {
        const file = await history.restoreEnvFileVersion(auth.userId, params.id, params.fileId, params.version, versionAuthor(auth))
        await audit('envfile.version_restore', [ref('envproject', { id: params.id }), ref('envfile', file, file.fileType)], { version: params.version })
        return { data: file }
      },
      {
        auth: 'envs:write',
        params: EnvFileVersionParams,
        response: { 200: EnvFileAnswer, ...errorResponses(400, 404) },
        detail: { operationId: 'restoreEnvFileVersion', summary: 'Make a previous content the current one', description: `The restored content becomes a new version. ${VERSION_404}` },
      },
    )
    .get('/api/2fa/:id/versions', ({ auth, params }) => history.tokenVersions(auth.userId, params.id), {
      auth: '2fa:read',
      params: IdParams,
      response: { 200: VersionListSchema, ...errorResponses(404) },
      detail: { operationId: 'listTwoFactorTokenVersions', summary: "List a two-factor token's previous secrets, newest first (never a secret)" },
    })
    .post(
      '/api/2fa/:id/versions/:version/reveal',
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
          summary: "The current code of a previous secret",
          description: `As for the current secret, the secret itself is never answered: the code it makes now is. Answers carry Cache-Control: no-store. ${VERSION_404}`,
        },
      },
    )
    .post('/api/2fa/:id/versions/:version/restore', async ({ auth, audit, params }) => {
      const token = await history.restoreTokenVersion(auth.userId, params.id, params.version, versionAuthor(auth))
      await audit('twofa.version_restore', [ref('twofa', token, `${token.service} (${token.accountName})`)], { version: params.version })
      return token
    }, {
      auth: '2fa:write',
      params: EntryVersionParams,
      response: { 200: TwoFactorSchema, ...errorResponses(400, 404) },
      detail: { operationId: 'restoreTwoFactorTokenVersion', summary: 'Make a previous secret (and its code parameters) the current one', description: `The restored secret becomes a new version. ${VERSION_404}` },
    })
}

/** The trash item, and what it was (kind, record id, name), for an event. */
const trashItemRef = (item: { id: string; kind: string; name: string; recordId: string }) => ({ kind: 'trash', id: item.id, name: `${item.kind} ${item.recordId} (${item.name})` })

/** A restored item's records back in place (ids; the item's own name on its record). */
function trashRecords(restored: { id: string; kind: string; name: string; recordId: string; restored: Record<string, string[]> }) {
  const kinds: Record<string, string> = { categories: 'category', entries: 'entry', twoFactor: 'twofa', envProjects: 'envproject', envFiles: 'envfile' }
  return [
    trashItemRef(restored),
    ...Object.entries(restored.restored).flatMap(([group, ids]) => ids.map((id) => ({ kind: kinds[group] ?? group, id, name: id === restored.recordId ? restored.name : null }))),
  ]
}

const TRASH_SCOPE_NOTE =
  'With an access key, the items of a kind need that kind\'s read scope to be seen (entries:read, categories:read, 2fa:read, envs:read) and its write scope to be restored (entries:write, categories:write, 2fa:write, envs:write: the scope that deleted it); a session sees and restores everything.'

export function trashRoutes(deps: AppDeps) {
  const trash = new TrashService(deps.vaults, deps.now)
  return new Elysia({ prefix: '/api/trash', tags: ['Trash'] })
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
    .post('/:id/restore', async ({ auth, audit, denyScope, params }) => {
      const restored = await trash.restore(auth.userId, params.id, auth.scopes, denyScope)
      await audit('trash.restore', trashRecords(restored), { kind: restored.kind, name: restored.name })
      return restored
    }, {
      auth: 'any',
      params: IdParams,
      response: { 200: RestoredTrashItemSchema, ...errorResponses(404, 409) },
      detail: {
        operationId: 'restoreTrashItem',
        summary: 'Put a deleted item back, with its ids, versions and (for a category or project) what was deleted with it',
        description: `409 CATEGORY_EXISTS, ENTRY_EXISTS, ENV_PROJECT_EXISTS or ENV_FILE_EXISTS when something of that name lives there now; 409 TRASH_PARENT_MISSING when an entry's category or a file's project is gone (restore that first). 404 TRASH_ITEM_NOT_FOUND when missing, foreign or expired. ${TRASH_SCOPE_NOTE}`,
      },
    })
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
        detail: { operationId: 'purgeTrashItem', summary: 'Purge one trash item now, for good (session only)', description: 'Its versions go with it. 404 TRASH_ITEM_NOT_FOUND when missing, foreign or expired.' },
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

/** A full pass over every vault on disk: long enough apart, and late enough after start, that idle memory and start-up stay as they were. */
const SWEEP_MS = 6 * 3_600_000
const FIRST_SWEEP_MS = 60_000

/**
 * The background pass over every vault on disk: purges expired trash items (durably) and finds the
 * users with a due-items webhook. Requests purge their own vault's expired items first anyway.
 */
export function lifecycleJobs(deps: AppDeps, timing = { firstMs: FIRST_SWEEP_MS, everyMs: SWEEP_MS }) {
  const trash = new TrashService(deps.vaults, deps.now)
  const notifier = notifierOf(deps)
  const timers: ReturnType<typeof setTimeout>[] = []
  const sweep = () => {
    trash.sweepAll(deps.store).catch((error) => deps.log(`error: trash purge failed: ${(error as Error)?.message ?? error}`))
    notifier.scan().catch((error) => deps.log(`error: webhook scan failed: ${(error as Error)?.message ?? error}`))
  }
  return new Elysia({ name: 'lifecycle.jobs' })
    .onStart(() => {
      timers.push(setTimeout(sweep, timing.firstMs), setInterval(sweep, timing.everyMs))
      for (const timer of timers) timer.unref?.()
    })
    .onStop(() => timers.forEach(clearTimeout))
}
