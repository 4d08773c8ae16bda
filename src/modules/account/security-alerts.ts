// Security alerts to the account's owner: when an account's second step locks after
// 20 wrong codes within a day, which means someone has the password, the lock is recorded in the
// account's audit log (the dashboard shows it) and sent to the webhook when one is set.
import type { TwoFactorSignIn } from '../../auth/second-factor'
import type { AuditService } from '../../audit/recorder'
import type { Logger } from '../../http/error-handler'
import type { Notifier } from './notifications'

/** At most one webhook alert per account a day: a lock repeats every 15 minutes while guessing goes on. */
const ALERT_EVERY_MS = 24 * 3_600_000

export interface SecurityAlertDeps {
  twoFactor: TwoFactorSignIn
  notifier: Notifier
  audit: AuditService
  now: () => number
  log: Logger
}

/** Wired once, by openVault. */
export function securityAlerts(deps: SecurityAlertDeps): void {
  const { twoFactor, notifier } = deps
  const alerted = new Map<string, number>()
  twoFactor.onLocked(async (lock) => {
    const lockedUntil = new Date(lock.lockedUntil).toISOString()
    // Recorded before the answer of the code that locked it (the owner's Activity page and dashboard).
    await deps.audit.recordQuietly(lock.userId, {
      action: 'auth.twofa_locked',
      outcome: 'denied',
      actor: { type: 'anonymous', id: null, name: null },
      clientAddress: lock.client,
      userAgent: null,
      records: [{ kind: 'user', id: lock.userId, name: null }],
      details: { wrongCodes: lock.wrongCodes, lockedUntil },
    })
    const now = deps.now()
    const last = alerted.get(lock.userId)
    if (last !== undefined && now - last < ALERT_EVERY_MS && now >= last) return
    alerted.set(lock.userId, now)
    if (alerted.size > 10_000) for (const [userId, at] of alerted) if (now - at >= ALERT_EVERY_MS) alerted.delete(userId)
    // In the background: a slow webhook does not hold up the answer.
    void notifier
      .alert(lock.userId, 'two_factor_locked', { wrongCodes: lock.wrongCodes, lockedUntil, clientAddress: lock.client })
      .catch((error) => deps.log(`error: the security alert webhook failed: ${(error as Error)?.message ?? error}`))
  })
}
