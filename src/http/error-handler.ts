// Every failure ends as { error, code } with the status of docs/api.md ("Errors"). Validation is 400 (not
// Elysia's 422) and names the field; a 500 carries no stack and no detail.
import { Elysia, ValidationError } from 'elysia'
import { INVALID_JSON_BODY } from './body'
import { AppError } from './errors'
import { DeletedVaultError, StoreUnavailableError } from '../store/errors'
import { LazyLoadError } from './lazy'

export type Logger = (line: string) => void

function fieldName(path: string | undefined, where: string): string {
  const field = (path ?? '').replace(/^\//, '').replace(/\//g, '.')
  return field || where
}

type SchemaLike = {
  error?: unknown
  anyOf?: SchemaLike[]
  const?: unknown
  type?: string
  pattern?: string
  minLength?: number
  maxLength?: number
  minItems?: number
  maxItems?: number
}

/** What a value must be, in words, from its schema (TypeBox says only "expected union value"). */
function describeSchema(schema: SchemaLike | undefined): string | undefined {
  if (!schema) return undefined
  if (typeof schema.error === 'string') return schema.error
  if (Array.isArray(schema.anyOf)) {
    const constants = schema.anyOf.filter((option) => 'const' in option).map((option) => JSON.stringify(option.const))
    if (constants.length === schema.anyOf.length) return `must be one of ${constants.join(', ')}`
    const options = schema.anyOf.filter((option) => option.type !== 'null')
    if (options.length === 1) {
      const inner = describeSchema(options[0])
      return inner && `${inner}${options.length < schema.anyOf.length ? ' (or null)' : ''}`
    }
    return undefined
  }
  if (schema.type === 'string') {
    if (schema.pattern) return `must be a string matching ${schema.pattern}`
    if (schema.minLength !== undefined || schema.maxLength !== undefined) {
      return `must be a string of ${schema.minLength ?? 0} to ${schema.maxLength ?? 'any number of'} characters`
    }
  }
  if (schema.type === 'array' && (schema.minItems !== undefined || schema.maxItems !== undefined)) {
    return `must be an array of ${schema.minItems ?? 0} to ${schema.maxItems ?? 'any number of'} items`
  }
  return schema.type ? `must be ${/^[aeiou]/.test(schema.type) ? 'an' : 'a'} ${schema.type}` : undefined
}

function validationMessage(error: ValidationError): string {
  const where = error.type === 'query' ? 'query' : error.type === 'params' ? 'path' : 'body'
  const first = error.all[0] as { path?: string; message?: string; schema?: SchemaLike } | undefined
  if (where === 'body' && (error.value === null || typeof error.value !== 'object' || Array.isArray(error.value)) && !first?.path) {
    return 'The request body must be a JSON object'
  }
  const field = fieldName(first?.path, where)
  const problem = first?.message ?? 'is invalid'
  if (/Unexpected property/i.test(problem)) return `${field}: unknown field`
  if (/Expected required property/i.test(problem)) return `${field}: is required`
  const described = describeSchema(first?.schema)
  return `${field}: ${described ?? problem.charAt(0).toLowerCase() + problem.slice(1)}`
}

export const errorBody = (error: string, code: string) => ({ error, code })

export function errorHandler(log: Logger) {
  return new Elysia({ name: 'http.errors' }).error({ AppError }).onError({ as: 'global' }, ({ code, error: raised, set }) => {
    // Elysia wraps whatever a parser throws in ParseError: a body found too large while being
    // read (chunked, no Content-Length) must still answer 413, and the database found away by
    // the guard that runs before the body (PostgreSQL store) 503, not 400 INVALID_JSON.
    const cause = code === 'PARSE' ? (raised as { cause?: unknown }).cause : undefined
    const error = cause instanceof AppError || cause instanceof StoreUnavailableError || cause instanceof DeletedVaultError ? cause : raised
    // A handler may already have set a text type (export, extract); an error body is JSON.
    set.headers['content-type'] = 'application/json; charset=utf-8'
    delete set.headers['content-disposition']
    if (error instanceof AppError) {
      set.status = error.status
      if (error.headers) Object.assign(set.headers, error.headers)
      return error.details ? { ...error.details, ...errorBody(error.message, error.code) } : errorBody(error.message, error.code)
    }
    // A request of an account deleted meanwhile (its vault is gone for good).
    if (error instanceof DeletedVaultError) {
      set.status = 401
      return errorBody('This account no longer exists', 'AUTH_REQUIRED')
    }
    // The database is away (PostgreSQL store): a plain 503 at once, the instance reconnects by itself.
    if (error instanceof StoreUnavailableError) {
      set.status = 503
      set.headers['retry-after'] = '1'
      return errorBody('The store is unavailable; try again shortly', 'STORE_UNAVAILABLE')
    }
    if (error instanceof ValidationError && error.type !== 'response') {
      set.status = 400
      if (error.value === INVALID_JSON_BODY) return errorBody('The request body is not valid JSON', 'INVALID_JSON')
      return errorBody(validationMessage(error), 'VALIDATION_ERROR')
    }
    if (code === 'PARSE') {
      set.status = 400
      return errorBody('The request body is not valid JSON', 'INVALID_JSON')
    }
    // A library loaded on first use could not be (http/lazy.ts): this feature only, the server goes on.
    if (error instanceof LazyLoadError) {
      log(`error: ${error.message}`)
      set.status = 500
      return errorBody(`${error.feature} could not be loaded on this server; see its log`, 'INTERNAL_ERROR')
    }
    if (code === 'NOT_FOUND') {
      set.status = 404
      return errorBody('No such endpoint', 'NOT_FOUND')
    }
    // Anything else is our fault. Log its kind and stack (never request data), answer plainly.
    const failure = error as Error
    log(`error: ${String(code)} ${failure?.name ?? ''}: ${failure?.message ?? ''}\n${failure?.stack ?? ''}`)
    set.status = 500
    return errorBody('Internal server error', 'INTERNAL_ERROR')
  })
}
