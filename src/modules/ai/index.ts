// /api/ai: extract (a prompt picks entries, answers their .env text) and import (a pasted config
// is parsed, filed into categories, and optionally stored). Only names ever reach the model.
import { Elysia } from 'elysia'
import { authGuard } from '../../auth/guard'
import type { AppDeps } from '../../deps'
import type { AuthContext } from '../../auth/guard'
import type { Scope } from '../../auth/scopes'
import { AppError } from '../../http/errors'
import { errorResponses, withResponseHeaders } from '../../http/schemas'
import { ExtractAnswer, ExtractBody, ImportAnswer, ImportBody } from './model'
import { createExtractionModel } from './model-client'
import { AiService } from './service'
import { iconSlugs } from '../../domain/icons'
import { policyOf } from '../lifecycle/trash'
import { routePrefix } from '../../auth/vault-mount'
import { roleAllows, roleRequired } from '../vaults/service'
import { versionAuthor } from '../lifecycle/versions'

/** Extract answers values: a key needs the export scope too (docs/api.md). */
export const EXTRACT_SCOPES: readonly Scope[] = ['ai:extract', 'export:read']
/** Import with `apply` creates categories and entries: a key needs their write scopes too. */
export const APPLY_SCOPES: readonly Scope[] = ['ai:extract', 'categories:write', 'entries:write']

/** A session may do anything; an access key must hold every scope listed. 403 names the first missing one (as the guard does). */
function requireScopes(auth: AuthContext, scopes: readonly Scope[]): void {
  if (auth.scopes === null) return
  const missing = scopes.find((scope) => !auth.scopes!.includes(scope))
  if (missing) throw new AppError(403, 'AUTH_SCOPE_REQUIRED', `This access key lacks the scope ${missing}`)
}
import { ref } from '../audit/service'

export function aiRoutes(deps: AppDeps) {
  const ai = new AiService(deps.vaults, createExtractionModel(deps.config.ai, deps.log), iconSlugs, deps.now, policyOf(deps.config))
  // Mounted twice (app.ts resourceRoutes): the personal vault, and /api/vaults/{vaultId}/ai for a shared one.
  return new Elysia({ prefix: routePrefix(deps, '/api/ai'), tags: ['AI'] })
    .use(authGuard(deps))
    .post(
      '/extract',
      async ({ auth, audit, body }) => {
        const { source, text, variables, entries } = await ai.extract(auth.userId, body.prompt)
        // Recorded on disk before the values leave: the variable names returned, never the prompt or a value.
        await audit(
          'ai.extract',
          entries.map((entry) => ref('entry', entry)),
          { source, names: variables, count: variables.length },
        )
        // The guard checks the key and the membership once more after this handler (the answer
        // carries secrets), so a key revoked or a member removed meanwhile gets none. Headers on the
        // Response itself: the 401 or 404 that replaces this answer keeps its own JSON content type.
        return new Response(text, {
          headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', 'x-extraction-source': source },
        })
      },
      {
        auth: EXTRACT_SCOPES,
        body: ExtractBody,
        response: {
          200: withResponseHeaders(ExtractAnswer, {
            'X-Extraction-Source': { description: 'Who chose the entries', schema: { type: 'string', enum: ['ai', 'builtin'] } },
          }),
          ...errorResponses(400, 413),
        },
        detail: {
          operationId: 'extractEnv',
          summary: 'Build a project .env from a description',
          description:
            'Needs a session, or an access key with both `ai:extract` and `export:read` (the answer holds values); a key without either gets 403 AUTH_SCOPE_REQUIRED naming the missing scope. The model gets the prompt and the names of your entries (entry, category, variable or field names, environment), never a value, and picks the entries the project needs; the server decrypts those and answers their `.env` text in the export format. Without a configured model, or when it fails or times out, a built-in classifier matches prompt words against the names. Header X-Extraction-Source: `ai` or `builtin`.',
        },
      },
    )
    .post(
      '/import',
      async ({ auth, audit, denyScope, body }) => {
        if (body.apply && auth.scopes !== null) {
          const missing = APPLY_SCOPES.find((scope) => !auth.scopes!.includes(scope))
          if (missing) throw await denyScope(missing)
        }
        // In a shared vault the guard checked the viewer role (a preview only reads); storing needs an editor.
        if (body.apply && auth.vaultRole !== undefined && !roleAllows(auth.vaultRole, 'editor')) throw roleRequired('editor')
        const result = await ai.import(auth.userId, body, versionAuthor(auth))
        await audit(
          'ai.import',
          [
            ...(result.created?.categories ?? []).map((id) => ({ kind: 'category', id, name: null })),
            ...(result.created?.entries ?? []).map((id) => ({ kind: 'entry', id, name: body.name ?? null })),
            ...(result.updated?.entries ?? []).map((id) => ({ kind: 'entry', id, name: body.name ?? null })),
          ],
          { apply: body.apply === true, source: result.source, names: result.keys.map((key) => key.name), environment: body.environment ?? null },
        )
        return { data: result }
      },
      {
        auth: 'ai:extract',
        body: ImportBody,
        response: { 200: ImportAnswer, ...errorResponses(400, 413) },
        detail: {
          operationId: 'importConfig',
          summary: 'File a pasted config into categories',
          // With `apply: true`: checked in the handler, since it depends on the body.
          'x-apply-required-scope': APPLY_SCOPES,
          description:
            'Needs a session or an access key with `ai:extract`; with `apply: true` a key also needs `categories:write` and `entries:write` (else 403 AUTH_SCOPE_REQUIRED naming the missing scope). Parses `.env`, shell `export` lines, a JSON object (nested keys joined with `_`, upper-cased) or YAML `key: value` lines on the server. Only the key names reach the model, which groups them into categories; without it a built-in classifier does. With `apply: true` and `name`, also creates the categories (reusing yours with the same envVarName, or the same name for groups) and one entry per category holding the values, in one write. Text without any key, or nested deeper than 32 levels: 400 VALIDATION_ERROR naming `text`.',
        },
      },
    )
}
