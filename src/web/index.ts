// The web interface: index.html, the bundled assets and brand icons, all from this server.
// Any GET outside /api that matches nothing else and names no file is a client-side route and
// gets index.html; /api/* and file names keep the JSON 404.
import { Elysia, NotFoundError } from 'elysia'
import type { AppDeps } from '../deps'
import { STRICT_CSP } from '../http/security-headers'
import { webBundle, type Encoding } from './bundle'
import { cliScript } from './cli-bundle'

const HTML_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': STRICT_CSP,
  // The page says whether this browser is signed in, so it is never cached.
  'cache-control': 'no-store',
}

/** index.html; it tells the page whether a session exists, so a signed-out visit asks /api/auth/me nothing and gets no 401. */
async function indexHtml(accounts: AppDeps['accounts'], sessionToken: unknown, headers: Record<string, string> = HTML_HEADERS): Promise<Response> {
  const bundle = await webBundle()
  const signedIn = typeof sessionToken === 'string' && sessionToken !== '' && accounts.session(sessionToken) !== null
  return new Response(bundle.html.replace('%SESSION%', signedIn ? 'signed-in' : 'signed-out'), { headers })
}

/**
 * The encoding to send for an Accept-Encoding header: br when the client takes it, else gzip,
 * else the raw bytes. `q=0` refuses a coding; `*` stands for any not named.
 */
export function chooseEncoding(acceptEncoding: string | null): Encoding {
  if (!acceptEncoding) return 'identity'
  const weights = new Map<string, number>()
  for (const part of acceptEncoding.slice(0, 1000).split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';')
    const q = params.map((param) => /^\s*q=([0-9.]{1,5})\s*$/.exec(param)).find(Boolean)
    weights.set(name.trim(), q ? Number(q[1]) : 1)
  }
  const weight = (coding: string) => weights.get(coding) ?? weights.get('*') ?? 0
  if (weight('br') > 0) return 'br'
  if (weight('gzip') > 0) return 'gzip'
  return 'identity'
}

const isApiPath = (path: string) => path === '/api' || path.startsWith('/api/')
/** A path naming a file (favicon.ico, robots.txt): not a page of the app, so a plain 404. */
const isFilePath = (path: string) => /\.[A-Za-z0-9]+$/.test(path)

export function webRoutes(deps: AppDeps) {
  // Settings links single sign-on with a form POST that the server redirects to the provider:
  // form-action covers that redirect in Chromium, so the provider's origin is allowed there.
  const issuer = deps.config.oidc ? new URL(deps.config.oidc.issuer).origin : null
  const headers = issuer
    ? { ...HTML_HEADERS, 'content-security-policy': STRICT_CSP.replace("form-action 'self'", `form-action 'self' ${issuer}`) }
    : HTML_HEADERS
  const page = (cookie: Record<string, { value?: unknown }>) => indexHtml(deps.accounts, cookie[deps.config.sessionCookie]?.value, headers)
  return new Elysia({ name: 'webRoutes' })
    .get('/', ({ cookie }) => page(cookie), { detail: { hide: true } })
    .get(
      '/assets/:file',
      async ({ params, request }) => {
        // Compressed at build (br and gzip), chosen per request; caches key on Accept-Encoding.
        const encoding = chooseEncoding(request.headers.get('accept-encoding'))
        const asset = await (await webBundle()).asset(`/assets/${params.file}`, encoding)
        if (!asset) throw new NotFoundError()
        return new Response(asset.body, {
          headers: {
            'content-type': asset.type,
            ...(encoding === 'identity' ? {} : { 'content-encoding': encoding }),
            vary: 'Accept-Encoding',
            'cache-control': 'public, max-age=31536000, immutable',
            'content-security-policy': STRICT_CSP,
          },
        })
      },
      { detail: { hide: true } },
    )
    .get(
      '/cli/svc',
      async ({ request }) => {
        const { bytes, etag } = await cliScript()
        if (request.headers.get('if-none-match') === etag) return new Response(null, { status: 304, headers: { etag } })
        return new Response(bytes, {
          headers: {
            'content-type': 'text/javascript; charset=utf-8',
            'content-disposition': 'attachment; filename="svc"',
            'cache-control': 'no-cache',
            etag,
            'x-content-type-options': 'nosniff',
          },
        })
      },
      { detail: { hide: true } },
    )
    .get(
      '/icons/:file',
      async ({ params }) => {
        const icons = (await webBundle()).icons
        if (params.file === 'slugs.json') {
          return new Response(await icons.slugsJson(), { headers: { 'content-type': 'application/json', 'cache-control': 'public, max-age=86400' } })
        }
        // svg() answers only a known slug (isIconSlug, then the pack's list).
        const svg = params.file.endsWith('.svg') ? await icons.svg(params.file.slice(0, -'.svg'.length)) : undefined
        if (!svg) throw new NotFoundError()
        return new Response(svg, {
          headers: { 'content-type': 'image/svg+xml', 'cache-control': 'public, max-age=86400', 'content-security-policy': STRICT_CSP },
        })
      },
      { detail: { hide: true } },
    )
    .get(
      '/*',
      ({ path, cookie }) => {
        if (isApiPath(path) || isFilePath(path) || path.startsWith('/assets/') || path.startsWith('/icons/')) throw new NotFoundError()
        return page(cookie)
      },
      { detail: { hide: true } },
    )
}
