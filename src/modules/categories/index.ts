// /api/categories
import { Elysia, t } from 'elysia'
import { authGuard, type GuardDeps } from '../../auth/guard'
import { routePrefix } from '../../auth/vault-mount'
import { errorResponses, IdParams, NoContent } from '../../http/schemas'
import type { Vaults } from '../vault-access'
import { ref } from '../audit/service'
import { CategorySchema, CreateCategoryBody, UpdateCategoryBody } from './model'
import { CategoryService } from './service'
import type { Config } from '../../config'
import { policyOf } from '../lifecycle/trash'
import { versionAuthor } from '../lifecycle/versions'

export function categoryRoutes(deps: GuardDeps & { vaults: Vaults; now: () => number; config: Partial<Pick<Config, 'historyVersions' | 'trashMs'>> }) {
  const categories = new CategoryService(deps.vaults, deps.now, policyOf(deps.config))
  return new Elysia({ prefix: routePrefix(deps, '/api/categories'), tags: ['Categories'] })
    .use(authGuard(deps))
    .get('/', ({ auth }) => categories.list(auth.userId), {
      auth: 'categories:read',
      response: { 200: t.Array(CategorySchema), ...errorResponses() },
      detail: { operationId: 'listCategories', summary: 'List your key categories' },
    })
    .post(
      '/',
      async ({ auth, audit, body, set }) => {
        const category = await categories.create(auth.userId, body)
        await audit('category.create', [ref('category', category)], { keyType: category.keyType })
        set.status = 201
        return category
      },
      {
        auth: 'categories:write',
        body: CreateCategoryBody,
        response: { 201: CategorySchema, ...errorResponses(400, 409, 413) },
        detail: {
          operationId: 'createCategory',
          summary: 'Create a key category',
          description:
            'A simple category needs envVarName (400 CATEGORY_SIMPLE_REQUIRES_ENV_VAR). 409 CATEGORY_EXISTS when a category of this name (case-insensitive) and keyType exists.',
        },
      },
    )
    .get('/:id', ({ auth, params }) => categories.get(auth.userId, params.id), {
      auth: 'categories:read',
      params: IdParams,
      response: { 200: CategorySchema, ...errorResponses(404) },
      detail: { operationId: 'getCategory', summary: 'Get a key category' },
    })
    .put(
      '/:id',
      async ({ auth, audit, params, body }) => {
        const category = await categories.update(auth.userId, params.id, body)
        await audit('category.update', [ref('category', category)], { fields: Object.keys(body).sort() })
        return category
      },
      {
        auth: 'categories:write',
        params: IdParams,
        body: UpdateCategoryBody,
        response: { 200: CategorySchema, ...errorResponses(400, 404, 409, 413) },
        detail: {
          operationId: 'updateCategory',
          summary: 'Update a key category; only the fields sent change',
          description:
            'keyType changes only while the category has no entries (409 CATEGORY_NOT_EMPTY). 409 CATEGORY_EXISTS when another category has the resulting name (case-insensitive) and keyType.',
        },
      },
    )
    .delete(
      '/:id',
      async ({ auth, audit, params, set }) => {
        const category = await categories.get(auth.userId, params.id)
        await categories.remove(auth.userId, params.id, versionAuthor(auth))
        await audit('category.delete', [ref('category', category)])
        set.status = 204
      },
      {
        auth: 'categories:write',
        params: IdParams,
        response: { 204: NoContent, ...errorResponses(404) },
        detail: {
          operationId: 'deleteCategory',
          summary: 'Delete a key category and all of its entries (they go to the trash together)',
          description: 'Restoring the trash item (POST /api/trash/{id}/restore) brings the category back with the entries deleted with it.',
        },
      },
    )
}
