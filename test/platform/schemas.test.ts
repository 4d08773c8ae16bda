// withProperties stands in for t.Composite (cheaper at start-up): same schema for disjoint keys.
import { expect, test } from 'bun:test'
import { t } from 'elysia'
import type { TObject, TProperties } from '@sinclair/typebox'
import { withProperties } from '../../src/http/schemas'
import { AccessKeySchema } from '../../src/modules/access-keys/model'
import { EntryCategorySchema, EntrySchema } from '../../src/modules/entries/model'
import { EnvFileItemSchema, EnvProjectSchema } from '../../src/modules/envs/model'

/** The schema with its symbol keys (TypeBox's Kind, Optional) spelled out, for a deep comparison. */
const spelledOut = (value: unknown): unknown => {
  if (typeof value !== 'object' || value === null) return value
  if (Array.isArray(value)) return value.map(spelledOut)
  return Object.fromEntries(Reflect.ownKeys(value).map((key) => [String(key), spelledOut((value as Record<PropertyKey, unknown>)[key])]))
}

test('withProperties gives what t.Composite gives for disjoint keys', () => {
  const extras: [TObject, TProperties][] = [
    [EntrySchema, { category: EntryCategorySchema }],
    [AccessKeySchema, { key: t.String({ description: 'The full key, shown this once' }) }],
    [EnvProjectSchema, { files: t.Array(EnvFileItemSchema) }],
  ]
  for (const [base, properties] of extras) {
    expect(spelledOut(withProperties(base, properties))).toEqual(spelledOut(t.Composite([base, t.Object(properties)])))
  }
})
