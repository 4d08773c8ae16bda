// /api/export: entries decrypted into one .env, shell or JSON text. One of the three ways plaintext leaves.
import { Elysia, t } from 'elysia'
import { authGuard, type GuardDeps } from '../../auth/guard'
import { contentTag, matchesIfNoneMatch } from '../../crypto/content-tag'
import { byMediaType, component, errorResponses, withResponseHeaders } from '../../http/schemas'
import { EnvironmentSchema } from '../entries/model'
import type { Vaults } from '../vault-access'
import { ExportService } from './service'
import { ref } from '../audit/service'

const ExportQuery = t.Object({
  environment: t.Optional(EnvironmentSchema),
  name: t.Optional(t.String({ maxLength: 200, description: 'Only the entries of exactly this name (project)' })),
  format: t.Optional(
    t.Union([t.Literal('dotenv'), t.Literal('env'), t.Literal('shell'), t.Literal('json')], {
      description:
        '`dotenv` (default; `env` is the same): for dotenv readers (the `dotenv` package, docker `--env-file`-style loaders). `shell`: `export NAME=\'…\'` lines for `. ./file` in sh or bash, never interpreted. `json`: one object, variable name to value (a variable written by two entries is 409 AMBIGUOUS_EXPORT).',
    }),
  ),
})

const AmbiguousExportBody = component(
  'AmbiguousExportError',
  t.Object(
  {
    error: t.String({ description: 'Human-readable message, naming the variable and the projects' }),
    code: t.String({ description: 'AMBIGUOUS_EXPORT' }),
    variable: t.String({ description: 'The variable written by several entries' }),
    projects: t.Array(t.String(), { description: 'The names of the entries (projects) that write it; `name` chooses one' }),
  },
  { description: 'A variable would be written by two entries (AMBIGUOUS_EXPORT)' },
  ),
)

// Built once: a named component may be declared only once per process.
const ExportAnswer = withResponseHeaders(
  byMediaType(
    {
      'text/plain': t.String({ description: 'format=dotenv or shell: the text' }),
      'application/json': component('ExportObject', t.Record(t.String(), t.String(), { description: 'format=json: variable name to value' })),
    },
    'The export in the chosen format: text/plain for dotenv and shell, application/json for json.',
  ),
  { ETag: { description: 'Changes with the content and reveals nothing of it; send it as If-None-Match for a 304' } },
)

const NotModified = withResponseHeaders(t.String({ description: 'Not modified: If-None-Match named the current ETag. No body.', maxLength: 0 }), {
  ETag: { description: 'The current entity tag' },
})

export function exportRoutes(deps: GuardDeps & { vaults: Vaults }) {
  const exporter = new ExportService(deps.vaults)
  return new Elysia({ prefix: '/api/export', tags: ['Export'] })
    .use(authGuard(deps))
    .get(
      '/',
      async ({ auth, audit, query, set, headers }) => {
        const rendered = await exporter.render(auth.userId, query)
        // The tag covers who asked and what was answered, so it never matches another user's answer.
        const tag = contentTag(auth.userId, rendered.contentType, rendered.body)
        set.headers['etag'] = tag
        set.headers['cache-control'] = 'no-store'
        // A 304 sends no value, so it is not an export: `svc run --watch` polls every 10 s, and one
        // event per poll would bury the log (issue 36).
        if (matchesIfNoneMatch(headers['if-none-match'], tag)) {
          set.status = 304
          return ''
        }
        // Recorded on disk before the values leave.
        // The entries by name up to 50 (a whole-vault export is told by its filters and counts).
        await audit(
          'export.read',
          rendered.entries.length <= 50 ? rendered.entries.map((entry) => ref('entry', entry)) : [],
          { filters: { environment: query.environment ?? null, name: query.name ?? null, format: query.format ?? 'dotenv' }, count: rendered.count, entries: rendered.entries.length },
        )
        set.headers['content-type'] = rendered.contentType
        set.headers['content-disposition'] = `attachment; filename="${rendered.filename}"`
        return rendered.body
      },
      {
        auth: 'export:read',
        query: ExportQuery,
        response: {
          200: ExportAnswer,
          304: NotModified,
          ...errorResponses(400),
          409: AmbiguousExportBody,
        },
        detail: {
          operationId: 'exportEnv',
          summary: 'Export your entries as one .env, shell or JSON text',
          description:
            'Entries in category name order, then entry name, then environment; each preceded by `# <category> — <entry> (<environment>)`. A simple entry gives `ENV_VAR=value`, a group one line per field in declared order; ssh and json entries are skipped. Values that are not plain are quoted so that dotenv reads them back exactly. With `environment`, the entries without an environment are included, an entry of the environment wins over a shared one for the same variable, and each variable appears at most once (else 409 AMBIGUOUS_EXPORT with `variable` and `projects`; `name` narrows). `format=shell` writes `export NAME=\'…\'` lines safe to source; `format=json` one object. Every answer carries an `ETag`; a request whose `If-None-Match` names it gets 304 without a body. Answers carry Cache-Control: no-store.',
        },
      },
    )
}
