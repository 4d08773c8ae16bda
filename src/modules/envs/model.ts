import { t } from 'elysia'
import { strictObject, Timestamp, withProperties } from '../../http/schemas'

/** The largest env file content, in UTF-8 bytes (docs/api.md, "Limits"). */
export const MAX_ENV_FILE_BYTES = 1024 * 1024

const Name = t.String({ minLength: 1, maxLength: 200 })
const Description = t.String({ maxLength: 2000 })
const FileTypeSchema = t.Union(
  [t.Literal('env'), t.Literal('env.local'), t.Literal('env.production'), t.Literal('env.development')],
  { error: 'must be one of env, env.local, env.production, env.development' },
)

export const EnvProjectListItemSchema = t.Object({
  id: t.String(),
  name: t.String(),
  description: t.String(),
  fileCount: t.Number(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
})

export const EnvProjectSchema = t.Object({
  id: t.String(),
  userId: t.String(),
  name: t.String(),
  description: t.String(),
  fileCount: t.Number(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
})

export const EnvFileItemSchema = t.Object({
  id: t.String(),
  projectId: t.String(),
  fileType: FileTypeSchema,
  createdAt: Timestamp,
  updatedAt: Timestamp,
})

export const EnvProjectDetailSchema = withProperties(EnvProjectSchema, { files: t.Array(EnvFileItemSchema) })

export const RevealedEnvFileSchema = t.Object({
  id: t.String(),
  projectId: t.String(),
  fileType: FileTypeSchema,
  content: t.String({ description: 'The plaintext of the file' }),
})

/** Every env project answer sits inside `{ data: … }` (docs/api.md). */
export const wrapped = <S extends Parameters<typeof t.Object>[0][string]>(schema: S) => t.Object({ data: schema })

// Unknown query parameters (cache busters and the like) are ignored, unlike unknown body fields.
export const ListEnvProjectsQuery = t.Object(
  { search: t.Optional(t.String({ description: 'Case-insensitive substring of the project name' })) },
  { additionalProperties: true },
)

export const CreateEnvProjectBody = strictObject({
  name: Name,
  description: t.Optional(Description),
})

export const UpdateEnvProjectBody = strictObject({
  name: t.Optional(Name),
  description: t.Optional(Description),
})

export const UpsertEnvFileBody = strictObject({
  fileType: FileTypeSchema,
  content: t.String({ maxLength: MAX_ENV_FILE_BYTES, description: 'The plaintext of the file; may be empty; at most 1 MiB' }),
})

export const EnvFileParams = t.Object({ id: t.String(), fileId: t.String() })

export type CreateEnvProjectInput = typeof CreateEnvProjectBody.static
export type UpdateEnvProjectInput = typeof UpdateEnvProjectBody.static
export type UpsertEnvFileInput = typeof UpsertEnvFileBody.static
