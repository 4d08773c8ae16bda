// The converter from route schemas to the OpenAPI document (src/http/openapi.ts), on routes made
// up for the purpose: each rule the other tests rely on, and the helpers new routes use.
import { expect, test } from 'bun:test'
import { Elysia, t } from 'elysia'
import { buildDocument } from '../../src/http/openapi'
import { byMediaType, component, errorResponses, Integer, nullable, withResponseHeaders } from '../../src/http/schemas'

const documentation = { info: { title: 't', version: '1' }, servers: [{ url: '/' }] }

const Color = t.Union([t.Literal('red'), t.Literal('blue')], { error: 'must be red or blue' })
const Widget = component(
  'ConverterTestWidget',
  t.Object({
    count: Integer({ minimum: 0 }),
    loose: t.Integer(),
    ratio: t.Numeric(),
    color: nullable(Color),
    label: t.Union([t.String({ maxLength: 3 }), t.Null()]),
    tags: t.Record(t.String(), t.String()),
  }),
)

const app = new Elysia()
  .post('/api/widgets', () => ({}) as never, {
    body: t.Object({ color: Color }, { additionalProperties: false }),
    response: { 201: withResponseHeaders(Widget, { ETag: { description: 'Version' } }), ...errorResponses(409) },
    detail: { operationId: 'createWidget', summary: 'Create' },
  })
  .get('/api/widgets/:id/export', () => '' as never, {
    params: t.Object({ id: t.String() }),
    query: t.Object({ format: t.Optional(t.Union([t.Literal('env'), t.Literal('json')], { description: 'Output format' })) }),
    response: {
      200: byMediaType({ 'text/plain': t.String(), 'application/json': t.Record(t.String(), t.String()) }, 'The export'),
      304: t.Void({ description: 'Not modified' }),
      ...errorResponses(404),
    },
    detail: { summary: 'Export' },
  })

const doc = buildDocument(app.routes as never, documentation)
const widget = doc.components.schemas.ConverterTestWidget as any

test('integers, nullable enums and strings, records; no private keywords', () => {
  expect(widget.properties.count).toEqual({ type: 'integer', minimum: 0 })
  // Elysia's numeric types take numeric strings too: documented as the number a client sends.
  expect(widget.properties.loose).toEqual({ type: 'integer' })
  expect(widget.properties.ratio).toEqual({ type: 'number' })
  expect(widget.properties.color).toEqual({ type: ['string', 'null'], enum: ['red', 'blue', null] })
  expect(widget.properties.label).toEqual({ type: ['string', 'null'], maxLength: 3 })
  expect(widget.properties.tags).toEqual({ type: 'object', additionalProperties: { type: 'string' } })
  expect(JSON.stringify(doc)).not.toContain('must be red or blue')
})

test('operations: components by $ref, headers, implied 400 and 413, several media types, 304 without a body, a derived operationId', () => {
  const create = doc.paths['/api/widgets'].post as any
  expect(create.responses['201'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ConverterTestWidget' })
  expect(create.responses['201'].headers.ETag.description).toBe('Version')
  expect(Object.keys(create.responses).sort()).toEqual(['201', '400', '401', '403', '409', '413', '421', '500', '503'])
  expect(create.security).toEqual([])
  const exported = doc.paths['/api/widgets/{id}/export'].get as any
  expect(exported.operationId).toBe('getApiWidgetsIdExport')
  expect(exported.parameters).toEqual([
    { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
    { name: 'format', in: 'query', required: false, description: 'Output format', schema: { type: 'string', enum: ['env', 'json'] } },
  ])
  expect(exported.responses['200'].description).toBe('The export')
  expect(Object.keys(exported.responses['200'].content)).toEqual(['text/plain', 'application/json'])
  expect(exported.responses['304']).toEqual({ description: 'Not modified' })
  expect(exported.responses['413']).toBeUndefined()
})
