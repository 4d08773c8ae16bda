import { t } from 'elysia'
import { MAX_NAME_LENGTH } from '../../domain/rules'
import { component, Integer, strictObject, Timestamp, withProperties } from '../../http/schemas'

/** The largest env file content, in UTF-8 bytes (docs/api.md, "Limits"). */
export const MAX_ENV_FILE_BYTES = 1024 * 1024

const Name = t.String({ minLength: 1, maxLength: MAX_NAME_LENGTH })
const Description = t.String({ maxLength: 2000 })
const FileTypeSchema = component(
  'EnvFileType',
  t.Union([t.Literal('env'), t.Literal('env.local'), t.Literal('env.production'), t.Literal('env.development')], {
    error: 'must be one of env, env.local, env.production, env.development',
  }),
)
const FileCount = Integer({ minimum: 0, description: 'How many files the project holds' })

export const EnvProjectListItemSchema = component(
  'EnvProjectListItem',
  t.Object({
    id: t.String(),
    name: t.String(),
    description: t.String(),
    fileCount: FileCount,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
)

export const EnvProjectSchema = component(
  'EnvProject',
  t.Object({
    id: t.String(),
    userId: t.String(),
    name: t.String(),
    description: t.String(),
    fileCount: FileCount,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
)

export const EnvFileItemSchema = component(
  'EnvFile',
  t.Object({
    id: t.String(),
    projectId: t.String(),
    fileType: FileTypeSchema,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
)

export const EnvProjectDetailSchema = component('EnvProjectDetail', withProperties(EnvProjectSchema, { files: t.Array(EnvFileItemSchema) }))

export const RevealedEnvFileSchema = component(
  'RevealedEnvFile',
  t.Object({
    id: t.String(),
    projectId: t.String(),
    fileType: FileTypeSchema,
    content: t.String({ description: 'The plaintext of the file' }),
  }),
)

/** Every env project answer sits inside `{ data: … }` (docs/api.md); `name` is its component name. */
export const wrapped = <S extends Parameters<typeof t.Object>[0][string]>(name: string, schema: S) => component(name, t.Object({ data: schema }))

// Unknown query parameters (cache busters and the like) are ignored, unlike unknown body fields.
export const ListEnvProjectsQuery = t.Object(
  { search: t.Optional(t.String({ description: 'Case-insensitive substring of the project name' })) },
  { additionalProperties: true },
)

export const CreateEnvProjectBody = component(
  'CreateEnvProjectBody',
  strictObject({
    name: Name,
    description: t.Optional(Description),
  }),
)

export const UpdateEnvProjectBody = component(
  'UpdateEnvProjectBody',
  strictObject({
    name: t.Optional(Name),
    description: t.Optional(Description),
  }),
)

export const UpsertEnvFileBody = component(
  'UpsertEnvFileBody',
  strictObject({
    fileType: FileTypeSchema,
    content: t.String({ maxLength: MAX_ENV_FILE_BYTES, description: 'The plaintext of the file; may be empty; at most 1 MiB' }),
  }),
)

export const EnvFileParams = t.Object({ id: t.String(), fileId: t.String() })

export type CreateEnvProjectInput = typeof CreateEnvProjectBody.static
export type UpdateEnvProjectInput = typeof UpdateEnvProjectBody.static
export type UpsertEnvFileInput = typeof UpsertEnvFileBody.static

// The answers, each wrapped once (a component name belongs to one schema).
export const EnvProjectListAnswer = wrapped('EnvProjectList', t.Array(EnvProjectListItemSchema))
export const EnvProjectAnswer = wrapped('EnvProjectAnswer', EnvProjectSchema)
export const EnvProjectDetailAnswer = wrapped('EnvProjectDetailAnswer', EnvProjectDetailSchema)
export const EnvFileAnswer = wrapped('EnvFileAnswer', EnvFileItemSchema)
export const RevealedEnvFileAnswer = wrapped('RevealedEnvFileAnswer', RevealedEnvFileSchema)
