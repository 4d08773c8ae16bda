// The OpenAPI 3.1 document and its Scalar reference page. The document is generated from the
// routes themselves: their TypeBox schemas (body, params, query, every response status) and their
// `detail` (operationId, summary, tags, security). The schemas are converted here rather than by
// @elysiajs/openapi's generator, whose conversion documents nullable enums without null and
// Elysia's numeric types as `string | integer`, keeps Elysia's private `error` keyword and names
// no component. Conversion rules:
// - a schema marked with `component(name, …)` (http/schemas.ts) becomes `$ref` to
//   `#/components/schemas/<name>`; only the components in use are listed;
// - a union of literals becomes an `enum`; `X | null` becomes `type: [X, "null"]` (an enum gets
//   `null` among its values), or `anyOf [$ref, null]`;
// - `t.Record(t.String(), X)` becomes `additionalProperties: X`;
// - Elysia's private keywords (`error`, `noValidate`) and `$id` are left out;
// - an operation without the `auth` macro is public: `security: []`.
// Both load on the first request for them: a vault nobody browses the docs of need not carry them.
// The Scalar page is served whole by the vault: its standalone script comes from the installed,
// exactly pinned @scalar/api-reference package, and its CSP lets it load nothing from another
// host. It still runs sandboxed (opaque origin: its "try it" client cannot use the vault's
// session), so the public document allows cross-origin reads for it.
import { dirname, join } from 'node:path'
import { Elysia, t, type AnyElysia } from 'elysia'
import { Kind } from '@sinclair/typebox'
import { prebuiltWeb } from '../web/prebuilt'
import { DOCS_SANDBOX_SHIM } from './docs-sandbox-shim'
import { COMPONENT_NAME, componentSchema, MEDIA_TYPES, publicErrorResponses, RESPONSE_HEADERS, type ResponseHeader } from './schemas'

export const SPEC_PATH = '/api/openapi'
export const DOCS_PATH = '/api/docs'
export const DOCS_SCRIPT_PATH = '/api/docs/scalar.js'
export const DOCS_SHIM_PATH = '/api/docs/sandbox-shim.js'
export const OPENAPI_VERSION = '3.1.0'

