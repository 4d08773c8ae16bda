// Every failure is { error, code }: unknown routes, malformed JSON, oversize bodies (with and
// without Content-Length), validation (400, never 422).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { signUp, type Client } from '../support/client'
import { removeDir, startTestServer, type TestServer } from '../support/server'

let server: TestServer
let alice: Client

beforeAll(async () => {
  server = await startTestServer()
  alice = await signUp(server.url)
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

const MIB = 1024 * 1024

function expectErrorBody(body: unknown, code: string) {
  expect(body).toEqual({ error: expect.any(String), code })
  expect((body as any).error.length).toBeGreaterThan(0)
}

/** Sends a raw HTTP/1.1 request over a socket and returns the status line and body. */
function rawRequest(port: number, head: string, chunks: (string | Uint8Array)[]): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let received = ''
    socket.on('data', (data) => {
      received += data.toString('latin1')
    })
    socket.on('error', (error) => (received ? undefined : reject(error)))
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0)
      resolve({ status, text: received.slice(received.indexOf('\r\n\r\n') + 4) })
    })
    socket.on('connect', async () => {
      socket.write(head)
      for (const chunk of chunks) {
        if (socket.destroyed) break
        socket.write(chunk)
        await Bun.sleep(0)
      }
    })
  })
}

describe('error bodies', () => {
  test('an unknown route is 404 NOT_FOUND in JSON, for every method, with or without credentials', async () => {
    for (const answer of [
      await alice.get('/api/nope'),
      await alice.post('/api/nope', { a: 1 }),
      await alice.anonymous().delete('/api/categories/x/y/z'),
      await alice.anonymous().get('/api/'),
    ]) {
      expect(answer.status).toBe(404)
      expect(answer.headers.get('content-type')).toContain('application/json')
      expectErrorBody(answer.body, 'NOT_FOUND')
    }
  })

  test('malformed JSON is 400 INVALID_JSON', async () => {
    for (const text of ['{"name":', '{name: 1}', 'nul', '[1,2']) {
      const answer = await alice.post('/api/categories', text)
      expect(answer.status).toBe(400)
      expectErrorBody(answer.body, 'INVALID_JSON')
    }
    expect((await alice.get('/api/categories')).body).toEqual([])
  })

  test('validation failures are 400 VALIDATION_ERROR naming the field, never 422', async () => {
    const cases: [unknown, string][] = [
      [{ keyType: 'group' }, 'name'],
      [{ name: 5, keyType: 'group' }, 'name'],
      [{ name: 'x', keyType: 'group', surprise: true }, 'surprise'],
    ]
    for (const [body, field] of cases) {
      const answer = await alice.post('/api/categories', body)
      expect(answer.status).toBe(400)
      expectErrorBody(answer.body, 'VALIDATION_ERROR')
      expect(answer.body.error).toContain(field)
    }
    for (const body of ['[]', '"text"', '42', '']) {
      const answer = await alice.post('/api/categories', body)
      expect(answer.status).toBe(400)
      expect(answer.body.code).toMatch(/^(VALIDATION_ERROR|INVALID_JSON)$/)
    }
  })

  test('credentials are checked before the body: 401 beats 400', async () => {
    const anon = await alice.anonymous().post('/api/categories', '{"broken')
    expect(anon.status).toBe(401)
    expectErrorBody(anon.body, 'AUTH_REQUIRED')
  })
})

describe('body size', () => {
  const big = JSON.stringify({ name: 'x'.repeat(2 * MIB + 10), keyType: 'group' })

  test('a body over 2 MiB with Content-Length is 413 PAYLOAD_TOO_LARGE', async () => {
    const answer = await alice.post('/api/categories', big)
    expect(answer.status).toBe(413)
    expectErrorBody(answer.body, 'PAYLOAD_TOO_LARGE')
    // Also before authentication.
    const anon = await alice.anonymous().post('/api/auth/login', big)
    expect(anon.status).toBe(413)
    expectErrorBody(anon.body, 'PAYLOAD_TOO_LARGE')
  })

  test('a body over 2 MiB sent chunked (no Content-Length) is 413 PAYLOAD_TOO_LARGE', async () => {
    const port = Number(new URL(server.url).port)
    const piece = 'x'.repeat(64 * 1024)
    const chunks: string[] = ['{"name":"'.length.toString(16) + '\r\n{"name":"\r\n']
    for (let sent = 0; sent < 2 * MIB + 128 * 1024; sent += piece.length) chunks.push(`${piece.length.toString(16)}\r\n${piece}\r\n`)
    chunks.push('"}'.length.toString(16) + '\r\n"}\r\n0\r\n\r\n')
    const head =
      `POST /api/categories HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nCookie: svc_session=${alice.credentials.cookie}\r\n` +
      'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n'
    const answer = await rawRequest(port, head, chunks)
    expect(answer.status).toBe(413)
    const json = answer.text.slice(answer.text.indexOf('{'), answer.text.lastIndexOf('}') + 1)
    expectErrorBody(JSON.parse(json), 'PAYLOAD_TOO_LARGE')
  })

  test('a body just under 2 MiB is read (and then validated)', async () => {
    const body = JSON.stringify({ name: 'x'.repeat(2 * MIB - 100), keyType: 'group' })
    const answer = await alice.post('/api/categories', body)
    expect(answer.status).toBe(400)
    expect(answer.body.code).toBe('VALIDATION_ERROR')
    expect(answer.body.error).toContain('name')
  })
})
