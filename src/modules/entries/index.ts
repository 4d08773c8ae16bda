// /api/entries
import { Elysia, t } from 'elysia'
import { authGuard, type GuardDeps } from '../../auth/guard'
import { routePrefix } from '../../auth/vault-mount'
import { paginate, PAGE_HEADERS, setPageHeaders } from '../../http/pagination'
import { errorResponses, IdParams, NoContent, withResponseHeaders } from '../../http/schemas'
import type { Vaults } from '../vault-access'
import type { Config } from '../../config'
import { versionAuthor } from '../lifecycle/versions'
import { policyOf } from '../lifecycle/trash'
import { CreateEntryBody, EntryListItemSchema, EntrySchema, ListEntriesQuery, RevealedEntrySchema, UpdateEntryBody } from './model'
import { ref } from '../audit/service'
import { EntryService } from './service'

export function entryRoutes(deps: GuardDeps & { vaults: Vaults; now: () => number; config: Partial<Pick<Config, 'historyVersions' | 'trashMs'>> }) {
  const entries = new EntryService(deps.vaults, deps.now, policyOf(deps.config))
  return new Elysia({ prefix: routePrefix(deps, '/api/entries'), tags: ['Entries'] })
    .use(authGuard(deps))
    .get(
      '/',
      async ({ auth, query, set, request }) => {
        const page = paginate(await entries.find(auth.userId, query), query)
        setPageHeaders(set.headers, request, page)
        return page.items
      },
      {
        auth: 'entries:read',
        query: ListEntriesQuery,
        response: { 200: withResponseHeaders(t.Array(EntryListItemSchema), PAGE_HEADERS), ...errorResponses(400) },
        detail: {
          operationId: 'listEntries',
          summary: 'List your key entries, each with its category (never a value)',
          description:
            'In creation order. Without `limit` and `cursor`, every entry (that the filters let through). With `limit` (1-1000), one page; when more follow, `X-Next-Cursor` holds the cursor of the next page and `Link` its URL (rel="next"). A cursor that this list did not give out is 400 VALIDATION_ERROR. `due=N`: only the entries that expire or are due for rotation within N days, or already are (dueStatus expired or rotation_due).',
        },
      },
    )
    .post(
      '/',
      async ({ auth, audit, body, set }) => {
        const entry = await entries.create(auth.userId, body, versionAuthor(auth))
        await audit('entry.create', [ref('entry', entry)], { categoryId: entry.categoryId, environment: entry.environment })
        set.status = 201
        return entry
      },
      {
        auth: 'entries:write',
        body: CreateEntryBody,
        response: { 201: EntrySchema, ...errorResponses(400, 404, 409, 413) },
        detail: {
          operationId: 'createEntry',
          summary: 'Create a key entry',
          description:
            'The value is encrypted at once. A group value is a string holding a JSON object of string values (400 INVALID_VALUE otherwise; only the declared fieldDefinitions when the category has them). 404 CATEGORY_NOT_FOUND for a missing or foreign category. 409 ENTRY_EXISTS when the category already has an entry of this name and environment.',
        },
      },
    )
    .get('/:id', ({ auth, params }) => entries.get(auth.userId, params.id), {
      auth: 'entries:read',
      params: IdParams,
      response: { 200: EntrySchema, ...errorResponses(404) },
      detail: { operationId: 'getEntry', summary: 'Get a key entry (never its value)' },
    })
    .put(
      '/:id',
      async ({ auth, audit, params, body }) => {
        const entry = await entries.update(auth.userId, params.id, body, versionAuthor(auth))
        await audit('entry.update', [ref('entry', entry)], { fields: Object.keys(body).sort() })
        return entry
      },
      {
        auth: 'entries:write',
        params: IdParams,
        body: UpdateEntryBody,
        response: { 200: EntrySchema, ...errorResponses(400, 404, 409, 413) },
        detail: {
          operationId: 'updateEntry',
          summary: 'Update a key entry; only the fields sent change',
          description:
            'A new value is re-encrypted; the value it had is kept as a version (GET /api/entries/{id}/versions) and rotatedAt is set. `expiresAt: null` and `rotateEveryDays: null` clear them. `environment: null` clears it. `categoryId` moves the entry to another category of the same keyType (404 CATEGORY_NOT_FOUND when missing or foreign). 409 ENTRY_EXISTS when another entry has the resulting category, name and environment.',
        },
      },
    )
    .delete(
      '/:id',
      async ({ auth, audit, params, set }) => {
        const entry = await entries.get(auth.userId, params.id)
        await entries.remove(auth.userId, params.id, versionAuthor(auth))
        await audit('entry.delete', [ref('entry', entry)])
        set.status = 204
      },
      {
        auth: 'entries:write',
        params: IdParams,
        response: { 204: NoContent, ...errorResponses(404) },
        detail: {
          operationId: 'deleteEntry',
          summary: 'Delete a key entry (it goes to the trash)',
          description:
            'The entry disappears from every list, detail, stats and export at once, and is kept in the trash (GET /api/trash) for SVC_TRASH_DAYS days.',
        },
      },
    )
    .post(
      '/:id/reveal',
      async ({ auth, audit, params, set }) => {
        // Set first, so that the 404 answer is not cached either.
        set.headers['cache-control'] = 'no-store'
        const revealed = await entries.reveal(auth.userId, params.id)
        // Recorded on disk before the value leaves; if it cannot be, the answer is 500.
        await audit('entry.reveal', [ref('entry', revealed)], { environment: revealed.environment })
        return revealed
      },
      {
        auth: 'entries:reveal',
        params: IdParams,
        response: { 200: RevealedEntrySchema, ...errorResponses(404) },
        detail: {
          operationId: 'revealEntry',
          summary: 'Reveal the plaintext value of a key entry',
          description:
            'The only operation that returns an entry value: a string for a simple category, an object of field name to value for a group. 404 ENTRY_NOT_FOUND when missing, not owned or not decryptable. Answers carry Cache-Control: no-store.',
        },
      },
    )
}
