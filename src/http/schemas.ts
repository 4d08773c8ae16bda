// Schema pieces shared by every module: strict request objects, the error body, timestamps, and
// the marks the OpenAPI document reads (component names, response headers).
import { t } from 'elysia'
import { FormatRegistry, Type, type IntegerOptions, type TObject, type TProperties, type TSchema } from '@sinclair/typebox'

// Every response timestamp is checked against `date-time`; Elysia's check parses each one.
// Ours come from Date#toISOString, so that exact shape passes at once; anything else gets the
// full check.
const ISO_TIMESTAMP = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/
const fullDateTimeCheck = FormatRegistry.Get('date-time')
FormatRegistry.Set('date-time', (value) => ISO_TIMESTAMP.test(value) || (fullDateTimeCheck?.(value) ?? false))

/** A request object that rejects unknown fields (400 naming the field). */
export const strictObject = <P extends TProperties>(properties: P, description?: string) => t.Object(properties, { additionalProperties: false, description })

/**
 * `base` with more properties: what t.Composite gives for disjoint keys, without its type-level
 * evaluation (KeyOf, Index and Intersect over every property at start-up, which costs idle memory).
 */
export const withProperties = <B extends TProperties, P extends TProperties>(base: TObject<B>, properties: P) => t.Object({ ...base.properties, ...properties })

export const Timestamp = t.String({ format: 'date-time', description: 'ISO 8601 timestamp' })
export const IdParams = t.Object({ id: t.String() })

/**
 * The name a schema is documented under in the OpenAPI document (`components.schemas`, used by
 * `$ref`). A symbol: TypeBox and Elysia ignore it, and copies made with `{ ...schema }` keep it.
 */
export const COMPONENT_NAME = Symbol.for('svc-vault.openapi.component')
/** Response headers a status documents (see withResponseHeaders). */
export const RESPONSE_HEADERS = Symbol.for('svc-vault.openapi.response-headers')
/** The media types of an answer that has several (see byMediaType). */
export const MEDIA_TYPES = Symbol.for('svc-vault.openapi.media-types')

const components = new Map<string, TSchema>()

/** Documents `schema` as the named component `name`; every use becomes a `$ref` to it. */
export function component<T extends TSchema>(name: string, schema: T): T {
  const known = components.get(name)
  if (known && known !== schema) throw new Error(`two schemas are named ${name} in the OpenAPI document`)
  components.set(name, schema)
  ;(schema as Record<symbol, unknown>)[COMPONENT_NAME] = name
  return schema
}

/** The schema documented under this component name. */
export const componentSchema = (name: string): TSchema | undefined => components.get(name)

export interface ResponseHeader {
  description: string
  schema?: Record<string, unknown>
}

/** The same answer schema, documented with these response headers (e.g. Set-Cookie). */
export function withResponseHeaders<T extends TSchema>(schema: T, headers: Record<string, ResponseHeader>): T {
  return { ...schema, [RESPONSE_HEADERS]: headers }
}

/**
 * One status answered in several media types (say `text/plain` and `application/json`): checked
 * as any of the schemas, documented with one content entry per media type.
 */
export function byMediaType(types: Record<string, TSchema>, description?: string): TSchema {
  const schema = t.Union(Object.values(types), description ? { description } : {})
  ;(schema as unknown as Record<symbol, unknown>)[MEDIA_TYPES] = types
  return schema
}

/**
 * A JSON integer. Elysia's `t.Integer` also accepts numeric strings (for query strings), which
 * documents an answer as `string | integer`: answers use this one.
 */
export const Integer = (options?: IntegerOptions) => Type.Integer(options)

/** The value or null (documented as nullable). */
export const nullable = <T extends TSchema>(schema: T) => t.Union([schema, t.Null()])

export const ErrorBody = component(
  'Error',
  t.Object(
    {
      error: t.String({ description: 'Human-readable message, for display' }),
      code: t.String({ description: 'Machine-readable code, for programmatic handling (VALIDATION_ERROR, ENTRY_NOT_FOUND, ...)' }),
    },
    { description: 'Every failure answers this body, with a 4xx or 5xx status' },
  ),
)

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Bad request (VALIDATION_ERROR, INVALID_JSON, ...)',
  401: 'Missing or invalid credentials (AUTH_REQUIRED, AUTH_INVALID_KEY)',
  403: 'Valid credentials without the needed scope (AUTH_SCOPE_REQUIRED, SESSION_REQUIRED, CSRF_REJECTED), without a fresh proof (REAUTHENTICATION_REQUIRED), without the role in a shared vault (ROLE_REQUIRED), or an access key bound to a shared vault on a personal-vault route (KEY_BOUND_TO_VAULT)',
  404: 'Not found, or not owned by the caller',
  409: 'Conflict: the request clashes with what exists (CATEGORY_NOT_EMPTY, EMAIL_TAKEN, a duplicate name, ...)',
  413: 'Request body too large (PAYLOAD_TOO_LARGE)',
  421: 'The Host header names neither this vault nor a loopback name (MISDIRECTED_REQUEST)',
  429: 'Too many attempts (TOO_MANY_ATTEMPTS)',
  502: 'The AI model failed (AI_EXTRACTION_FAILED)',
  503: 'Unavailable for now: the database is away (STORE_UNAVAILABLE, PostgreSQL store; try again shortly), or the AI model is (AI_UNAVAILABLE)',
}

// One schema per status, shared by every route: building them per route was most of the
// start-up's schema work (and enough calls to wake the optimizing compiler, a few MB resident).
const errorBodies = new Map<number, typeof ErrorBody>()
function errorBodyFor(status: number): typeof ErrorBody {
  let body = errorBodies.get(status)
  if (!body) {
    // The same component (one `$ref` to Error), with the status's own description.
    body = { ...ErrorBody, description: ERROR_DESCRIPTIONS[status] ?? 'Error' }
    if (status === 429) body = withResponseHeaders(body, { 'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer' } } })
    errorBodies.set(status, body)
  }
  return body
}

/**
 * The error answers of a guarded route, each the `Error` component: `...errorResponses(400, 404, 409)`.
 * 401 and 403 (every guarded route can answer them), 421 (the Host check runs before routing),
 * 500, and 503 (every request reads the store, whose database may be away) come with it. A route with a body
 * lists 400 and 413 (the body parser's INVALID_JSON and PAYLOAD_TOO_LARGE).
 */
export function errorResponses<S extends number>(...statuses: S[]) {
  return errorMap([...statuses, 401, 403, 421, 500, 503] as (S | 401 | 403 | 421 | 500 | 503)[])
}

/** The error answers of a public route (no 401/403 unless listed; 421, 500 and 503 always): `...publicErrorResponses(400, 413, 429)`. */
export function publicErrorResponses<S extends number>(...statuses: S[]) {
  return errorMap([...statuses, 421, 500, 503] as (S | 421 | 500 | 503)[])
}

function errorMap<S extends number>(statuses: S[]) {
  const out = {} as Record<S, typeof ErrorBody>
  for (const status of statuses) out[status] = errorBodyFor(status)
  return out
}

export const NoContent = t.Void({ description: 'No content' })
