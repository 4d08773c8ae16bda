// The sessions of one account, kept within a cap. A plain function over the accounts document's
// session list and the account's own sessions (oldest first), so that it costs what it removes,
// never a pass over every account's sessions.
import { removeRecord } from './by-id'
import type { SessionRecord } from './records'

/** Sessions one account may hold; a new one beyond this ends the oldest. */
export const MAX_SESSIONS_PER_ACCOUNT = 50

/**
 * Adds `session` to the document's list and to `ofAccount` (that account's sessions, oldest
 * first), after removing the account's expired sessions and, beyond the cap, its oldest ones.
 * Returns the sessions removed (the caller drops them from its lookups).
 */
export function admitSession(sessions: SessionRecord[], ofAccount: SessionRecord[], session: SessionRecord, now: number, cap = MAX_SESSIONS_PER_ACCOUNT): SessionRecord[] {
  const removed: SessionRecord[] = []
  for (let i = ofAccount.length - 1; i >= 0; i--) {
    if (Date.parse(ofAccount[i].expiresAt) <= now) removed.push(...ofAccount.splice(i, 1))
  }
  while (ofAccount.length >= cap) removed.push(ofAccount.shift()!)
  for (const gone of removed) removeRecord(sessions, gone)
  sessions.push(session)
  ofAccount.push(session)
  return removed
}

/**
 * Drops every expired session (a periodic sweep) by filtering into a new list: one pass, and the
 * commit logs one deletion each (changes.ts compares the new list with the committed one).
 */
export function removeExpiredSessions(document: { sessions: SessionRecord[] }, now: number): SessionRecord[] {
  const expired: SessionRecord[] = []
  document.sessions = document.sessions.filter((session) => {
    const live = Date.parse(session.expiresAt) > now
    if (!live) expired.push(session)
    return live
  })
  return expired
}
