// Every failure ends as { error, code } with the status of CONTRACT.md. Validation is 400 (not
// Elysia's 422) and names the field; a 500 carries no stack and no detail.
import { Elysia, ValidationError } from 'elysia'
import { INVALID_JSON_BODY } from './body'
import { AppError } from './errors'

export type Logger = (line: string) => void

function fieldName(path: string | undefined, where: string): string {
  const field = (path ?? '').replace(/^\//, '').replace(/\//g, '.')
  return field || where
}

function validationMessage(error: ValidationError): string {
  const where = error.type === 'query' ? 'query' : error.type === 'params' ? 'path' : 'body'
  const first = error.all[0] as { path?: string; message?: string; schema?: { description?: string } } | undefined
  if (where === 'body' && (error.value === null || typeof error.value !== 'object' || Array.isArray(error.value)) && !first?.path) {
    return 'The request body must be a JSON object'
  }
  const field = fieldName(first?.path, where)
  const problem = first?.message ?? 'is invalid'
  const unexpected = /Unexpected property/i.test(problem)
  return unexpected ? `${field}: unknown field` : `${field}: ${problem.charAt(0).toLowerCase()}${problem.slice(1)}`
}

export const errorBody = (error: string, code: string) => ({ error, code })

export function errorHandler(log: Logger) {
  return new Elysia({ name: 'http.errors' }).error({ AppError }).onError({ as: 'global' }, ({ code, error, set }) => {
    if (error instanceof AppError) {
      set.status = error.status
      if (error.headers) Object.assign(set.headers, error.headers)
      return errorBody(error.message, error.code)
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
