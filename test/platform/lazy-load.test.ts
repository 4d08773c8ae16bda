// Libraries loaded on first use (src/http/lazy.ts): a load that fails answers that request with a
// clear 500 naming the feature, is logged, and is tried again on the next use; the server goes on.
// Checked on the helper, on an app with the error handler, and on the built bundle with the
// passkey library's chunk removed (the way a half-copied dist/ would miss it).
import { afterAll, describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync, unlinkSync } from 'node:fs'
import { join } from 'node:path'
import { Elysia } from 'elysia'
import { errorHandler } from '../../src/http/error-handler'
import { lazy, LazyLoadError } from '../../src/http/lazy'
import { signUp } from '../support/client'
import { removeDir, ROOT, spawnServer, tempDir } from '../support/server'

const dirs: string[] = []
afterAll(() => dirs.forEach(removeDir))

describe('lazy()', () => {
  test('loads once on first call and keeps the module', async () => {
    let loads = 0
    const load = lazy('Thing', async () => ({ n: ++loads }))
    expect(loads).toBe(0)
    expect(await load()).toEqual({ n: 1 })
    expect(await load()).toEqual({ n: 1 })
    expect(loads).toBe(1)
  })

  test('a failed load throws LazyLoadError naming the feature and is tried again next call', async () => {
    let loads = 0
    const load = lazy('Passkeys', async () => {
      if (++loads === 1) throw new Error('Cannot find module "./chunk-x.js"')
      return 'loaded'
    })
    const error = await load().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LazyLoadError)
    expect((error as LazyLoadError).feature).toBe('Passkeys')
    expect((error as Error).message).toContain('Cannot find module')
    expect(await load()).toBe('loaded')
    expect(loads).toBe(2)
  })
})

test('the error handler answers a failed load with a 500 naming the feature, logs the cause, and other routes answer', async () => {
  const lines: string[] = []
  const failing = lazy('Passkeys', () => Promise.reject(new Error('Cannot find module "./chunk-gone.js"')))
  const app = new Elysia()
    .use(errorHandler((line) => lines.push(line)))
    .get('/needs-it', async () => {
      await failing()
      return 'never'
    })
    .get('/other', () => 'fine')
  const response = await app.handle(new Request('http://localhost/needs-it'))
  expect(response.status).toBe(500)
  expect(await response.json()).toEqual({ error: 'Passkeys could not be loaded on this server; see its log', code: 'INTERNAL_ERROR' })
  expect(lines.join('\n')).toContain('Passkeys: could not be loaded: Cannot find module "./chunk-gone.js"')
  expect(await (await app.handle(new Request('http://localhost/other'))).text()).toBe('fine')
})

test('the built bundle without the passkey library answers its route with that 500 and keeps serving', async () => {
  const outdir = tempDir('svc-vault-lazy-build-')
  dirs.push(outdir)
  const build = Bun.spawnSync(['bun', 'scripts/build.ts', `--outdir=${outdir}`], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  expect(build.exitCode, build.stderr.toString()).toBe(0)
  const chunks = readdirSync(outdir).filter(
    (name) => name.endsWith('.js') && readFileSync(join(outdir, name), 'utf8').includes('// node_modules/@simplewebauthn/server/'),
  )
  expect(chunks.length).toBeGreaterThan(0)
  for (const chunk of chunks) unlinkSync(join(outdir, chunk))

  const server = await spawnServer({ command: ['bun', join(outdir, 'index.js')], store: 'file' })
  try {
    const user = await signUp(server.url)
    const options = await user.post('/api/account/passkeys/options', {})
    expect(options.status).toBe(500)
    expect(options.body).toEqual({ error: 'Passkeys could not be loaded on this server; see its log', code: 'INTERNAL_ERROR' })
    expect(server.output()).toContain('Passkeys: could not be loaded')
    // Still running, and the rest of the API answers.
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
    expect((await user.get('/api/categories')).status).toBe(200)
  } finally {
    await server.stop()
  }
}, 60_000)
