// Two-instance tests (issue 34): skipped with a printed reason without a PostgreSQL cluster
// (SVC_TEST_POSTGRES) or caddy, failed instead under CI=true (scripts/test.sh provides both).
import { describe } from 'bun:test'
import { Client, sessionCookie, PASSWORD, type Answer } from '../support/client'
import { caddyPath, UPSTREAM_HEADER } from '../support/caddy'
import { clusterMissing } from '../support/pg-cluster'
import { TEST_POSTGRES } from '../support/postgres'

const CI = process.env.CI === 'true'

/** `describe`, or `describe.skip` with the reason printed when what it needs is missing (never under CI). */
export function describeOnPostgres(needs: { caddy?: boolean; ownCluster?: boolean } = {}): typeof describe | typeof describe.skip {
  const missing = [
    !TEST_POSTGRES && 'SVC_TEST_POSTGRES is not set (no PostgreSQL cluster)',
    needs.caddy && !caddyPath() && 'caddy is not installed',
    needs.ownCluster && clusterMissing(),
  ].filter(Boolean) as string[]
  if (missing.length === 0) return describe
  if (CI) throw new Error(`under CI=true nothing skips: ${missing.join('; ')}`)
  console.log(`skipped: ${missing.join('; ')}`)
  return describe.skip
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
