// The CLI's own HTTP/1.1 request (src/cli/svc/http1.ts), run by Node (as the served file runs it)
// and by Bun (the compiled one), against real servers: Bun.serve, and a TCP server that sends
// exactly the bytes of an answer (chunked, interim 1xx, no length, cut short, split anywhere).
import { beforeAll, describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import { parseAnswer, request1 } from '../../src/cli/svc/http1'
import { tempDir } from '../support/server'

const NODE = Bun.which('node')
if (!NODE && process.env.CI === 'true') throw new Error('CI=true: node (Node.js 20+) is required')

interface Outcome {
  status?: number
  headers?: Record<string, string>
  body?: string
  sent?: boolean
  error?: string
}

let driver: string

beforeAll(async () => {
  const dir = tempDir('svc-http1-')
  const built = await Bun.build({ entrypoints: [join(import.meta.dir, '../../src/cli/svc/http1.ts')], target: 'node', format: 'cjs' })
  if (!built.success) throw new Error(built.logs.join('\n'))
  writeFileSync(join(dir, 'http1.js'), await built.outputs[0].text())
  driver = join(dir, 'driver.js')
  writeFileSync(
    driver,
    `const { request1 } = require('./http1.js')
const [url, method, headers, body] = process.argv.slice(2)
let sent = false
request1(new URL(url), method, JSON.parse(headers), body === '-' ? undefined : body, () => { sent = true }).then(
  (a) => console.log(JSON.stringify({ status: a.status, headers: Object.fromEntries(a.headers), body: a.body.toString('utf8'), sent })),
  (e) => console.log(JSON.stringify({ error: e.message })),
)
`,
  )
})

type Runtime = 'node' | 'bun'
const runtimes: Runtime[] = NODE ? ['node', 'bun'] : ['bun']

async function ask(runtime: Runtime, url: string, method = 'GET', headers: Record<string, string> = {}, body?: string): Promise<Outcome> {
  if (runtime === 'node') {
    const proc = Bun.spawn([NODE!, driver, url, method, JSON.stringify(headers), body ?? '-'], { stdout: 'pipe', stderr: 'inherit' })
    const text = await new Response(proc.stdout).text()
    await proc.exited
    return JSON.parse(text) as Outcome
  }
  let sent = false
  try {
    const a = await request1(new URL(url), method, headers, body, () => {
      sent = true
    })
    return { status: a.status, headers: Object.fromEntries(a.headers), body: a.body.toString('utf8'), sent }
  } catch (error) {
    return { error: (error as Error).message }
  }
}

/** A TCP server that answers each connection with `parts` (written apart), then closes unless `keepOpen`. */
function rawServer(parts: (string | Buffer)[], options: { keepOpen?: boolean } = {}) {
  const requests: Buffer[] = []
  const server = Bun.listen<{ buffer: Buffer[] }>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(socket) {
        socket.data = { buffer: [] }
      },
      data(socket, data) {
        socket.data.buffer.push(Buffer.from(data))
        const all = Buffer.concat(socket.data.buffer)
        const headEnd = all.indexOf('\r\n\r\n')
        if (headEnd === -1) return
        const length = Number(/content-length: (\d+)/i.exec(all.toString('latin1', 0, headEnd))?.[1] ?? 0)
        if (all.length < headEnd + 4 + length) return
        requests.push(all)
        void (async () => {
          for (const part of parts) {
            socket.write(part)
            socket.flush()
            // Apart, so that the client reads them as separate chunks.
            await Bun.sleep(3)
          }
          if (!options.keepOpen) socket.end()
        })()
      },
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, requests, stop: () => server.stop(true) }
}

