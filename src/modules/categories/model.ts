import { t } from 'elysia'
import { ICON_SLUG_PATTERN, MAX_NAME_LENGTH, VARIABLE_NAME_PATTERN } from '../../domain/rules'
import { component, strictObject, Timestamp } from '../../http/schemas'

const Name = t.String({ minLength: 1, maxLength: MAX_NAME_LENGTH })
const EnvVarName = t.String({ maxLength: MAX_NAME_LENGTH, pattern: VARIABLE_NAME_PATTERN, error: `must match ${VARIABLE_NAME_PATTERN}` })
const Icon = t.String({ pattern: ICON_SLUG_PATTERN, error: 'must be a slug: a-z, 0-9 and -, 1 to 64 characters' })
const Description = t.String({ maxLength: 2000 })
const FieldDefinitions = t.Array(
  t.String({ maxLength: MAX_NAME_LENGTH, pattern: VARIABLE_NAME_PATTERN, error: `field names must match ${VARIABLE_NAME_PATTERN}` }),
  {
    maxItems: 200,
    description: 'Ordered field names of a group category',
  },
)
const nullable = <T extends Parameters<typeof t.Union>[0][number]>(schema: T) => t.Union([schema, t.Null()])

export const KeyTypeSchema = component('KeyType', t.Union([t.Literal('simple'), t.Literal('group'), t.Literal('ssh'), t.Literal('json')]))

export const CategorySchema = component(
  'Category',
  t.Object({
    id: t.String(),
    userId: t.String(),
    name: t.String(),
    keyType: KeyTypeSchema,
    envVarName: t.Union([t.String(), t.Null()]),
    icon: t.Union([t.String(), t.Null()]),
    description: t.Union([t.String(), t.Null()]),
    fieldDefinitions: t.Union([t.Array(t.String()), t.Null()]),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
)

export const CreateCategoryBody = component(
  'CreateCategoryBody',
  strictObject({
    name: Name,
    keyType: t.Union([t.Literal('simple'), t.Literal('group')], { error: 'must be "simple" or "group"' }),
    envVarName: t.Optional(nullable(EnvVarName)),
    icon: t.Optional(nullable(Icon)),
    description: t.Optional(nullable(Description)),
    fieldDefinitions: t.Optional(nullable(FieldDefinitions)),
  }),
)

export const UpdateCategoryBody = component(
  'UpdateCategoryBody',
  strictObject({
    name: t.Optional(Name),
    keyType: t.Optional(t.Union([t.Literal('simple'), t.Literal('group')], { error: 'must be "simple" or "group"' })),
    envVarName: t.Optional(nullable(EnvVarName)),
    icon: t.Optional(nullable(Icon)),
    description: t.Optional(nullable(Description)),
    fieldDefinitions: t.Optional(nullable(FieldDefinitions)),
  }),
)

export type CreateCategoryInput = typeof CreateCategoryBody.static
export type UpdateCategoryInput = typeof UpdateCategoryBody.static
