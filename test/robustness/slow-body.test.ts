// Issue 14, "one request must not freeze the server", on a raw socket over loopback: a body
// trickled slowly gets 408 REQUEST_TIMEOUT once SVC_BODY_TIMEOUT has passed, and its connection is
// closed (it held one for 32 s before); a request without valid credentials hears its 401 (or
// 403) without the server waiting for the 2 MiB its Content-Length announces.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Socket } from 'bun'
import { signUp, type Client } from '../support/client'
import { startTestServer, type TestServer } from '../support/server'

let server: TestServer
let alice: Client
let port: number

beforeAll(async () => {
  server = await startTestServer({ env: { SVC_BODY_TIMEOUT: '1s' } })
  port = Number(new URL(server.url).port)
  alice = await signUp(server.url)
})
afterAll(() => server.stop())

interface RawConnection {
  write(text: string): void
  /** Resolves with everything received once a whole answer (headers and its Content-Length of body) is in. */
  answer: Promise<string>
  /** Resolves when the server closes the connection. */
  closed: Promise<void>
  end(): void
}

async function connect(): Promise<RawConnection> {
  let received = ''
  let onAnswer!: (text: string) => void
  let onClose!: () => void
  const answer = new Promise<string>((resolve) => (onAnswer = resolve))
  const closed = new Promise<void>((resolve) => (onClose = resolve))
  const complete = () => {
    const end = received.indexOf('\r\n\r\n')
    if (end < 0) return false
    const length = Number(/content-length: *(\d+)/i.exec(received.slice(0, end))?.[1] ?? 0)
    return Buffer.byteLength(received.slice(end + 4)) >= length
  }
  const socket: Socket = await Bun.connect({
    hostname: '127.0.0.1',
    port,
    socket: {
      data(_socket, data) {
        received += data.toString()
        if (complete()) onAnswer(received)
      },
      close() {
        onAnswer(received)
        onClose()
      },
      error() {
        onClose()
      },
    },
  })
  return { write: (text) => void socket.write(text), answer, closed, end: () => socket.end() }
}

const TWO_MIB = 2 * 1024 * 1024

function head(path: string, headers: Record<string, string>, length = TWO_MIB): string {
  const lines = Object.entries({ host: `127.0.0.1:${port}`, 'content-type': 'application/json', 'content-length': String(length), ...headers })
  return `POST ${path} HTTP/1.1\r\n${lines.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`
}

const statusOf = (answer: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1])
const bodyOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))

/** Races a promise against a deadline; the label says which step did not happen in time. */
async function within<T>(ms: number, promise: Promise<T>, label: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${label}: nothing within ${ms} ms`)), ms)))
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}

describe('credentials before the body', () => {
  test('no credentials, an unknown key, a key without the scope: 401/403 arrive while 2 MiB are announced and 100 bytes sent', async () => {
    const scopeless = (await alice.post('/api/access-keys', { name: 'stats', scopes: ['stats:read'] })).body.key
    const cases: [Record<string, string>, number, string][] = [
      [{}, 401, 'AUTH_REQUIRED'],
      [{ authorization: 'Bearer svc_unknownunknownunknownunknownunknown0' }, 401, 'AUTH_INVALID_KEY'],
      [{ cookie: 'svc_session=not-a-session' }, 401, 'AUTH_REQUIRED'],
      [{ authorization: `Bearer ${scopeless}` }, 403, 'AUTH_SCOPE_REQUIRED'],
    ]
    for (const [headers, status, code] of cases) {
      const connection = await connect()
      connection.write(head('/api/categories', headers))
      connection.write(`{"name":"${'x'.repeat(80)}`)
      // Well under the body timeout (1 s): the answer does not wait for the body at all.
      const answer = await within(700, connection.answer, `${code} before the body`)
      expect(statusOf(answer)).toBe(status)
      expect(bodyOf(answer).code).toBe(code)
      connection.end()
    }
    expect((await alice.get('/api/categories')).body).toEqual([])
  })

  test('a signed-in request with a whole body is answered as before', async () => {
    const created = await alice.post('/api/categories', { name: 'Whole', keyType: 'simple', envVarName: 'WHOLE' })
    expect(created.status).toBe(201)
    expect((await alice.delete(`/api/categories/${created.body.id}`)).status).toBe(204)
  })
})

describe('a body trickled slowly', () => {
  test('gets 408 REQUEST_TIMEOUT after SVC_BODY_TIMEOUT and its connection is closed; the server answers others meanwhile', async () => {
    for (const [path, headers] of [
      ['/api/categories', { cookie: `svc_session=${alice.credentials.cookie}` }],
      // A public route (no credentials needed) is bounded the same way.
      ['/api/auth/login', {}],
    ] as [string, Record<string, string>][]) {
      const connection = await connect()
      connection.write(head(path, headers, 4096))
      // One byte every 100 ms: Bun's idle timeout never fires, as each byte restarts it.
      const trickle = setInterval(() => connection.write(' '), 100)
      try {
        expect((await alice.get('/api/auth/me')).status).toBe(200)
        const answer = await within(4000, connection.answer, `408 on ${path}`)
        expect(statusOf(answer)).toBe(408)
        expect(bodyOf(answer)).toEqual({ error: expect.stringContaining('not received'), code: 'REQUEST_TIMEOUT' })
        await within(2000, connection.closed, `connection closed on ${path}`)
      } finally {
        clearInterval(trickle)
        connection.end()
      }
    }
    expect((await alice.get('/api/categories')).body).toEqual([])
  }, 20_000)
})
