// Helpers of the two-instance tests (issue 34).
import { Client, sessionCookie, PASSWORD, type Answer } from '../support/client'
import { UPSTREAM_HEADER } from '../support/caddy'
import { clusterMissing } from '../support/pg-cluster'
import { missingPostgres } from '../support/postgres'
import { describeNeeding, missingCommand } from '../support/requirements'
import type { TestServer } from '../support/server'

/**
 * `describe` when what the tests need is here; else skipped saying why, or failing under CI=true
 * (describeNeeding): the shared cluster (SVC_TEST_POSTGRES), caddy, a cluster of their own.
 */
export function describeOnPostgres(needs: { caddy?: boolean; ownCluster?: boolean } = {}): (name: string, body: () => void) => void {
  const missing = [missingPostgres, needs.caddy ? missingCommand('caddy') : null, needs.ownCluster ? clusterMissing() : null].filter(Boolean)
  return describeNeeding(missing.length ? missing.join('; ') : null)
}

/** The same credentials against another origin (another instance, or the balancer). */
export const at = (client: Client, base: string) => new Client(base, client.credentials)

/** Which instance (host:port) answered through the balancer. */
export const upstreamOf = (answer: Answer) => answer.headers.get(UPSTREAM_HEADER) ?? ''

/** Signs in with a password at `base`; the client of the new session. */
export async function login(base: string, email: string, password = PASSWORD): Promise<Client> {
  const response = await fetch(`${base}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  })
  if (response.status !== 200) throw new Error(`login ${response.status} ${await response.text()}`)
  return new Client(base, { cookie: sessionCookie(response.headers) })
}

/** Resolves once `check` holds, tested each time `subscribe`'s event fires; rejects after `ms`. */
export function whenEvent(subscribe: (fire: () => void) => void, check: () => boolean, ms: number, what: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not within ${ms} ms: ${what}`)), ms)
    const fire = () => {
      if (!check()) return
      clearTimeout(timer)
      resolve()
    }
    subscribe(fire)
    fire()
  })
}

/**
 * Runs `act` (a request to another instance), then waits until `check` holds on `server`, tested
 * each time `server` takes in other instances' writes to the accounts (Accounts.takeIn: by
 * NOTIFY, with no request to it); rejects after 5 s.
 */
export async function takenIn(server: TestServer, act: () => Promise<unknown>, check: () => boolean, what: string): Promise<void> {
  const accounts = server.deps.accounts
  const listeners: (() => void)[] = []
  const takeIn = accounts.takeIn.bind(accounts)
  accounts.takeIn = (changes) => {
    takeIn(changes)
    for (const listener of listeners) listener()
  }
  try {
    await act()
    await whenEvent((fire) => listeners.push(fire), check, 5000, what)
  } finally {
    accounts.takeIn = takeIn
  }
}