const DOCS_CSP = [
  'sandbox allow-scripts allow-popups allow-forms',
  "default-src 'none'",
  "script-src 'self'",
  // Scalar sets styles from its script.
  "style-src 'self' 'unsafe-inline'",
  "font-src 'self' data:",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

type Json = Record<string, unknown>
type Schema = Record<string | symbol, unknown>

interface RouteInfo {
  method: string
  path: string
  hooks?: { body?: unknown; params?: unknown; query?: unknown; response?: unknown; detail?: Json }
}

export interface Documentation {
  info: { title: string; version: string; description?: string }
  /** Where clients reach the API: SVC_BASE_URL, else the server that serves the document (`/`). */
  servers: { url: string; description?: string }[]
  tags?: { name: string; description: string }[]
  components?: Json
}

export interface OpenApiDocument {
  openapi: string
  info: Documentation['info']
  servers: Documentation['servers']
  tags?: Documentation['tags']
  paths: Record<string, Record<string, Json>>
  components: Json & { schemas: Record<string, Json> }
}

/** Keywords that are Elysia's or TypeBox's own, not JSON Schema for a client. */
const PRIVATE_KEYWORDS = new Set(['error', 'noValidate', '$id'])
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'dependentSchemas'])
const SCHEMA_LISTS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems'])
const SCHEMA_VALUES = new Set(['items', 'additionalProperties', 'unevaluatedProperties', 'contains', 'not', 'if', 'then', 'else', 'propertyNames'])
/** What TypeBox writes for the keys of `t.Record(t.String(), …)`. */
const ANY_KEY_PATTERNS = new Set(['^(.*)$', '^.*$'])
const ANNOTATIONS = ['title', 'description', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly']

const isObject = (value: unknown): value is Schema => value !== null && typeof value === 'object' && !Array.isArray(value)
const isNull = (schema: unknown) => isObject(schema) && schema.type === 'null'
const isLiteral = (schema: unknown) => isObject(schema) && 'const' in schema && !schema[COMPONENT_NAME]
const componentRef = (name: string) => ({ $ref: `#/components/schemas/${name}` })

/** Converts TypeBox schemas, collecting the components they use. */
class SchemaConverter {
  readonly used = new Set<string>()

  convert(schema: unknown, asComponent = false): Json {
    if (!isObject(schema)) return {}
    const name = schema[COMPONENT_NAME]
    if (typeof name === 'string' && !asComponent) {
      this.used.add(name)
      return componentRef(name)
    }
    if (Array.isArray(schema.anyOf)) return this.union(schema)
    const out: Json = {}
    for (const [key, value] of Object.entries(schema)) {
      if (PRIVATE_KEYWORDS.has(key) || value === undefined) continue
      if (SCHEMA_MAPS.has(key) && isObject(value)) {
        out[key] = Object.fromEntries(Object.entries(value).map(([field, child]) => [field, this.convert(child)]))
      } else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) {
        out[key] = value.map((child) => this.convert(child))
      } else if (SCHEMA_VALUES.has(key) && isObject(value)) {
        out[key] = this.convert(value)
      } else {
        out[key] = structuredClone(value)
      }
    }
    const patterns = out.patternProperties as Json | undefined
    if (patterns && Object.keys(patterns).length === 1 && ANY_KEY_PATTERNS.has(Object.keys(patterns)[0]) && out.additionalProperties === undefined) {
      out.additionalProperties = Object.values(patterns)[0]
      delete out.patternProperties
    }
    return out
  }

  private union(schema: Schema): Json {
    const options = schema.anyOf as unknown[]
    const annotations: Json = {}
    for (const key of ANNOTATIONS) if (schema[key] !== undefined) annotations[key] = structuredClone(schema[key])
    // Elysia's t.Integer and t.Numeric also take numeric strings (from query strings): a client
    // sends and gets the number.
    const numeric = elysiaNumber(options)
    if (numeric) return { ...this.convert(numeric), ...annotations }
    const canBeNull = options.some(isNull)
    const others = options.filter((option) => !isNull(option))
    // Nested unions of literals (a nullable enum) flatten into one list of values.
    const literals = flattenLiterals(others)
    if (literals) {
      const values = literals.map((option) => option.const)
      const types = [...new Set(values.map((value) => (typeof value === 'number' && Number.isInteger(value) ? 'integer' : typeof value)))]
      const type = types.length === 1 ? types[0] : types
      if (!canBeNull) return { type, enum: values, ...annotations }
      return { type: [...(Array.isArray(type) ? type : [type]), 'null'], enum: [...values, null], ...annotations }
    }
    if (canBeNull && others.length === 1) {
      const inner = this.convert(others[0])
      const innerType = inner.type
      if (typeof innerType === 'string' && !('const' in inner) && !('$ref' in inner)) {
        const nullableInner: Json = { ...inner, type: [innerType, 'null'], ...annotations }
        if (Array.isArray(inner.enum)) nullableInner.enum = [...inner.enum, null]
        return nullableInner
      }
      return { anyOf: [inner, { type: 'null' }], ...annotations }
    }
    return { anyOf: options.map((option) => this.convert(option)), ...annotations }
  }

  /** components.schemas: every component in use, and those they use in turn. */
  components(): Record<string, Json> {
    const out: Record<string, Json> = {}
    const pending = [...this.used]
    while (pending.length) {
      const name = pending.pop()!
      if (out[name]) continue
      const schema = componentSchema(name)
      if (!schema) throw new Error(`no schema is registered as the component ${name}`)
      const before = new Set(this.used)
      out[name] = this.convert(schema, true)
      for (const added of this.used) if (!before.has(added)) pending.push(added)
    }
    return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)))
  }
}

/** The number branch of Elysia's `string (format integer or numeric) | number` pair. */
function elysiaNumber(options: unknown[]): Schema | undefined {
  if (options.length !== 2 || !options.every(isObject)) return undefined
  const [text, number] = options as Schema[]
  const numericText = text.type === 'string' && (text.format === 'integer' || text.format === 'numeric')
  return numericText && (number.type === 'integer' || number.type === 'number') ? number : undefined
}

/** The literal schemas of a list of options, unions of literals flattened; undefined when any is something else. */
function flattenLiterals(options: unknown[]): Schema[] | undefined {
  const out: Schema[] = []
  for (const option of options) {
    if (isLiteral(option)) out.push(option as Schema)
    else if (isObject(option) && !option[COMPONENT_NAME] && Array.isArray(option.anyOf)) {
      const inner = flattenLiterals(option.anyOf)
      if (!inner) return undefined
      out.push(...inner)
    } else return undefined
  }
  return out.length ? out : undefined
}

const toOpenApiPath = (path: string) => (path.length > 1 ? path.replace(/\/$/, '') : path).replace(/:(\w+)/g, '{$1}')

/** camelCase from the method and path, for a route that names no operationId (`postApiAuthLinks`). */
export function fallbackOperationId(method: string, path: string): string {
  const words = [method.toLowerCase(), ...path.split(/[^A-Za-z0-9]+/).filter(Boolean)]
  return words.map((word, i) => (i === 0 ? word : word[0].toUpperCase() + word.slice(1))).join('')
}

