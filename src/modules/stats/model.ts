import { t } from 'elysia'
import { component, Integer } from '../../http/schemas'

const Count = Integer({ minimum: 0 })

export const StatsSchema = component(
  'Stats',
  t.Object({
    totalCategories: Count,
    totalEntries: Count,
    total2fa: Count,
    byKeyType: t.Object({ simple: Count, group: Count, ssh: Count, json: Count }, { description: 'Entry count per key type of its category' }),
    byEnvironment: t.Object(
      { development: Count, staging: Count, production: Count },
      { description: 'Entry count per environment (entries without one are not counted here)' },
    ),
  }),
)
