// A small HTTP client for tests: JSON in and out, a session cookie or an access key.
export interface Answer<T = any> {
  status: number
  body: T
  text: string
  headers: Headers
}

let counter = 0
export const uniqueEmail = (tag = 'user') => `${tag}-${Date.now()}-${++counter}@example.test`
export const PASSWORD = 'correct horse battery'

export class Client {
  constructor(
    readonly base: string,
    readonly credentials: { cookie?: string; key?: string } = {},
  ) {}

  withKey(key: string): Client {
    return new Client(this.base, { key })
  }

  anonymous(): Client {
    return new Client(this.base)
  }

  async request<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer<T>> {
    const all: Record<string, string> = { ...headers }
    if (this.credentials.cookie) all.cookie = `svc_session=${this.credentials.cookie}`
    if (this.credentials.key) all.authorization = `Bearer ${this.credentials.key}`
    let payload: string | undefined
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body)
      all['content-type'] ??= 'application/json'
    }
    const response = await fetch(this.base + path, { method, headers: all, body: payload, redirect: 'manual' })
    const text = await response.text()
    let parsed: any = text
    // JSON, not JSON Lines (application/x-ndjson: the audit export stays text).
    if (/\/json|\+json/.test(response.headers.get('content-type') ?? '') && text) parsed = JSON.parse(text)
    return { status: response.status, body: parsed, text, headers: response.headers }
  }

  get<T = any>(path: string, headers?: Record<string, string>) {
    return this.request<T>('GET', path, undefined, headers)
  }
  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('POST', path, body, headers)
  }
  put<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('PUT', path, body, headers)
  }
  delete<T = any>(path: string, headers?: Record<string, string>) {
    return this.request<T>('DELETE', path, undefined, headers)
  }

  /**
   * Confirms it is the owner again (POST /api/auth/reauth, issue 36): what outlives a session
   * (access keys, passkeys, the webhook...) needs a sign-in or this within the last 10 minutes.
   */
  async reauth(proof: Record<string, unknown> = { password: PASSWORD }): Promise<Answer> {
    const answer = await this.post('/api/auth/reauth', proof)
    if (answer.status !== 200) throw new Error(`re-authentication failed: ${answer.status} ${answer.text}`)
    return answer
  }

  /** Creates an access key with these scopes and returns a client using it (re-authenticating with PASSWORD when the session's proof is stale). */
  async keyClient(scopes: string[], extra: Record<string, unknown> = {}): Promise<Client> {
    const body = { name: `key ${++counter}`, scopes, ...extra }
    let created = await this.post('/api/access-keys', body)
    if (created.status === 403 && created.body?.code === 'REAUTHENTICATION_REQUIRED') {
      await this.reauth()
      created = await this.post('/api/access-keys', body)
    }
    if (created.status !== 201) throw new Error(`access key not created: ${created.status} ${created.text}`)
    return this.withKey(created.body.key)
  }
}

export function sessionCookie(headers: Headers): string | undefined {
  for (const line of headers.getSetCookie()) {
    const match = /^svc_session=([^;]*)/.exec(line)
    if (match) return match[1]
  }
  return undefined
}

/** Registers a new user and returns a client signed in as them. */
export async function signUp(base: string, email = uniqueEmail(), password = PASSWORD): Promise<Client & { user: any; email: string }> {
  const response = await fetch(`${base}/api/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  })
  if (response.status !== 201) throw new Error(`register failed: ${response.status} ${await response.text()}`)
  const { user } = (await response.json()) as { user: any }
  const client = new Client(base, { cookie: sessionCookie(response.headers) }) as Client & { user: any; email: string }
  client.user = user
  client.email = email
  return client
}
