// The OpenAPI 3.1 document (@elysiajs/openapi's generator) and its Scalar reference page. Both
// load on the first request for them: the plugin weighs about 4 MB of memory that a vault
// nobody browses the docs of need not carry. The document gets four fix-ups:
// - paths are written as the spec writes them (`/api/categories`, not `/api/categories/`);
// - request bodies get their JSON schema back (the plugin leaves `content` empty for routes
//   behind our global JSON body parser);
// - Elysia's `noValidate` flag (responses go unchecked outside tests) is left out;
// The Scalar page (issue 14) is served whole by the vault: its standalone script comes from the
// installed, exactly pinned @scalar/api-reference package, and its CSP lets it load nothing from
// another host. It still runs sandboxed (opaque origin: its "try it" client cannot use the vault's
// session), so the public document allows cross-origin reads for it.
import { dirname, join } from 'node:path'
import { Elysia, type AnyElysia } from 'elysia'
import { DOCS_SANDBOX_SHIM } from './docs-sandbox-shim'

export const SPEC_PATH = '/api/openapi'
export const DOCS_PATH = '/api/docs'
export const DOCS_SCRIPT_PATH = '/api/docs/scalar.js'
export const DOCS_SHIM_PATH = '/api/docs/sandbox-shim.js'

const DOCS_CSP = [
  'sandbox allow-scripts allow-popups allow-forms',
  "default-src 'none'",
  "script-src 'self'",
  // Scalar sets styles from its script.
  "style-src 'self' 'unsafe-inline'",
  "font-src 'self' data:",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

interface RouteInfo {
  method: string
  path: string
  hooks?: { body?: unknown }
}

type Operation = { requestBody?: { content?: Record<string, unknown> }; responses?: Record<string, { content?: unknown }> }
type OpenApiDocument = { paths: Record<string, Record<string, Operation>> }

const toOpenApiPath = (path: string) => (path.length > 1 ? path.replace(/\/$/, '') : path).replace(/:(\w+)/g, '{$1}')

function fixDocument(document: OpenApiDocument, routes: RouteInfo[]): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {}
  for (const [path, operations] of Object.entries(document.paths ?? {})) {
    const key = toOpenApiPath(path)
    paths[key] = { ...paths[key], ...operations }
  }
  for (const route of routes) {
    const operation = paths[toOpenApiPath(route.path)]?.[route.method.toLowerCase()]
    const body = route.hooks?.body
    if (operation?.requestBody && body && Object.keys(operation.requestBody.content ?? {}).length === 0) {
      operation.requestBody.content = { 'application/json': { schema: JSON.parse(JSON.stringify(body)) } }
    }
  }
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations)) {
      // A 204 answer has no body: no content entry (the plugin writes one for t.Void()).
      if (operation.responses?.['204']) operation.responses['204'] = { description: 'No content' } as never
      // A redirect (t.Void() too) has no body either; its Location header says where.
      for (const [status, answer] of Object.entries(operation.responses ?? {})) {
        if (!/^3\d\d$/.test(status)) continue
        const description = (answer as { description?: string }).description ?? 'Redirect'
        operation.responses![status] = { description, headers: { Location: { description: 'Where the browser goes next', schema: { type: 'string' } } } } as never
      }
    }
  }
  // The document describes itself too (the interface document lists it as an endpoint).
  paths[SPEC_PATH] ??= {
    get: {
      summary: 'This OpenAPI 3.1.0 document',
      tags: ['API description'],
      security: [],
      responses: { 200: { description: 'The OpenAPI document', content: { 'application/json': { schema: { type: 'object' } } } } },
    } as never,
  }
  document.paths = paths
  return withoutKey(document, 'noValidate')
}

/** The value with every property of this name removed, at any depth (Elysia's own schema flags). */
function withoutKey<T>(value: T, key: string): T {
  if (Array.isArray(value)) return value.map((item) => withoutKey(item, key)) as T
  if (value === null || typeof value !== 'object') return value
  const out: Record<string, unknown> = {}
  for (const [name, child] of Object.entries(value)) if (name !== key) out[name] = withoutKey(child, key)
  return out as T
}

const OPENAPI_VERSION = '3.1.0'

export interface Documentation {
  info: { title: string; version: string; description?: string }
  components?: Record<string, unknown>
}

async function buildDocument(app: AnyElysia, documentation: Documentation): Promise<OpenApiDocument> {
  const { toOpenAPISchema } = await import('@elysiajs/openapi/openapi')
  const generated = toOpenAPISchema(app, undefined, undefined, undefined, OPENAPI_VERSION) as unknown as {
    paths: OpenApiDocument['paths']
    components: { schemas?: Record<string, unknown> }
  }
  const document = {
    ...documentation,
    openapi: OPENAPI_VERSION,
    paths: generated.paths,
    components: { ...documentation.components, schemas: { ...generated.components?.schemas } },
  }
  return fixDocument(document, app.routes as RouteInfo[])
}

/** The installed Scalar's browser build (package.json "browser"): one self-contained script. */
function scalarScriptPath(): string {
  return join(dirname(Bun.resolveSync('@scalar/api-reference', import.meta.dir)), 'browser', 'standalone.js')
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/**
 * The reference page: Scalar's script tag API (`#api-reference` with `data-url`), no inline script.
 * Fonts, the hosted proxy and telemetry are off: the page reaches this vault only.
 */
function buildPage(documentation: Documentation): string {
  const configuration = { withDefaultFonts: false, hideClientButton: false, telemetry: false, _integration: 'html' }
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(documentation.info.title)}</title>
</head>
<body>
<script id="api-reference" type="application/json" data-url="${SPEC_PATH}" data-configuration="${escapeHtml(JSON.stringify(configuration))}"></script>
<script src="${DOCS_SHIM_PATH}"></script>
<script src="${DOCS_SCRIPT_PATH}"></script>
</body>
</html>
`
}

function script(source: string | ReturnType<typeof Bun.file>): Response {
  return new Response(source, {
    headers: {
      'content-type': 'text/javascript; charset=utf-8',
      // The version is pinned, but an upgrade keeps these paths: a day, not forever.
      'cache-control': 'public, max-age=86400',
      // The sandboxed page has an opaque origin: its script loads are cross-origin.
      'cross-origin-resource-policy': 'cross-origin',
    },
  })
}

/** `app` is the whole composed app, read when the document is first asked for. */
export function apiDocs(app: () => AnyElysia, documentation: Documentation) {
  // Routes do not change once the server runs: each is built once.
  let document: Promise<OpenApiDocument> | undefined
  let page: string | undefined
  return new Elysia({ name: 'http.openapi' })
    .get(
      SPEC_PATH,
      ({ set }) => {
        set.headers['access-control-allow-origin'] = '*'
        document ??= buildDocument(app(), documentation)
        return document
      },
      { detail: { hide: true } },
    )
    .get(
      DOCS_PATH,
      () => {
        page ??= buildPage(documentation)
        return new Response(page, { headers: { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': DOCS_CSP } })
      },
      { detail: { hide: true } },
    )
    .get(DOCS_SCRIPT_PATH, () => script(Bun.file(scalarScriptPath())), { detail: { hide: true } })
    .get(DOCS_SHIM_PATH, () => script(DOCS_SANDBOX_SHIM), { detail: { hide: true } })
}
