// Issue 36, item 13: `svc login http://<another machine>` says, before anything is sent, that the
// access key will cross the network in clear text; https and this machine (loopback) say nothing.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { signUp } from '../support/client'
import { removeDir, startTestServer, type TestServer } from '../support/server'
import { buildCli, startSvc, svc, svcHome } from './support'

let server: TestServer
let key: string

beforeAll(async () => {
  await buildCli()
  server = await startTestServer()
  const owner = await signUp(server.url)
  key = (await owner.post('/api/access-keys', { name: 'cli', scopes: ['entries:read'] })).body.key
}, 60_000)
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

const WARNING = /warning: .*clear text/

test('a plain http URL of another machine is warned about on stderr before anything is sent', async () => {
  // TEST-NET-1: nothing answers there, so the warning can only have come before the request.
  for (const args of [
    ['login', 'http://192.0.2.1:9'],
    ['login', '--key', 'http://vault.example.com'],
  ]) {
    const running = startSvc(args, { env: svcHome().env })
    try {
      await running.waitFor((out) => WARNING.test(out.stderr))
      expect(running.output.stderr).toContain(args.at(-1)!)
      expect(running.output.stdout).toBe('')
    } finally {
      running.proc.kill('SIGKILL')
      await running.proc.exited
    }
  }
})

test('loopback over http and https URLs sign in without the warning', async () => {
  const port = new URL(server.url).port
  for (const url of [server.url, `http://localhost:${port}`]) {
    const signedIn = await svc(['login', '--key', url], { env: svcHome().env, stdin: `${key}\n` })
    expect(signedIn.code).toBe(0)
    expect(signedIn.stderr).toContain('Signed in')
    expect(signedIn.stderr).not.toMatch(WARNING)
  }
  // https to a name that does not resolve: it fails, but says nothing about clear text.
  const https = await svc(['login', '--key', 'https://vault.invalid'], { env: svcHome().env, stdin: `${key}\n` })
  expect(https.code).not.toBe(0)
  expect(https.stderr).not.toMatch(WARNING)
})
