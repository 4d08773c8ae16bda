// /api/entries
import { Elysia, t } from 'elysia'
import { authGuard, type GuardDeps } from '../../auth/guard'
import { paginate, PAGE_HEADERS, setPageHeaders } from '../../http/pagination'
import { errorResponses, IdParams, NoContent, withResponseHeaders } from '../../http/schemas'
import type { Vaults } from '../vault-access'
import { CreateEntryBody, EntryListItemSchema, ListEntriesQuery, EntrySchema, RevealedEntrySchema, UpdateEntryBody } from './model'
import { EntryService } from './service'

export function entryRoutes(deps: GuardDeps & { vaults: Vaults; now: () => number }) {
  const entries = new EntryService(deps.vaults, deps.now)
  return new Elysia({ prefix: '/api/entries', tags: ['Entries'] })
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
            'In creation order. Without `limit` and `cursor`, every entry (that the filters let through). With `limit` (1-1000), one page; when more follow, `X-Next-Cursor` holds the cursor of the next page and `Link` its URL (rel="next"). A cursor that this list did not give out is 400 VALIDATION_ERROR.',
        },
      },
    )
    .post(
      '/',
      async ({ auth, body, set }) => {
        const entry = await entries.create(auth.userId, body)
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
    .put('/:id', ({ auth, params, body }) => entries.update(auth.userId, params.id, body), {
      auth: 'entries:write',
      params: IdParams,
      body: UpdateEntryBody,
      response: { 200: EntrySchema, ...errorResponses(400, 404, 409, 413) },
      detail: {
        operationId: 'updateEntry',
        summary: 'Update a key entry; only the fields sent change',
        description:
          'A new value is re-encrypted. `environment: null` clears it. `categoryId` moves the entry to another category of the same keyType (404 CATEGORY_NOT_FOUND when missing or foreign). 409 ENTRY_EXISTS when another entry has the resulting category, name and environment.',
      },
    })
    .delete(
      '/:id',
      async ({ auth, params, set }) => {
        await entries.remove(auth.userId, params.id)
        set.status = 204
      },
      {
        auth: 'entries:write',
        params: IdParams,
        response: { 204: NoContent, ...errorResponses(404) },
        detail: { operationId: 'deleteEntry', summary: 'Delete a key entry' },
      },
    )
    .post(
      '/:id/reveal',
      ({ auth, params, set }) => {
        // Set first, so that the 404 answer is not cached either.
        set.headers['cache-control'] = 'no-store'
        return entries.reveal(auth.userId, params.id)
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
