// The sessions of one account, kept within a cap. A plain function over the accounts document's
// session list and the account's own sessions (oldest first), so that it costs what it removes,
// never a pass over every account's sessions.
import type { SessionRecord } from './records'
import type { ListWriter } from './writer'

/** Sessions one account may hold; a new one beyond this ends the oldest. */
export const MAX_SESSIONS_PER_ACCOUNT = 50

/**
 * Adds `session` to the document's list (through its writer) and to `ofAccount` (that account's
 * sessions, oldest first), after removing the account's expired sessions and, beyond the cap,
 * its oldest ones. Returns the sessions removed (the caller drops them from its lookups).
 */
export function admitSession(
  sessions: ListWriter<SessionRecord>,
  ofAccount: SessionRecord[],
  session: SessionRecord,
  now: number,
  cap = MAX_SESSIONS_PER_ACCOUNT,
): SessionRecord[] {
  const removed: SessionRecord[] = []
  for (let i = ofAccount.length - 1; i >= 0; i--) {
    if (Date.parse(ofAccount[i].expiresAt) <= now) removed.push(...ofAccount.splice(i, 1))
  }
  while (ofAccount.length >= cap) removed.push(ofAccount.shift()!)
  for (const gone of removed) sessions.remove(gone.id)
  sessions.push(session)
  ofAccount.push(session)
  return removed
}

/** Drops every expired session (a periodic sweep): one pass, and the commit logs one deletion each. */
export function removeExpiredSessions(sessions: ListWriter<SessionRecord>, now: number): SessionRecord[] {
  return sessions.removeWhere((session) => Date.parse(session.expiresAt) <= now)
}
