// /api/entries
import { Elysia, t } from 'elysia'
import { authGuard, type GuardDeps } from '../../auth/guard'
import { errorResponses, IdParams, NoContent } from '../../http/schemas'
import type { Vaults } from '../vault-access'
import { ref } from '../audit/service'
import { CreateEntryBody, EntryListItemSchema, EntrySchema, RevealedEntrySchema, UpdateEntryBody } from './model'
import { EntryService } from './service'

export function entryRoutes(deps: GuardDeps & { vaults: Vaults; now: () => number }) {
  const entries = new EntryService(deps.vaults, deps.now)
  return new Elysia({ prefix: '/api/entries', tags: ['Entries'] })
    .use(authGuard(deps))
    .get('/', ({ auth }) => entries.list(auth.userId), {
      auth: 'entries:read',
      response: { 200: t.Array(EntryListItemSchema), ...errorResponses() },
      detail: { operationId: 'listEntries', summary: 'List your key entries, each with its category (never a value)' },
    })
    .post(
      '/',
      async ({ auth, audit, body, set }) => {
        const entry = await entries.create(auth.userId, body)
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
    .put('/:id', async ({ auth, audit, params, body }) => {
      const entry = await entries.update(auth.userId, params.id, body)
      await audit('entry.update', [ref('entry', entry)], { fields: Object.keys(body).sort() })
      return entry
    }, {
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
      async ({ auth, audit, params, set }) => {
        const entry = await entries.get(auth.userId, params.id)
        await entries.remove(auth.userId, params.id)
        await audit('entry.delete', [ref('entry', entry)])
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
