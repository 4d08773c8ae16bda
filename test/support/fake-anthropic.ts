// A fake Anthropic Messages API on loopback for tests: the SDK's baseURL points at it
// (ANTHROPIC_BASE_URL). It records every request it receives, byte for byte, and answers from a
// script: a tool call, a text answer, a raw (malformed) body, an API error, or no answer at all.

export type FakeReply =
  /** A tool_use block for the tool the request forces (tool_choice.name), with this input. */
  | { tool: unknown; toolName?: string }
  /** A plain text answer: no tool call. */
  | { text: string }
  /** A raw body, such as invalid JSON, with status 200 unless given. */
  | { raw: string; status?: number; contentType?: string }
  /** An API error answer. */
  | { status: number; message?: string }
  /** No answer until the fake stops (for timeouts). */
  | { hang: true }

export interface RecordedRequest {
  method: string
  path: string
  headers: Record<string, string>
  /** The body exactly as received. */
  body: string
  json: any
}

export interface FakeAnthropic {
  url: string
  requests: RecordedRequest[]
  /** Replies for the next requests, in order; once used up, `fallback` answers. */
  script(...replies: FakeReply[]): void
  fallback: (request: RecordedRequest) => FakeReply
  /** Every byte any request carried, for "this never reached the model" checks. */
  everything(): string
  stop(): Promise<void>
}

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'request-id': `req_${crypto.randomUUID()}` } })

function message(request: RecordedRequest, content: unknown[], stopReason: string) {
  return {
    id: `msg_${crypto.randomUUID().replace(/-/g, '')}`,
    type: 'message',
    role: 'assistant',
    model: request.json?.model ?? 'fake',
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 10 },
  }
}

export async function startFakeAnthropic(): Promise<FakeAnthropic> {
  const queue: FakeReply[] = []
  const requests: RecordedRequest[] = []
  const hanging: (() => void)[] = []

  const answer = (reply: FakeReply, request: RecordedRequest): Response | Promise<Response> => {
    if ('hang' in reply) {
      return new Promise<Response>((resolve) => hanging.push(() => resolve(json(500, { type: 'error', error: { type: 'api_error', message: 'stopped' } }))))
    }
    if ('tool' in reply) {
      const name = reply.toolName ?? request.json?.tool_choice?.name ?? 'tool'
      const block = { type: 'tool_use', id: `toolu_${crypto.randomUUID().replace(/-/g, '')}`, name, input: reply.tool }
      return json(200, message(request, [block], 'tool_use'))
    }
    if ('text' in reply) return json(200, message(request, [{ type: 'text', text: reply.text }], 'end_turn'))
    if ('raw' in reply) {
      return new Response(reply.raw, { status: reply.status ?? 200, headers: { 'content-type': reply.contentType ?? 'application/json' } })
    }
    return json(reply.status, { type: 'error', error: { type: 'api_error', message: reply.message ?? 'fake failure' } })
  }

  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const body = await req.text()
      let parsed: any = null
      try {
        parsed = JSON.parse(body)
      } catch {
        parsed = null
      }
      const recorded: RecordedRequest = {
        method: req.method,
        path: new URL(req.url).pathname,
        headers: Object.fromEntries(req.headers),
        body,
        json: parsed,
      }
      requests.push(recorded)
      return answer(queue.shift() ?? fake.fallback(recorded), recorded)
    },
  })

  const fake: FakeAnthropic = {
    url: `http://127.0.0.1:${server.port}`,
    requests,
    script: (...replies) => void queue.push(...replies),
    fallback: () => ({ status: 500, message: 'no scripted reply' }),
    everything: () => requests.map((r) => `${r.method} ${r.path}\n${JSON.stringify(r.headers)}\n${r.body}`).join('\n'),
    async stop() {
      for (const release of hanging.splice(0)) release()
      await server.stop(true)
    },
  }
  return fake
}
