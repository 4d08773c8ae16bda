// One HTTP/1.1 request on a connection of its own, written and read by svc itself. On Node,
// node:http's first request costs several milliseconds before its bytes leave (its agent, parser
// and stream machinery are set up on first use), and `svc run` starts only once the vault has
// answered. Connection: close; no redirect is followed; no proxy. A chunked answer is decoded.
import { connect, isIP, type Socket } from 'node:net'

export interface RawAnswer {
  status: number
  /** By lower-case name; a repeated header's values joined with ", ". */
  headers: Map<string, string>
  body: Buffer
}

/** node:http's rule for a header value: tab, visible ASCII, and the upper half of Latin-1. */
const INVALID_HEADER_VALUE = /[^\t\x20-\x7e\x80-\xff]/
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
/** Far more than any answer's headers: a peer that sends more is not a vault. */
const MAX_HEAD_BYTES = 64 * 1024

/**
 * Sends the request and resolves with the whole answer. `onSent` is called once the request is
 * written to the socket. A connection that fails, or ends before the answer is complete, rejects.
 */
export async function request1(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  onSent: (() => void) | null,
): Promise<RawAnswer> {
  const lines = [`${method} ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`, 'connection: close']
  for (const [name, value] of Object.entries(headers)) {
    if (!TOKEN.test(name)) throw new TypeError(`Invalid header name: ${JSON.stringify(name)}`)
    if (INVALID_HEADER_VALUE.test(value)) throw new TypeError(`Invalid character in header content [${JSON.stringify(name)}]`)
    lines.push(`${name}: ${value}`)
  }
  const payload = body === undefined ? undefined : Buffer.from(body, 'utf8')
  if (payload !== undefined) lines.push(`content-length: ${payload.length}`)
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1')

  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  const secure = url.protocol === 'https:'
  const port = Number(url.port || (secure ? 443 : 80))
  // TLS (and node:tls) only for an https vault; the name checked against its certificate is the
  // host's, as node:https checks it (servername, for SNI, only when it is not an address).
  // required, not imported: the served file compiles most of its code with node:vm, where an
  // import() has no loader to go to (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING).
  const socket: Socket = secure
    ? (require('node:tls') as typeof import('node:tls')).connect({ host, port, servername: isIP(host) ? undefined : host })
    : connect({ host, port })

  return new Promise<RawAnswer>((resolve, reject) => {
    const chunks: Buffer[] = []
    let received = 0
    // The answer's whole length in bytes, once its head says it (content-length, or no body).
    let total: number | null | undefined
    let settled = false
    const finish = (error: Error | null, answer?: RawAnswer) => {
      if (settled) return
      settled = true
      socket.destroy()
      if (error) reject(error)
      else resolve(answer!)
    }
    const parse = (ended: boolean) => {
      if (settled) return
      try {
        const answer = parseAnswer(Buffer.concat(chunks, received), method, ended)
        if (answer) finish(null, answer)
      } catch (error) {
        finish(error as Error)
      }
    }
    socket.on('error', (error) => finish(error))
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk)
      received += chunk.length
      // Without waiting for the connection to close when the length is known; otherwise at its end.
      try {
        if (total === undefined) total = answerLength(Buffer.concat(chunks, received), method)
      } catch (error) {
        return finish(error as Error)
      }
      if (typeof total === 'number' && received >= total) parse(false)
    })
    socket.on('end', () => parse(true))
    socket.on('close', () => parse(true))
    socket.write(payload === undefined ? head : Buffer.concat([head, payload]), () => onSent?.())
  })
}

/**
 * How many bytes the answer in `bytes` has in all: undefined while its head is incomplete, null
 * when only the connection's end tells (a chunked body, or one without a length).
 */
