import { t } from 'elysia'
import { MAX_NAME_LENGTH } from '../../domain/rules'
import { PageQuery } from '../../http/pagination'
import { component, Integer, strictObject, Timestamp, withProperties } from '../../http/schemas'
import { KeyTypeSchema } from '../categories/model'
import { MAX_VALUE_BYTES } from './values'

const Name = t.String({ minLength: 1, maxLength: MAX_NAME_LENGTH, description: 'The project the entry is for' })
const Notes = t.String({ maxLength: 2000 })
// The byte limit (64 KiB of UTF-8) is checked by the service; this bound keeps the schema honest.
const Value = t.String({
  maxLength: MAX_VALUE_BYTES,
  description: 'Plaintext, encrypted server-side. For a group category: a string holding a JSON object of string values.',
})
export const EnvironmentSchema = component(
  'Environment',
  t.Union([t.Literal('development'), t.Literal('staging'), t.Literal('production')], {
    error: 'must be one of development, staging, production',
  }),
)
const nullable = <T extends Parameters<typeof t.Union>[0][number]>(schema: T) => t.Union([schema, t.Null()])

// Expiry and rotation reminders.
export const DueStatusSchema = component(
  'DueStatus',
  t.Union([t.Literal('ok'), t.Literal('due_soon'), t.Literal('expired'), t.Literal('rotation_due')], {
    description:
      'expired: expiresAt has passed; rotation_due: rotateEveryDays since rotatedAt (or createdAt) have passed; due_soon: either within 14 days; else ok',
  }),
)
const EntryDueFields = {
  expiresAt: t.Union([Timestamp, t.Null()], { description: 'When the key expires (null: never)' }),
  rotateEveryDays: t.Union([Integer({ minimum: 1, maximum: 3650 }), t.Null()], { description: 'Wanted rotation period in days (null: none)' }),
  rotatedAt: t.Union([Timestamp, t.Null()], { description: 'When the value last changed (null: never since it was created)' }),
  dueStatus: DueStatusSchema,
}
export const ExpiresAtInput = t.Union([t.String({ format: 'date-time', description: 'ISO 8601 timestamp' }), t.Null()])
// TypeBox's integer, not Elysia's t.Integer: that one coerces, and a coercing body schema turns
// the parser's malformed-JSON marker into an object (VALIDATION_ERROR instead of INVALID_JSON).
const RotateEveryDaysInput = t.Union([Integer({ minimum: 1, maximum: 3650 }), t.Null()])

export const EntrySchema = component(
  'Entry',
  t.Object({
    id: t.String(),
    categoryId: t.String(),
    name: t.String(),
    environment: t.Union([EnvironmentSchema, t.Null()]),
    notes: t.Union([t.String(), t.Null()]),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    ...EntryDueFields,
  }),
)

export const EntryCategorySchema = component(
  'EntryCategory',
  t.Object(
    {
      name: t.String(),
      keyType: KeyTypeSchema,
      envVarName: t.Union([t.String(), t.Null()]),
      icon: t.Union([t.String(), t.Null()]),
    },
    { description: 'The category of an entry, as the entry list shows it' },
  ),
)

export const EntryListItemSchema = component(
  'EntryListItem',
  withProperties(EntrySchema, {
    category: EntryCategorySchema,
    fields: t.Optional(
      t.Array(t.String(), {
        description:
          "A group entry's field names (never values): how many variables it holds. Absent for a simple entry and for entries stored before it was kept",
      }),
    ),
  }),
)

export const RevealedEntrySchema = component(
  'RevealedEntry',
  t.Object({
    id: t.String(),
    name: t.String(),
    value: t.Union([t.String(), t.Record(t.String(), t.String())], {
      description: 'A string for a simple category; an object of field name to value for a group category',
    }),
    environment: t.Union([EnvironmentSchema, t.Null()]),
  }),
)

export const CreateEntryBody = component(
  'CreateEntryBody',
  strictObject({
    categoryId: t.String({ minLength: 1, maxLength: 200 }),
    name: Name,
    value: Value,
    environment: t.Optional(nullable(EnvironmentSchema)),
    notes: t.Optional(nullable(Notes)),
    expiresAt: t.Optional(ExpiresAtInput),
    rotateEveryDays: t.Optional(RotateEveryDaysInput),
  }),
)

export const UpdateEntryBody = component(
  'UpdateEntryBody',
  strictObject({
    categoryId: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'Another category of the same keyType' })),
    name: t.Optional(Name),
    value: t.Optional(Value),
    environment: t.Optional(nullable(EnvironmentSchema)),
    notes: t.Optional(nullable(Notes)),
    expiresAt: t.Optional(ExpiresAtInput),
    rotateEveryDays: t.Optional(RotateEveryDaysInput),
  }),
)

export type CreateEntryInput = typeof CreateEntryBody.static
export type UpdateEntryInput = typeof UpdateEntryBody.static

export const ListEntriesQuery = t.Object({
  ...PageQuery,
  due: t.Optional(
    t.Integer({ minimum: 0, maximum: 3650, description: 'Only entries that expire or are due for rotation within this many days (or already are)' }),
  ),
  categoryId: t.Optional(t.String({ maxLength: 200, description: 'Only the entries of this category' })),
  environment: t.Optional(EnvironmentSchema),
  name: t.Optional(t.String({ maxLength: 200, description: 'Only the entries of exactly this name (project)' })),
  q: t.Optional(t.String({ maxLength: 200, description: 'Case-insensitive text in the entry name, category name or variable name' })),
})
