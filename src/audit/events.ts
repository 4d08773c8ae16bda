// The audit event and what the recorder is told about each one: the event's shape, where a
// request came from, who acted (passed in: the recorder knows no session), a chain break, the
// window of repeated code reads. Split from recorder.ts, which writes and reads the logs.
import type { PeerSource } from '../http/client-address'
import type { AuditActor, AuditEvent, AuditRecordRef } from './schema'
import type { ChainProblem } from './chain'

/** An event as a caller gives it: the recorder adds its id (unless given), time, chain. */
export type AuditEventInput = Omit<AuditEvent, 'id' | 'time' | 'outcome' | 'records' | 'details'> &
  Partial<Pick<AuditEvent, 'id' | 'outcome' | 'records' | 'details'>>

export type { AuditEvent }

/** Where a request came from: what every event of it carries besides the action. */
export interface AuditSource {
  request: Request
  server: PeerSource | null | undefined
}

// The store's: a session and its sign-in event name the method alike.
export type { SignInMethod } from '../store/records'

export const ref = (kind: string, record: { id: string; name?: string | null }, name?: string | null): AuditRecordRef => ({
  kind,
  id: record.id,
  name: name ?? record.name ?? null,
})

/**
 * Who acted, as the sign-in code passes it in (the recorder imports no auth code): an access key,
 * or a session named by its token's hash; neither: anonymous.
 */
export interface AuditCaller {
  accessKey?: { id: string; name: string } | null
  sessionTokenHash?: string | null
  /** In a shared vault: the member acting (the event names them). */
  member?: { userId: string; email: string } | null
}

export const actorOf = (auth: AuditCaller | null): AuditActor => {
  const actor = plainActorOf(auth)
  return auth?.member ? { ...actor, userId: auth.member.userId, email: auth.member.email } : actor
}

const plainActorOf = (auth: AuditCaller | null): AuditActor =>
  auth?.accessKey
    ? { type: 'access-key', id: auth.accessKey.id, name: auth.accessKey.name }
    : auth?.sessionTokenHash
      ? sessionActor(auth.sessionTokenHash)
      : { type: 'anonymous', id: null, name: null }

export const sessionActor = (tokenHash: string): AuditActor => ({ type: 'session', id: tokenHash.slice(0, 12), name: null })

/** What opening a log found when the file no longer agrees with its anchor. */
export interface ChainBreak {
  problem: ChainProblem
  line: number
  message: string
}

/** A session's reads of one token's code within REPEAT_WINDOW_MS (repeats.ts). */
export interface RepeatWindow {
  userId: string
  /** The first read's event. */
  id: string
  first: number
  last: number
  count: number
  /** The last read's event (actor, address, user agent). */
  event: AuditEventInput
  recorded: Promise<void>
}

export const REPEAT_WINDOW_MS = 10 * 60_000

export function repeatSummary(window: RepeatWindow): AuditEventInput {
  const { id: _id, ...event } = window.event
  return {
    ...event,
    details: {
      ...event.details,
      count: window.count,
      repeatOf: window.id,
      first: new Date(window.first).toISOString(),
      last: new Date(window.last).toISOString(),
    },
  }
}

export interface AuditQueryInput {
  limit?: number
  cursor?: string
  action?: string
  actor?: string
  /** Only this member's events (a shared vault's non-admin members see their own). */
  memberUserId?: string
  since?: string
  until?: string
}

/** One page of events, newest first: the query's filters, from after its cursor, and whether more could match. */
export async function pageOf(newestFirst: AsyncIterable<AuditEvent>, query: AuditQueryInput): Promise<{ items: AuditEvent[]; nextCursor: string | null }> {
  const limit = query.limit ?? 50
  const since = query.since ? Date.parse(query.since) : -Infinity
  const until = query.until ? Date.parse(query.until) : Infinity
  const matches = (event: AuditEvent) => {
    if (query.action && event.action !== query.action) return false
    if (query.actor && event.actor.id !== query.actor && event.actor.type !== query.actor) return false
    if (query.memberUserId !== undefined && event.actor.userId !== query.memberUserId) return false
    const time = Date.parse(event.time)
    return !(time < since || time >= until)
  }
  const items: AuditEvent[] = []
  // Before the cursor's event is passed, nothing is taken (a cursor never given out: nothing).
  let passedCursor = !query.cursor
  // A further page only when an older event could still match.
  let more = false
  for await (const event of newestFirst) {
    if (!passedCursor) {
      passedCursor = event.id === query.cursor
      continue
    }
    if (!matches(event)) continue
    if (items.length === limit) {
      more = true
      break
    }
    items.push(event)
  }
  return { items, nextCursor: more && items.length > 0 ? items[items.length - 1].id : null }
}

/** A line's event time in ms (NaN when the line is not an event with a time). */
export function timeOf(line: string): number {
  try {
    return Date.parse((JSON.parse(line) as { time?: unknown }).time as string)
  } catch {
    return NaN
  }
}