const STATUS_TEXT: Record<string, string> = { 200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No content', 302: 'Redirect', 304: 'Not modified' }

/** A TypeBox Void: the answer has no body. */
const hasNoBody = (schema: Schema) => schema[Kind] === 'Void' || schema.type === 'void' || schema.type === 'undefined'

function responseObject(status: string, schema: unknown, converter: SchemaConverter): Json {
  if (!isObject(schema)) return { description: STATUS_TEXT[status] ?? `Status ${status}` }
  const headerSpecs = schema[RESPONSE_HEADERS] as Record<string, ResponseHeader> | undefined
  const headers: Json = {}
  for (const [name, header] of Object.entries(headerSpecs ?? {})) {
    headers[name] = { description: header.description, schema: header.schema ?? { type: 'string' } }
  }
  const named = typeof schema[COMPONENT_NAME] === 'string' ? componentSchema(schema[COMPONENT_NAME] as string) : undefined
  const description =
    (schema.description as string | undefined) ??
    ((named as Schema | undefined)?.description as string | undefined) ??
    STATUS_TEXT[status] ??
    `Status ${status}`
  const answer: Json = { description }
  // A redirect has no body; its Location header says where.
  if (['301', '302', '303', '307', '308'].includes(status) && hasNoBody(schema))
    headers.Location ??= { description: 'Where the browser goes next', schema: { type: 'string' } }
  if (Object.keys(headers).length) answer.headers = headers
  if (hasNoBody(schema) || status === '204' || status === '304') return answer
  const mediaTypes = schema[MEDIA_TYPES] as Record<string, unknown> | undefined
  if (mediaTypes) {
    answer.content = Object.fromEntries(Object.entries(mediaTypes).map(([type, body]) => [type, { schema: converter.convert(body) }]))
    return answer
  }
  const converted = converter.convert(schema)
  const mediaType = converted.type === 'string' ? 'text/plain' : 'application/json'
  // The status's description belongs to the answer, not to its body schema.
  if (!('$ref' in converted)) delete converted.description
  answer.content = { [mediaType]: { schema: converted } }
  return answer
}

function parametersOf(route: RouteInfo, converter: SchemaConverter): Json[] {
  const parameters: Json[] = []
  const params = route.hooks?.params as Schema | undefined
  const pathNames = [...route.path.matchAll(/:(\w+)/g)].map((match) => match[1])
  const paramProperties = (isObject(params) ? params.properties : undefined) as Record<string, unknown> | undefined
  for (const name of pathNames) {
    const schema = converter.convert(paramProperties?.[name] ?? t.String())
    parameters.push({ name, in: 'path', required: true, schema })
  }
  const query = route.hooks?.query as Schema | undefined
  if (isObject(query) && isObject(query.properties)) {
    const required = new Set((query.required as string[] | undefined) ?? [])
    for (const [name, property] of Object.entries(query.properties)) {
      const schema = converter.convert(property)
      const description = schema.description
      delete schema.description
      parameters.push({ name, in: 'query', required: required.has(name), ...(description ? { description } : {}), schema })
    }
  }
  return parameters
}

function operationOf(route: RouteInfo, converter: SchemaConverter): Json {
  const hooks = route.hooks ?? {}
  const { hide: _hide, ...detail } = hooks.detail ?? {}
  const operation: Json = {
    operationId: detail.operationId ?? fallbackOperationId(route.method, route.path),
    ...detail,
    // Without the `auth` macro an operation is public.
    security: detail.security ?? [],
  }
  const parameters = parametersOf(route, converter)
  if (parameters.length) operation.parameters = parameters
  if (isObject(hooks.body)) {
    operation.requestBody = { required: true, content: { 'application/json': { schema: converter.convert(hooks.body) } } }
  }
  const responses: Json = {}
  const response = hooks.response
  const map: Record<string, unknown> = isObject(response) ? (Kind in response ? { 200: response } : { ...(response as Record<string, unknown>) }) : {}
  // What the global body parser answers whatever the route (http/body.ts): any request with a
  // body can be too large, and a body the route reads can be malformed.
  const method = route.method.toUpperCase()
  if (method !== 'GET' && method !== 'HEAD') map['413'] ??= publicErrorResponses(413)[413]
  // Path parameters, a query or a body the route validates can each be refused with 400.
  if (isObject(hooks.body) || isObject(hooks.params) || isObject(hooks.query)) map['400'] ??= publicErrorResponses(400)[400]
  for (const status of Object.keys(map).sort()) responses[status] = responseObject(status, map[status], converter)
  operation.responses = Object.keys(responses).length ? responses : { 200: { description: 'OK' } }
  return operation
}

export function buildDocument(routes: RouteInfo[], documentation: Documentation): OpenApiDocument {
  const converter = new SchemaConverter()
  const paths: OpenApiDocument['paths'] = {}
  for (const route of routes) {
    // The API, and outside /api the routes that name an operation (health, readiness, metrics);
    // the web interface's routes state none.
    if (route.hooks?.detail?.hide || !(route.path.startsWith('/api/') || route.hooks?.detail?.operationId)) continue
    const method = route.method.toLowerCase()
    if (!['get', 'put', 'post', 'delete', 'patch', 'head', 'options'].includes(method)) continue
    const path = toOpenApiPath(route.path)
    paths[path] ??= {}
    paths[path][method] = operationOf(route, converter)
  }
  const sortedPaths = Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b)))
  const usedTags = new Set(
    Object.values(paths).flatMap((operations) => Object.values(operations).flatMap((operation) => (operation.tags as string[] | undefined) ?? [])),
  )
  const tags = (documentation.tags ?? []).filter((tag) => usedTags.has(tag.name))
  for (const name of usedTags) if (!tags.some((tag) => tag.name === name)) tags.push({ name, description: name })
  return {
    openapi: OPENAPI_VERSION,
    info: documentation.info,
    servers: documentation.servers,
    tags,
    paths: sortedPaths,
    components: { ...documentation.components, schemas: converter.components() },
  }
}

