// Caddy as a load balancer in front of several vault instances (issue 34: any load balancer, no
// sticky sessions). Round robin, so that requests one after another go to each instance in turn;
// every answer names the instance that gave it (X-Svc-Upstream), so a test can tell. A dial that
// fails (an instance killed) is tried on the next one, as a balancer in production would.
// Under CI=true a missing caddy fails (scripts/test.sh installs it); elsewhere tests skip.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { watchVault, forgetVault } from './answer-check'
import { unassignedPort } from './ports'
import { removeDir, tempDir } from './server'

export const UPSTREAM_HEADER = 'x-svc-upstream'

function caddyPath(): string | null {
  return Bun.which('caddy', { PATH: `${process.env.PATH}:/usr/sbin:/sbin` })
}

export interface Balancer {
  /** Caddy's own origin (http://127.0.0.1:port). */
  url: string
  stop(): Promise<void>
}

/** Caddy in front of `upstreams` (vault URLs), round robin; resolves once it answers. */
export async function startBalancer(upstreams: string[]): Promise<Balancer> {
  const caddy = caddyPath()
  if (!caddy) throw new Error('caddy is not installed (scripts/test.sh installs it)')
  const hosts = upstreams.map((url) => new URL(url).host)
  for (let attempt = 0; ; attempt++) {
    const dir = tempDir('svc-vault-caddy-')
    const port = unassignedPort()
    const url = `http://127.0.0.1:${port}`
    writeFileSync(
      join(dir, 'Caddyfile'),
      `{
	admin off
	auto_https off
}
${url} {
	reverse_proxy ${hosts.join(' ')} {
		lb_policy round_robin
		# A refused dial (an instance gone) is tried on the next instance within this time.
		lb_try_duration 3s
		lb_try_interval 50ms
		fail_duration 30s
		header_down X-Svc-Upstream {http.reverse_proxy.upstream.hostport}
	}
}
`,
    )
    const proc = Bun.spawn([caddy, 'run', '--adapter', 'caddyfile', '--config', join(dir, 'Caddyfile')], {
      env: { ...process.env, HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
      stdout: 'ignore',
      stderr: 'pipe',
    })
    let up = false
    for (let i = 0; i < 200 && !up && proc.exitCode === null; i++) {
      // Through Caddy (it names the instance): not another program that has this port.
      up = await fetch(`${url}/healthz`).then(
        (r) => r.status === 200 && r.headers.has(UPSTREAM_HEADER),
        () => false,
      )
      if (!up) await Bun.sleep(25)
    }
    if (up) {
      await watchVault(url)
      return {
        url,
        async stop() {
          forgetVault(url)
          proc.kill('SIGTERM')
          await proc.exited
          removeDir(dir)
        },
      }
    }
    proc.kill('SIGKILL')
    await proc.exited
    const errors = await new Response(proc.stderr as ReadableStream).text()
    removeDir(dir)
    // The port was taken: another one.
    if (attempt >= 3) throw new Error(`caddy did not start: ${errors.slice(-2000)}`)
  }
}
