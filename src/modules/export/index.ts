// /api/export: every entry decrypted into one .env text. One of the three ways plaintext leaves.
import { Elysia, t } from 'elysia'
import { authGuard, type GuardDeps } from '../../auth/guard'
import { errorResponses } from '../../http/schemas'
import { EnvironmentSchema } from '../entries/model'
import type { Vaults } from '../vault-access'
import { ExportService } from './service'

const ExportQuery = t.Object({
  environment: t.Optional(EnvironmentSchema),
  name: t.Optional(t.String({ maxLength: 200, description: 'Only the entries of exactly this name' })),
})

export function exportRoutes(deps: GuardDeps & { vaults: Vaults }) {
  const exporter = new ExportService(deps.vaults)
  return new Elysia({ prefix: '/api/export', tags: ['Export'] })
    .use(authGuard(deps))
    .get(
      '/',
      async ({ auth, query, set }) => {
        const text = await exporter.envText(auth.userId, query)
        set.headers['content-type'] = 'text/plain; charset=utf-8'
        set.headers['content-disposition'] = 'attachment; filename="svc-export.env"'
        set.headers['cache-control'] = 'no-store'
        return text
      },
      {
        auth: 'export:read',
        query: ExportQuery,
        response: { 200: t.String({ description: 'The .env text (text/plain; charset=utf-8)' }), ...errorResponses(400) },
        detail: {
          operationId: 'exportEnv',
          summary: 'Export your entries as one .env text',
          description:
            'Entries in category name order, then entry name, then environment; each preceded by `# <category> — <entry> (<environment>)`. A simple entry gives `ENV_VAR=value`, a group one line per field in declared order; ssh and json entries are skipped. Values that are not plain are quoted so that dotenv reads them back exactly. Answers carry Cache-Control: no-store.',
        },
      },
    )
}
