// A real OpenID provider (oidc-provider, with its development login and consent pages) on a
// loopback port, and a small cookie-keeping browser to walk through it. The provider's signing
// key is made here, so a test can also forge ID tokens the provider's JWKS vouches for and have
// the token endpoint answer with them (audience, nonce and expiry checks of the client).
import { createSign, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
// @ts-expect-error oidc-provider ships no type declarations (a test-only dependency)
import Provider from 'oidc-provider'
import { startTestServer, type TestServer } from './server'

/** Claims of an account; its login name (typed into the development login form) is its subject. */
export interface TestAccount {
  email?: string
  email_verified?: boolean
  name?: string
}

/** What the token endpoint answers instead of the provider, when set (a forged token response). */
export type TokenOverride = (form: URLSearchParams) => Record<string, unknown>

export interface TestProvider {
  issuer: string
  clientId: string
  clientSecret: string
  /** Accounts by subject, which is also the login name typed into the development login form. */
  accounts: Map<string, TestAccount>
  /** When set, the next token requests are answered by this function. */
  overrideToken: TokenOverride | undefined
  /** An ID token signed with the provider's own key (RS256, its kid). */
  signIdToken(claims: Record<string, unknown>): string
  /** Same, but signed with a key the provider does not publish. */
  signWithForeignKey(claims: Record<string, unknown>): string
  stop(): Promise<void>
}

/** Where a vault's sign-in comes back to from the provider. */
export const VAULT_CALLBACK = '/api/auth/oidc/callback'

const b64url = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url')

function signJwt(key: KeyObject, kid: string, claims: Record<string, unknown>): string {
  const input = `${b64url({ alg: 'RS256', typ: 'JWT', kid })}.${b64url(claims)}`
  const signature = createSign('RSA-SHA256').update(input).sign(key).toString('base64url')
  return `${input}.${signature}`
}

async function readForm(request: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'))
}

/**
 * Starts the provider on 127.0.0.1 with one confidential client: a vault on 127.0.0.1, on any port.
 * The client is registered as a native application, whose loopback redirect URI matches on any port
 * (RFC 8252, 7.3): a vault can then start on whichever port is free (ports.ts), after the provider.
 */
export async function startTestProvider(): Promise<TestProvider> {
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.writeHead(503).end()
  const server = createServer((req, res) => handler(req, res))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  const kid = 'test-key'
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const foreign = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey
  const clientId = 'svc-vault-test'
  const clientSecret = randomBytes(24).toString('base64url')
  const accounts = new Map<string, TestAccount>()

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        application_type: 'native',
        redirect_uris: [`http://127.0.0.1${VAULT_CALLBACK}`],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [{ ...(privateKey.export({ format: 'jwk' }) as object), kid, alg: 'RS256', use: 'sig' }] as never },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    features: { devInteractions: { enabled: true } },
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 3600, Grant: 3600 },
    async findAccount(_ctx: unknown, id: string) {
      const account = accounts.get(id)
      if (!account) return undefined
      return {
        accountId: id,
        async claims() {
          return { sub: id, ...account }
        },
      }
    },
  })
  const providerCallback: (req: IncomingMessage, res: ServerResponse) => void = provider.callback()

  const test: TestProvider = {
    issuer,
    clientId,
    clientSecret,
    accounts,
    overrideToken: undefined,
    signIdToken: (claims) => signJwt(privateKey, kid, claims),
    signWithForeignKey: (claims) => signJwt(foreign, kid, claims),
    async stop() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }

  handler = (req, res) => {
    const override = test.overrideToken
    if (override && req.method === 'POST' && req.url === '/token') {
      void readForm(req).then((form) => {
        res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
        res.end(JSON.stringify(override(form)))
      })
      return
    }
    providerCallback(req, res)
  }
  return test
}

interface StoredCookie {
  name: string
  value: string
  origin: string
  path: string
}

