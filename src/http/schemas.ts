// Schema pieces shared by every module: strict request objects, the error body, timestamps.
import { t } from 'elysia'
import { FormatRegistry, type TObject, type TProperties } from '@sinclair/typebox'

// Every response timestamp is checked against `date-time`; Elysia's check parses each one.
// Ours come from Date#toISOString, so that exact shape passes at once; anything else gets the
// full check.
const ISO_TIMESTAMP = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/
const fullDateTimeCheck = FormatRegistry.Get('date-time')
FormatRegistry.Set('date-time', (value) => ISO_TIMESTAMP.test(value) || (fullDateTimeCheck?.(value) ?? false))

/** A request object that rejects unknown fields (400 naming the field). */
export const strictObject = <P extends TProperties>(properties: P, description?: string) =>
  t.Object(properties, { additionalProperties: false, description })

/**
 * `base` with more properties: what t.Composite gives for disjoint keys, without its type-level
 * evaluation (KeyOf, Index and Intersect over every property at start-up, which costs idle memory).
 */
export const withProperties = <B extends TProperties, P extends TProperties>(base: TObject<B>, properties: P) =>
  t.Object({ ...base.properties, ...properties })

export const Timestamp = t.String({ format: 'date-time', description: 'ISO 8601 timestamp' })
export const IdParams = t.Object({ id: t.String() })

export const ErrorBody = t.Object(
  {
    error: t.String({ description: 'Human-readable message, for display' }),
    code: t.String({ description: 'Machine-readable code, for programmatic handling' }),
  },
  { $id: '#/components/schemas/Error', title: 'Error' },
)

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Bad request (VALIDATION_ERROR, INVALID_JSON, ...)',
  401: 'Missing or invalid credentials (AUTH_REQUIRED, AUTH_INVALID_KEY)',
  403: 'Valid credentials without the needed scope (AUTH_SCOPE_REQUIRED, SESSION_REQUIRED, CSRF_REJECTED)',
  404: 'Not found, or not owned by the caller',
  409: 'Conflict',
  413: 'Request body too large (PAYLOAD_TOO_LARGE)',
  429: 'Too many attempts (TOO_MANY_ATTEMPTS)',
  502: 'The AI model failed (AI_EXTRACTION_FAILED)',
  503: 'The AI model is unavailable (AI_UNAVAILABLE)',
}

// One schema per status, shared by every route: building them per route was most of the
// start-up's schema work (and enough calls to wake the optimizing compiler, a few MB resident).
const errorBodies = new Map<number, typeof ErrorBody>()
function errorBodyFor(status: number): typeof ErrorBody {
  let body = errorBodies.get(status)
  if (!body) {
    body = t.Object(ErrorBody.properties, { description: ERROR_DESCRIPTIONS[status] ?? 'Error' })
    errorBodies.set(status, body)
  }
  return body
}

/** Error answers for the OpenAPI document: `...errorResponses(400, 404)`. 401 and 403 come with every guarded route. */
export function errorResponses<S extends number>(...statuses: S[]) {
  const out = {} as Record<S | 401 | 403 | 500, typeof ErrorBody>
  for (const status of [...statuses, 401, 403, 500] as (S | 401 | 403 | 500)[]) out[status] = errorBodyFor(status)
  return out
}

export const NoContent = t.Void({ description: 'No content' })