/** The installed Scalar's browser build (package.json "browser"): one self-contained script. */
export function scalarScriptPath(): string {
  return join(dirname(Bun.resolveSync('@scalar/api-reference', import.meta.dir)), 'browser', 'standalone.js')
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/**
 * The reference page: Scalar's script tag API (`#api-reference` with `data-url`), no inline script.
 * Fonts, the hosted proxy and telemetry are off: the page reaches this vault only. The hosted
 * service's buttons (Ask AI, Generate MCP, the developer toolbar's Configure, Share and Deploy)
 * are hidden: a self-hosted vault has none of them.
 */
function buildPage(documentation: Documentation): string {
  const configuration = {
    withDefaultFonts: false,
    hideClientButton: false,
    telemetry: false,
    agent: { disabled: true },
    mcp: { disabled: true },
    showDeveloperTools: 'never',
    showToolbar: 'never',
    _integration: 'html',
  }
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(documentation.info.title)}</title>
</head>
<body>
<script id="api-reference" type="application/json" data-url="${SPEC_PATH}" data-configuration="${escapeHtml(JSON.stringify(configuration))}"></script>
<script src="${DOCS_SHIM_PATH}"></script>
<script src="${DOCS_SCRIPT_PATH}"></script>
</body>
</html>
`
}

function script(source: string | ReturnType<typeof Bun.file>, encoding?: 'gzip'): Response {
  return new Response(source, {
    headers: {
      ...(encoding ? { 'content-encoding': encoding } : {}),
      'content-type': 'text/javascript; charset=utf-8',
      // The version is pinned, but an upgrade keeps these paths: a day, not forever.
      'cache-control': 'public, max-age=86400',
      // The sandboxed page has an opaque origin: its script loads are cross-origin.
      'cross-origin-resource-policy': 'cross-origin',
    },
  })
}

const DocumentAnswer = t.Object({}, { additionalProperties: true, description: 'This OpenAPI 3.1.0 document' })

/** `app` is the whole composed app, read when the document is first asked for. */
export function apiDocs(app: () => AnyElysia, documentation: Documentation) {
  // Routes do not change once the server runs: each is built once.
  let document: OpenApiDocument | undefined
  let page: string | undefined
  return (
    new Elysia({ name: 'http.openapi' })
      .get(
        SPEC_PATH,
        ({ set }) => {
          set.headers['access-control-allow-origin'] = '*'
          document ??= buildDocument(app().routes as RouteInfo[], documentation)
          return document
        },
        {
          response: { 200: DocumentAnswer, ...publicErrorResponses() },
          detail: { operationId: 'getOpenApiDocument', summary: 'This OpenAPI 3.1.0 document', tags: ['API description'] },
        },
      )
      .get(
        DOCS_PATH,
        () => {
          page ??= buildPage(documentation)
          return new Response(page, { headers: { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': DOCS_CSP } })
        },
        { detail: { hide: true } },
      )
      // Built into dist/ and the executable (gzipped: no node_modules there); else the installed package.
      .get(DOCS_SCRIPT_PATH, () => (prebuiltWeb ? script(Bun.file(prebuiltWeb.docsScript), 'gzip') : script(Bun.file(scalarScriptPath()))), {
        detail: { hide: true },
      })
      .get(DOCS_SHIM_PATH, () => script(DOCS_SANDBOX_SHIM), { detail: { hide: true } })
  )
}