describe.each(runtimes)('request1 on %s', (runtime) => {
  test('the request as sent: method, path and query, host, connection: close, the headers, a UTF-8 body with its length', async () => {
    const server = rawServer(['HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok'])
    try {
      const outcome = await ask(
        runtime,
        `${server.url}/api/x?a=1&b=%20`,
        'POST',
        { authorization: 'Bearer k', 'content-type': 'application/json' },
        '{"v":"é"}',
      )
      expect(outcome).toEqual({ status: 201, headers: { 'content-length': '2' }, body: 'ok', sent: true })
      const [request] = server.requests
      const text = request.toString('utf8')
      expect(text.startsWith('POST /api/x?a=1&b=%20 HTTP/1.1\r\n')).toBe(true)
      const [head, body] = text.split('\r\n\r\n')
      expect(head.split('\r\n').slice(1).sort()).toEqual(
        [
          `host: 127.0.0.1:${new URL(server.url).port}`,
          'connection: close',
          'authorization: Bearer k',
          'content-type: application/json',
          'content-length: 10',
        ].sort(),
      )
      expect(body).toBe('{"v":"é"}')
    } finally {
      server.stop()
    }
  })

  test('an answer with a length ends there, even when the server keeps the connection open', async () => {
    const server = rawServer(['HTTP/1.1 200 OK\r\nContent-Length: 11\r\nX-A: 1\r\nx-a: 2\r\n\r\nhello', ' world'], { keepOpen: true })
    try {
      expect(await ask(runtime, server.url)).toEqual({ status: 200, headers: { 'content-length': '11', 'x-a': '1, 2' }, body: 'hello world', sent: true })
    } finally {
      server.stop()
    }
  })

  test('chunked (with an extension and a trailer), cut in the middle of sizes and data', async () => {
    const server = rawServer(['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhel', 'lo\r\n', '6\r\n wor', 'ld\r\n0\r\nX-T: 1\r\n', '\r\n'])
    try {
      expect(await ask(runtime, server.url)).toMatchObject({ status: 200, body: 'hello world' })
    } finally {
      server.stop()
    }
  })

  test('interim answers (103, 100) are skipped; no length: the body runs to the close; a 304 has none', async () => {
    const hints = rawServer(['HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n', 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\nto the end', ' of it'])
    const notModified = rawServer(['HTTP/1.1 304 Not Modified\r\nETag: "a"\r\n\r\n'], { keepOpen: true })
    try {
      expect(await ask(runtime, hints.url)).toEqual({ status: 200, headers: {}, body: 'to the end of it', sent: true })
      expect(await ask(runtime, notModified.url)).toEqual({ status: 304, headers: { etag: '"a"' }, body: '', sent: true })
    } finally {
      hints.stop()
      notModified.stop()
    }
  })

  test('failures: cut short, no answer, not HTTP, headers without end, a refused connection, a header value with a line break', async () => {
    const cases: [(string | Buffer)[], string][] = [
      [['HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort'], 'the connection closed before the answer was complete'],
      [['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n'], 'the connection closed before the answer was complete'],
      [[], 'the connection closed without an answer'],
      [['SSH-2.0-OpenSSH_9.6\r\n\r\n'], 'not an HTTP answer'],
      [[`HTTP/1.1 200 OK\r\nX: ${'a'.repeat(70_000)}`], 'the answer’s headers are too long'],
    ]
    for (const [parts, message] of cases) {
      const server = rawServer(parts)
      try {
        expect((await ask(runtime, server.url)).error).toStartWith(message)
      } finally {
        server.stop()
      }
    }
    const closed = rawServer([])
    const url = closed.url
    closed.stop()
    expect((await ask(runtime, url)).error).toMatch(/ECONNREFUSED|refused/i)
    const server = rawServer(['HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'])
    try {
      expect((await ask(runtime, server.url, 'GET', { authorization: 'Bearer k\r\nX-Injected: 1' })).error).toContain('Invalid character in header content')
      expect(server.requests).toHaveLength(0)
    } finally {
      server.stop()
    }
  })

  test('Bun.serve: a streamed (chunked) answer and a plain one', async () => {
    const server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch(request) {
        if (new URL(request.url).pathname === '/plain') return new Response('plain ✓', { headers: { etag: '"t"' } })
        const stream = new ReadableStream({
          async pull(controller) {
            for (const piece of ['one ', 'two ', 'three ✓']) {
              controller.enqueue(new TextEncoder().encode(piece))
              await Bun.sleep(2)
            }
            controller.close()
          },
        })
        return new Response(stream)
      },
    })
    try {
      const streamed = await ask(runtime, `http://127.0.0.1:${server.port}/stream`)
      expect(streamed).toMatchObject({ status: 200, body: 'one two three ✓' })
      expect(streamed.headers!['transfer-encoding']).toBe('chunked')
      expect(await ask(runtime, `http://127.0.0.1:${server.port}/plain`)).toMatchObject({ status: 200, body: 'plain ✓', headers: { etag: '"t"' } })
    } finally {
      server.stop(true)
    }
  })
})

describe('parseAnswer', () => {
  test('every prefix of an answer is incomplete, the whole one is the body (random bodies, chunkings and lengths)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.array(fc.nat(300), { maxLength: 6 }), fc.boolean(), (body, cuts, chunked) => {
        const bytes = Buffer.from(body)
        let answer: Buffer
        if (chunked) {
          const points = [...new Set(cuts.filter((c) => c > 0 && c < bytes.length))].sort((a, b) => a - b)
          const pieces: Buffer[] = []
          let from = 0
          for (const cut of [...points, bytes.length]) {
            if (cut > from) pieces.push(Buffer.from(`${(cut - from).toString(16)}\r\n`), bytes.subarray(from, cut), Buffer.from('\r\n'))
            from = cut
          }
          answer = Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n'), ...pieces, Buffer.from('0\r\n\r\n')])
        } else {
          answer = Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\ncontent-length: ${bytes.length}\r\n\r\n`), bytes])
        }
        for (let i = 0; i < answer.length; i++) expect(parseAnswer(answer.subarray(0, i), 'GET', false)).toBeNull()
        expect(parseAnswer(answer, 'GET', false)!.body.equals(bytes)).toBe(true)
      }),
      { numRuns: 200 },
    )
  })
})
