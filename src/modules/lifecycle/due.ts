// Expiry and rotation reminders: an entry or 2FA token may expire (`expiresAt`), an
// entry may want a new value every `rotateEveryDays` days, counted from when its value last
// changed (`rotatedAt`, else its creation).
export type DueStatus = 'ok' | 'due_soon' | 'expired' | 'rotation_due'

const DAY_MS = 86_400_000
/** "Due soon": expiry or rotation within this many days. */
export const DUE_SOON_DAYS = 14

export interface DueFields {
  createdAt: string
  expiresAt?: string | null
  rotateEveryDays?: number | null
  rotatedAt?: string | null
}

/** When the value is due for rotation, in ms; null when the record has no rotation period. */
export function rotationDueAt(record: DueFields): number | null {
  if (!record.rotateEveryDays) return null
  return Date.parse(record.rotatedAt ?? record.createdAt) + record.rotateEveryDays * DAY_MS
}

const expiryAt = (record: DueFields): number | null => (record.expiresAt ? Date.parse(record.expiresAt) : null)

/** expired, then rotation_due, then due_soon (either within 14 days), else ok. */
export function dueStatus(record: DueFields, now: number): DueStatus {
  const expiry = expiryAt(record)
  const rotation = rotationDueAt(record)
  if (expiry !== null && expiry <= now) return 'expired'
  if (rotation !== null && rotation <= now) return 'rotation_due'
  const soon = now + DUE_SOON_DAYS * DAY_MS
  if ((expiry !== null && expiry <= soon) || (rotation !== null && rotation <= soon)) return 'due_soon'
  return 'ok'
}

/** The earliest of expiry and rotation, with which it is; null when neither is set. */
export function nextDue(record: DueFields): { at: number; reason: 'expiry' | 'rotation' } | null {
  const expiry = expiryAt(record)
  const rotation = rotationDueAt(record)
  if (expiry === null && rotation === null) return null
  if (rotation === null || (expiry !== null && expiry <= rotation)) return { at: expiry!, reason: 'expiry' }
  return { at: rotation, reason: 'rotation' }
}

/** Whether the record expires or is due for rotation within `days` days (or already is). */
export function dueWithin(record: DueFields, now: number, days: number): boolean {
  const next = nextDue(record)
  return next !== null && next.at <= now + days * DAY_MS
}