function answerLength(bytes: Buffer, method: string): number | null | undefined {
  let start = 0
  for (;;) {
    const headEnd = bytes.indexOf('\r\n\r\n', start, 'latin1')
    if (headEnd === -1) {
      if (bytes.length - start > MAX_HEAD_BYTES) throw new Error('the answer’s headers are too long')
      return undefined
    }
    const head = bytes.toString('latin1', start, headEnd)
    const code = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1])
    if (code >= 100 && code < 200 && code !== 101) {
      start = headEnd + 4
      continue
    }
    if (method === 'HEAD' || code === 204 || code === 304) return headEnd + 4
    if (/\r\ntransfer-encoding:/i.test(head)) return null
    const length = /\r\ncontent-length:[ \t]*(\d{1,15})[ \t]*(?:\r\n|$)/i.exec(head)
    return length ? headEnd + 4 + Number(length[1]) : null
  }
}

/**
 * The answer in `bytes`, or null when more is to come. `ended`: the peer closed the connection,
 * so a body without a length ends here, and an incomplete answer is an error.
 */
export function parseAnswer(bytes: Buffer, method: string, ended: boolean): RawAnswer | null {
  let start = 0
  for (;;) {
    const headEnd = bytes.indexOf('\r\n\r\n', start, 'latin1')
    if (headEnd === -1) {
      if (bytes.length - start > MAX_HEAD_BYTES) throw new Error('the answer’s headers are too long')
      if (ended) throw new Error(bytes.length === 0 ? 'the connection closed without an answer' : 'the connection closed before the answer was complete')
      return null
    }
    const [statusLine, ...fields] = bytes.toString('latin1', start, headEnd).split('\r\n')
    const status = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(statusLine)
    if (!status) throw new Error(`not an HTTP answer: ${JSON.stringify(statusLine.slice(0, 40))}`)
    const code = Number(status[1])
    const headers = new Map<string, string>()
    for (const field of fields) {
      const colon = field.indexOf(':')
      if (colon <= 0) throw new Error('a malformed header in the answer')
      const name = field.slice(0, colon).trim().toLowerCase()
      const value = field.slice(colon + 1).trim()
      const before = headers.get(name)
      headers.set(name, before === undefined ? value : `${before}, ${value}`)
    }
    const bodyStart = headEnd + 4
    // 100 Continue, 103 Early Hints: an interim answer; the final one follows.
    if (code >= 100 && code < 200 && code !== 101) {
      start = bodyStart
      continue
    }
    if (method === 'HEAD' || code === 204 || code === 304) return { status: code, headers, body: Buffer.alloc(0) }
    const coding = headers.get('transfer-encoding')
    if (coding !== undefined && /(?:^|,)\s*chunked\s*$/i.test(coding)) {
      const body = dechunk(bytes, bodyStart)
      if (body === null && ended) throw new Error('the connection closed before the answer was complete')
      return body === null ? null : { status: code, headers, body }
    }
    const length = headers.get('content-length')
    if (length !== undefined) {
      if (!/^\d{1,15}$/.test(length)) throw new Error('the answer’s content-length is not a number')
      const end = bodyStart + Number(length)
      if (bytes.length >= end) return { status: code, headers, body: bytes.subarray(bodyStart, end) }
      if (ended) throw new Error('the connection closed before the answer was complete')
      return null
    }
    // Neither: the body is everything until the connection closes.
    return ended ? { status: code, headers, body: bytes.subarray(bodyStart) } : null
  }
}

/** A chunked body from `start` on, decoded; null while its last chunk has not arrived. */
function dechunk(bytes: Buffer, start: number): Buffer | null {
  const parts: Buffer[] = []
  let at = start
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', at, 'latin1')
    if (lineEnd === -1) return null
    const sizeText = bytes.toString('latin1', at, lineEnd).split(';')[0].trim()
    if (!/^[0-9a-fA-F]{1,12}$/.test(sizeText)) throw new Error('a malformed chunk in the answer')
    const size = Number.parseInt(sizeText, 16)
    at = lineEnd + 2
    if (size === 0) {
      // Trailer fields, if any, then an empty line.
      for (;;) {
        const end = bytes.indexOf('\r\n', at, 'latin1')
        if (end === -1) return null
        if (end === at) return Buffer.concat(parts)
        at = end + 2
      }
    }
    if (bytes.length < at + size + 2) return null
    parts.push(bytes.subarray(at, at + size))
    at += size
    if (bytes[at] !== 0x0d || bytes[at + 1] !== 0x0a) throw new Error('a malformed chunk in the answer')
    at += 2
  }
}
