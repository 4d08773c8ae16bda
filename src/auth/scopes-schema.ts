// The scope list as a schema (an enum in the OpenAPI document): scopes.ts stays free of Elysia.
import { t } from 'elysia'
import type { TLiteral } from '@sinclair/typebox'
import { component } from '../http/schemas'
import { SCOPES, type Scope } from './scopes'

export const ScopeSchema = component(
  'Scope',
  t.Union(
    // One tuple member stands for all: its static type is the Scope union.
    SCOPES.map((scope) => t.Literal(scope)) as unknown as [TLiteral<Scope>],
    { description: 'What an access key may do' },
  ),
)
