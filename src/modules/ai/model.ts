import { t } from 'elysia'
import { component, strictObject } from '../../http/schemas'
import { EnvironmentSchema } from '../entries/model'

/** docs/api.md, "Limits". */
export const MAX_PROMPT_LENGTH = 4000
export const MAX_IMPORT_TEXT = 256 * 1024

export const ExtractBody = component(
  'ExtractBody',
  strictObject({
    prompt: t.String({
      minLength: 1,
      maxLength: MAX_PROMPT_LENGTH,
      description: 'The project in plain words, e.g. "a Next.js blog using OpenAI and Resend, production"',
    }),
  }),
)

export const ExtractAnswer = t.String({
  description:
    'The `.env` text of the chosen entries, in the export format. Header X-Extraction-Source: `ai` (the model chose) or `builtin` (the built-in classifier chose).',
})

export const ImportBody = component(
  'ImportBody',
  strictObject({
    text: t.String({
      minLength: 1,
      maxLength: MAX_IMPORT_TEXT,
      description: 'A pasted config: `.env`, shell `export` lines, a JSON object, or YAML `key: value` lines. Only its names reach the model.',
    }),
    apply: t.Optional(t.Boolean({ description: 'Also file the keys: create the suggested categories and one entry per category' })),
    name: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'The entry name (project) for apply; required when apply is true' })),
    environment: t.Optional(t.Union([EnvironmentSchema, t.Null()])),
  }),
)

export const ImportKeySchema = component(
  'ImportKey',
  t.Object({
    name: t.String({ description: 'The variable name as parsed' }),
    categoryName: t.String(),
    keyType: t.Union([t.Literal('simple'), t.Literal('group')]),
    envVarName: t.String(),
    field: t.Optional(t.String({ description: 'For a group: the field holding this key' })),
    icon: t.Optional(t.String({ description: 'Simple Icons slug of the service' })),
    reuse: t.Boolean({ description: 'true: the key goes to one of your existing categories (`categoryId`); false: to a new category' }),
    categoryId: t.Optional(t.String({ description: 'With reuse: the id of the existing category' })),
    same: t.Optional(t.Boolean({ description: 'With apply: the entry already held this very value, so it was left as it was (no new version)' })),
  }),
)

export const ImportAnswer = component(
  'ImportResult',
  t.Object({
    data: t.Object({
      source: t.Union([t.Literal('ai'), t.Literal('builtin')]),
      keys: t.Array(ImportKeySchema),
      created: t.Optional(
        t.Object({
          categories: t.Array(t.String(), { description: 'Ids of the categories created (reused ones are not listed)' }),
          entries: t.Array(t.String()),
        }),
      ),
      updated: t.Optional(
        t.Object(
          {
            categories: t.Array(t.String(), { description: 'Ids of reused categories that gained fields' }),
            entries: t.Array(t.String(), { description: 'Ids of existing entries (same category, name and environment) given the new values' }),
          },
          { description: 'With apply: what existed and was updated rather than duplicated' },
        ),
      ),
      unchanged: t.Optional(
        t.Object(
          {
            entries: t.Array(t.String(), {
              description: 'Ids of existing entries that already held every value imported into them: not rewritten, no version kept',
            }),
          },
          { description: 'With apply: what was the same and was skipped' },
        ),
      ),
    }),
  }),
)

export type ImportInput = typeof ImportBody.static
