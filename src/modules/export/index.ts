// /api/export: entries decrypted into the text one reader reads. One of the three ways plaintext leaves.
import { Elysia, t } from 'elysia'
import { authGuard, type GuardDeps } from '../../auth/guard'
import { routePrefix } from '../../auth/vault-mount'
import { contentTag, matchesIfNoneMatch } from '../../crypto/content-tag'
import { byMediaType, component, errorResponses, withResponseHeaders } from '../../http/schemas'
import { EnvironmentSchema } from '../entries/model'
import type { Vaults } from '../vault-access'
import { EXPORT_FORMATS, ExportService } from './service'
import { ref } from '../audit/service'

const ExportQuery = t.Object({
  environment: t.Optional(EnvironmentSchema),
  name: t.Optional(t.String({ maxLength: 200, description: 'Only the entries of exactly this name (project)' })),
  format: t.Optional(
    t.Union(
      [...EXPORT_FORMATS, 'env'].map((format) => t.Literal(format)),
      {
        description:
          "One format per reader, each exact for every value its reader can carry (docs/export.md). `dotenv` (default; `env` is the same): npm dotenv and dotenvx. `bun`: Bun's `.env` reader (`bun --env-file`, `bun run`). `node`: `node --env-file`. `python`: python-dotenv. `docker`: `docker run --env-file` (compose `env_file` with `format: raw`). `systemd`: `EnvironmentFile=`. `shell`: `export NAME='…'` lines for `. ./file`. `json`: one object, variable name to value. `yaml`: a Kubernetes Secret with `stringData`. A value the format cannot carry is 400 EXPORT_FORMAT_REFUSED naming every such variable; a variable written by two entries is 409 AMBIGUOUS_EXPORT, in every format.",
      },
    ),
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

const RefusedExportBody = component(
  'ExportFormatRefusedError',
  t.Object(
    {
      error: t.String({ description: 'Human-readable message naming every variable the format cannot carry, why, and formats that can' }),
      code: t.String({ description: 'EXPORT_FORMAT_REFUSED, or VALIDATION_ERROR for a bad parameter' }),
      format: t.Optional(t.String({ description: 'The format asked for' })),
      variables: t.Optional(
        t.Array(
          t.Object({
            variable: t.String(),
            reason: t.String({ description: 'Why the format cannot carry its value (never the value)' }),
            formats: t.Array(t.String(), { description: 'Formats that carry this value exactly' }),
          }),
        ),
      ),
    },
    { description: 'Bad parameters, or a format that cannot carry some value exactly (EXPORT_FORMAT_REFUSED)' },
  ),
)

// Built once: a named component may be declared only once per process.
const ExportAnswer = withResponseHeaders(
  byMediaType(
    {
      'text/plain': t.String({ description: 'format=dotenv, bun, node, python, docker, systemd or shell: the text' }),
      'application/yaml': t.String({ description: 'format=yaml: a Kubernetes Secret manifest' }),
      'application/json': component('ExportObject', t.Record(t.String(), t.String(), { description: 'format=json: variable name to value' })),
    },
    'The export in the chosen format: application/json for json, application/yaml for yaml, text/plain for the others.',
  ),
  { ETag: { description: 'Changes with the content and reveals nothing of it; send it as If-None-Match for a 304' } },
)

const NotModified = withResponseHeaders(t.String({ description: 'Not modified: If-None-Match named the current ETag. No body.', maxLength: 0 }), {
  ETag: { description: 'The current entity tag' },
})

export function exportRoutes(deps: GuardDeps & { vaults: Vaults }) {
  const exporter = new ExportService(deps.vaults)
  return new Elysia({ prefix: routePrefix(deps, '/api/export'), tags: ['Export'] }).use(authGuard(deps)).get(
    '/',
    async ({ auth, audit, query, set, headers }) => {
      const rendered = await exporter.render(auth.userId, query)
      // The tag covers who asked and what was answered, so it never matches another user's answer.
      const tag = contentTag(auth.userId, rendered.contentType, rendered.body)
      set.headers['etag'] = tag
      set.headers['cache-control'] = 'no-store'
      // A 304 sends no value, so it is not an export: `svc run --watch` polls every 10 s, and one
      // event per poll would bury the log.
      if (matchesIfNoneMatch(headers['if-none-match'], tag)) {
        set.status = 304
        return ''
      }
      // Recorded on disk before the values leave.
      // The entries by name up to 50 (a whole-vault export is told by its filters and counts).
      await audit('export.read', rendered.entries.length <= 50 ? rendered.entries.map((entry) => ref('entry', entry)) : [], {
        filters: { environment: query.environment ?? null, name: query.name ?? null, format: query.format ?? 'dotenv' },
        count: rendered.count,
        entries: rendered.entries.length,
      })
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
        400: RefusedExportBody,
        409: AmbiguousExportBody,
      },
      detail: {
        operationId: 'exportEnv',
        summary: 'Export your entries in the format of the program that reads them',
        description:
          "Entries in category name order, then entry name, then environment; each preceded by `# <category> — <entry> (<environment>)`. A simple entry gives `ENV_VAR=value`, a group one line per field in declared order; ssh and json entries are skipped. Values are quoted per value for the reader of the format so that it reads back exactly the stored value; a value it cannot carry is 400 EXPORT_FORMAT_REFUSED naming every such variable, the reason and formats that can. With `environment`, the entries without an environment are included and an entry of the environment wins over a shared one for the same variable. In every format, with or without `environment`, each variable appears at most once (else 409 AMBIGUOUS_EXPORT with `variable` and `projects`; `environment` and `name` narrow). `format=shell` writes `export NAME='…'` lines safe to source; `format=json` one object; `format=yaml` a Kubernetes Secret. Every answer carries an `ETag`; a request whose `If-None-Match` names it gets 304 without a body. Answers carry Cache-Control: no-store.",
      },
    },
  )
}
