// Helpers for the account-protection tests (issue 16): a settable clock, codes computed by
// oathtool (independently of the server's code), and cookie handling for the two-step sign-in.
import { Client, PASSWORD } from '../support/client'

/** A clock the test moves by hand (the server reads it through `now`). */
export function testClock(start = Date.UTC(2026, 0, 15, 12, 0, 0)) {
  let at = start
  return {
    now: () => at,
    set: (ms: number) => void (at = ms),
    advance: (ms: number) => void (at += ms),
  }
}

/** The TOTP code oathtool computes for a base32 secret at a time (epoch ms). */
export function oathtool(secret: string, atMs: number): string {
  const run = Bun.spawnSync(['oathtool', '--totp', '-b', secret, '--now', `@${Math.floor(atMs / 1000)}`])
  if (run.exitCode !== 0) throw new Error(`oathtool failed: ${run.stderr.toString()}`)
  return run.stdout.toString().trim()
}

/** Every cookie a response set, as name -> value (an expired one as ''). */
export function setCookies(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {}
  for (const line of headers.getSetCookie()) {
    const [pair] = line.split(';')
    const eq = pair.indexOf('=')
    out[pair.slice(0, eq)] = pair.slice(eq + 1)
  }
  return out
}

export function setCookieLine(headers: Headers, name: string): string | undefined {
  return headers.getSetCookie().find((line) => line.startsWith(`${name}=`))
}

export async function post(base: string, path: string, body: unknown, cookies: Record<string, string> = {}, headers: Record<string, string> = {}) {
  const cookie = Object.entries(cookies)
    .filter(([, v]) => v)
    .map(([k, v]) => `${k}=${v}`)
    .join('; ')
  const response = await fetch(base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}), ...headers },
    body: JSON.stringify(body),
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null, cookies: setCookies(response.headers) }
}

/** Turns on two-factor sign-in for a signed-in client; answers the secret and recovery codes. */
export async function enableTwoFactor(client: Client, nowMs: number, password = PASSWORD) {
  const setup = await client.post('/api/account/2fa/setup', { password })
  if (setup.status !== 200) throw new Error(`setup: ${setup.status} ${setup.text}`)
  const enable = await client.post('/api/account/2fa/enable', { code: oathtool(setup.body.secret, nowMs) })
  if (enable.status !== 200) throw new Error(`enable: ${enable.status} ${enable.text}`)
  return { secret: setup.body.secret as string, recoveryCodes: enable.body.recoveryCodes as string[], setup: setup.body }
}
