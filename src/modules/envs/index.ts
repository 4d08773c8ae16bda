// /api/envs: env projects and their files. Every answer sits inside `{ data: … }` (docs/api.md).
import { Elysia } from 'elysia'
import { authGuard, type GuardDeps } from '../../auth/guard'
import { routePrefix } from '../../auth/vault-mount'
import { errorResponses, IdParams, NoContent } from '../../http/schemas'
import type { Vaults } from '../vault-access'
import { ref } from '../audit/service'
import {
  CreateEnvProjectBody,
  EnvFileAnswer,
  EnvFileParams,
  EnvProjectAnswer,
  EnvProjectDetailAnswer,
  EnvProjectListAnswer,
  ListEnvProjectsQuery,
  RevealedEnvFileAnswer,
  UpdateEnvProjectBody,
  UpsertEnvFileBody,
} from './model'
import { EnvProjectService } from './service'
import type { Config } from '../../config'
import { policyOf } from '../lifecycle/trash'
import { versionAuthor } from '../lifecycle/versions'

export function envRoutes(deps: GuardDeps & { vaults: Vaults; now: () => number; config: Partial<Pick<Config, 'historyVersions' | 'trashMs'>> }) {
  const projects = new EnvProjectService(deps.vaults, deps.now, policyOf(deps.config))
  return new Elysia({ prefix: routePrefix(deps, '/api/envs'), tags: ['Env projects'] })
    .use(authGuard(deps))
    .get('/', async ({ auth, query }) => ({ data: await projects.list(auth.userId, query.search) }), {
      auth: 'envs:read',
      query: ListEnvProjectsQuery,
      response: { 200: EnvProjectListAnswer, ...errorResponses(400) },
      detail: {
        operationId: 'listEnvProjects',
        summary: 'List your env projects',
        description: '`search` keeps the projects whose name contains it (case-insensitive).',
      },
    })
    .post(
      '/',
      async ({ auth, audit, body, set }) => {
        const project = await projects.create(auth.userId, body)
        await audit('envproject.create', [ref('envproject', project)])
        set.status = 201
        return { data: project }
      },
      {
        auth: 'envs:write',
        body: CreateEnvProjectBody,
        response: { 201: EnvProjectAnswer, ...errorResponses(400, 409, 413) },
        detail: {
          operationId: 'createEnvProject',
          summary: 'Create an env project',
          description: '409 ENV_PROJECT_EXISTS when a project of this name (case-insensitive) exists.',
        },
      },
    )
    .get('/:id', async ({ auth, params }) => ({ data: await projects.get(auth.userId, params.id) }), {
      auth: 'envs:read',
      params: IdParams,
      response: { 200: EnvProjectDetailAnswer, ...errorResponses(404) },
      detail: { operationId: 'getEnvProject', summary: 'Get an env project with its files (never their content)' },
    })
    .put(
      '/:id',
      async ({ auth, audit, params, body }) => {
        const project = await projects.update(auth.userId, params.id, body)
        await audit('envproject.update', [ref('envproject', project)], { fields: Object.keys(body).sort() })
        return { data: project }
      },
      {
        auth: 'envs:write',
        params: IdParams,
        body: UpdateEnvProjectBody,
        response: { 200: EnvProjectAnswer, ...errorResponses(400, 404, 409, 413) },
        detail: {
          operationId: 'updateEnvProject',
          summary: 'Update an env project; only the fields sent change',
          description: '409 ENV_PROJECT_EXISTS when another project has this name (case-insensitive).',
        },
      },
    )
    .delete(
      '/:id',
      async ({ auth, audit, params, set }) => {
        const project = await projects.get(auth.userId, params.id)
        await projects.remove(auth.userId, params.id, versionAuthor(auth))
        await audit('envproject.delete', [ref('envproject', project), ...project.files.map((file) => ref('envfile', file, file.fileType))])
        set.status = 204
      },
      {
        auth: 'envs:write',
        params: IdParams,
        response: { 204: NoContent, ...errorResponses(404) },
        detail: { operationId: 'deleteEnvProject', summary: 'Delete an env project and all of its files (they go to the trash together)' },
      },
    )
    .post(
      '/:id/files',
      async ({ auth, audit, params, body, set }) => {
        const { file, created } = await projects.upsertFile(auth.userId, params.id, body, versionAuthor(auth))
        await audit(created ? 'envfile.create' : 'envfile.update', [ref('envproject', { id: params.id }), ref('envfile', file, file.fileType)])
        set.status = created ? 201 : 200
        return { data: file }
      },
      {
        auth: 'envs:write',
        params: IdParams,
        body: UpsertEnvFileBody,
        response: { 200: EnvFileAnswer, 201: EnvFileAnswer, ...errorResponses(400, 404, 413) },
        detail: {
          operationId: 'saveEnvFile',
          summary: 'Store the file of a fileType',
          description:
            '201 when the file is created; 200 when the project already had a file of that fileType, whose content is replaced (it keeps its id; the content it had is kept as a version).',
        },
      },
    )
    .delete(
      '/:id/files/:fileId',
      async ({ auth, audit, params, set }) => {
        const project = await projects.get(auth.userId, params.id)
        await projects.removeFile(auth.userId, params.id, params.fileId, versionAuthor(auth))
        const file = project.files.find((f) => f.id === params.fileId)
        await audit('envfile.delete', [ref('envproject', project), ref('envfile', { id: params.fileId }, file?.fileType ?? null)])
        set.status = 204
      },
      {
        auth: 'envs:write',
        params: EnvFileParams,
        response: { 204: NoContent, ...errorResponses(404) },
        detail: { operationId: 'deleteEnvFile', summary: 'Delete an env file (it goes to the trash)' },
      },
    )
    .post(
      '/:id/files/:fileId/reveal',
      async ({ auth, audit, params, set }) => {
        set.headers['cache-control'] = 'no-store'
        const file = await projects.revealFile(auth.userId, params.id, params.fileId)
        // Recorded on disk before the content leaves; if it cannot be, the answer is 500.
        await audit('envfile.read', [ref('envproject', { id: params.id }), ref('envfile', file, file.fileType)])
        return { data: file }
      },
      {
        auth: 'envs:reveal',
        params: EnvFileParams,
        response: { 200: RevealedEnvFileAnswer, ...errorResponses(404) },
        detail: {
          operationId: 'revealEnvFile',
          summary: 'Reveal the plaintext content of an env file',
          description: 'Answers carry Cache-Control: no-store. 404 when the content cannot be decrypted.',
        },
      },
    )
}
