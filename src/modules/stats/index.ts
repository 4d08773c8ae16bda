// /api/stats
import { Elysia } from 'elysia'
import { authGuard, type GuardDeps } from '../../auth/guard'
import { routePrefix } from '../../auth/vault-mount'
import { errorResponses } from '../../http/schemas'
import type { Vaults } from '../vault-access'
import { StatsSchema } from './model'
import { StatsService } from './service'

export function statsRoutes(deps: GuardDeps & { vaults: Vaults }) {
  const stats = new StatsService(deps.vaults)
  return new Elysia({ prefix: routePrefix(deps, '/api/stats'), tags: ['Stats'] }).use(authGuard(deps)).get('/', ({ auth }) => stats.get(auth.userId), {
    auth: 'stats:read',
    response: { 200: StatsSchema, ...errorResponses() },
    detail: { operationId: 'getStats', summary: 'Counts of your categories, entries and 2FA tokens, by key type and environment' },
  })
}
