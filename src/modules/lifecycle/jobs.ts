// The background pass over every vault on disk: purges expired trash and finds the
// users with a due-items webhook.
import { Elysia } from 'elysia'
import type { AppDeps } from '../../deps'
import { TrashService } from './service'

/** A full pass over every vault on disk: long enough apart, and late enough after start, that idle memory and start-up stay as they were. */
const SWEEP_MS = 6 * 3_600_000
const FIRST_SWEEP_MS = 60_000

/**
 * One background pass: the trash purge, then finding the users with a webhook. With several
 * instances on one database the purge runs on one of them at a time (an advisory lock: another
 * instance's pass meanwhile skips it; a later one finds nothing left to purge). Answers how many
 * items were purged, or null when another instance was purging.
 */
export async function lifecyclePass(deps: Pick<AppDeps, 'vaults' | 'now' | 'store' | 'notifier' | 'log'>): Promise<number | null> {
  const trash = new TrashService(deps.vaults, deps.now)
  const purged = await deps.store.state
    .exclusive('trash-purge', () => trash.sweepAll(deps.store))
    .catch((error) => {
      deps.log(`error: trash purge failed: ${(error as Error)?.message ?? error}`)
      return 0
    })
  // Read-only: every instance learns who has a webhook (the delivery round itself is exclusive).
  await deps.notifier.scan().catch((error) => deps.log(`error: webhook scan failed: ${(error as Error)?.message ?? error}`))
  return purged ?? null
}

/**
 * The background pass over every vault on disk: purges expired trash items (durably) and finds the
 * users with a due-items webhook. Requests purge their own vault's expired items first anyway.
 */
export function lifecycleJobs(deps: AppDeps, timing = { firstMs: FIRST_SWEEP_MS, everyMs: SWEEP_MS }) {
  const timers: ReturnType<typeof setTimeout>[] = []
  const sweep = () => void lifecyclePass(deps)
  return new Elysia({ name: 'lifecycle.jobs' })
    .onStart(() => {
      timers.push(setTimeout(sweep, timing.firstMs), setInterval(sweep, timing.everyMs))
      for (const timer of timers) timer.unref?.()
    })
    .onStop(() => timers.forEach(clearTimeout))
}