/** A browser reduced to what a sign-in needs: a cookie jar (by origin and path) and manual redirects. */
export class Browser {
  readonly cookies: StoredCookie[] = []

  cookieHeader(url: URL): string {
    return this.cookies
      .filter((c) => c.origin === url.origin && (url.pathname === c.path || url.pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`)))
      .map((c) => `${c.name}=${c.value}`)
      .join('; ')
  }

  cookie(origin: string, name: string): string | undefined {
    return this.cookies.find((c) => c.origin === origin && c.name === name)?.value
  }

  private store(url: URL, headers: Headers): void {
    for (const line of headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';').map((part) => part.trim())
      const eq = pair.indexOf('=')
      const name = pair.slice(0, eq)
      const value = pair.slice(eq + 1)
      let path = url.pathname.replace(/\/[^/]*$/, '') || '/'
      let expired = false
      for (const attribute of attributes) {
        const [key, val = ''] = attribute.split('=')
        if (key.toLowerCase() === 'path') path = val || '/'
        if (key.toLowerCase() === 'max-age' && Number(val) <= 0) expired = true
        if (key.toLowerCase() === 'expires' && Date.parse(val) <= Date.now()) expired = true
      }
      const index = this.cookies.findIndex((c) => c.origin === url.origin && c.name === name && c.path === path)
      if (index >= 0) this.cookies.splice(index, 1)
      if (!expired && value !== '') this.cookies.push({ name, value, origin: url.origin, path })
    }
  }

  /** One request, no redirect following; cookies stored from the answer. */
  async request(input: string | URL, init: { method?: string; form?: Record<string, string> } = {}): Promise<Response> {
    const url = new URL(input)
    const headers: Record<string, string> = {}
    const cookie = this.cookieHeader(url)
    if (cookie) headers.cookie = cookie
    let body: string | undefined
    if (init.form) {
      body = new URLSearchParams(init.form).toString()
      headers['content-type'] = 'application/x-www-form-urlencoded'
    }
    const response = await fetch(url, { method: init.method ?? (body ? 'POST' : 'GET'), headers, body, redirect: 'manual' })
    this.store(url, response.headers)
    return response
  }

  /**
   * Follows redirects from `start` until one leads to `stopAt` (not requested) or a page answers.
   * Returns the last response and, when stopped, the URL it stopped at.
   */
  async follow(start: string | URL, stopAt?: string, init: { method?: string; form?: Record<string, string> } = {}) {
    let url = new URL(start)
    let response = await this.request(url, init)
    for (let hops = 0; hops < 20 && response.status >= 300 && response.status < 400; hops++) {
      await response.body?.cancel()
      url = new URL(response.headers.get('location')!, url)
      if (stopAt && url.href.startsWith(stopAt)) return { response, url, stopped: true }
      response = await this.request(url)
    }
    return { response, url, stopped: false }
  }
}

/**
 * A vault that signs in through `provider`, on a free loopback port its SVC_BASE_URL names (its
 * `url` is that base). `env` adds to or overrides the sign-on settings.
 */
export async function startOidcVault(
  provider: TestProvider,
  options: { env?: Record<string, string>; dataDir?: string; now?: () => number } = {},
): Promise<TestServer> {
  return await startTestServer({ ...options, baseHost: '127.0.0.1', env: { ...oidcEnv(provider), ...options.env } })
}

/** A vault's settings for signing in through `provider` (and its SVC_BASE_URL, when given). */
export function oidcEnv(provider: TestProvider, baseUrl?: string): Record<string, string> {
  return {
    SVC_OIDC_ISSUER: provider.issuer,
    SVC_OIDC_CLIENT_ID: provider.clientId,
    SVC_OIDC_CLIENT_SECRET: provider.clientSecret,
    SVC_OIDC_NAME: 'Test IdP',
    ...(baseUrl ? { SVC_BASE_URL: baseUrl } : {}),
  }
}
