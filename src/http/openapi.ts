// The OpenAPI 3.1 document (@elysiajs/openapi) and its reference page, with three fix-ups:
// - paths are written as the spec writes them (`/api/categories`, not `/api/categories/`);
// - request bodies get their JSON schema back (the plugin leaves `content` empty for routes
//   behind our global JSON body parser);
// - the Scalar page loads from a CDN, so it runs sandboxed (opaque origin: it cannot use the
//   vault's session), and the public document allows cross-origin reads for it.
import { openapi } from '@elysiajs/openapi'
import { Elysia } from 'elysia'

export const SPEC_PATH = '/api/openapi'
export const DOCS_PATH = '/api/docs'

const DOCS_CSP =
  "sandbox allow-scripts allow-popups allow-forms; default-src 'none'; script-src 'unsafe-inline' https://cdn.jsdelivr.net; style-src 'unsafe-inline' https://cdn.jsdelivr.net https://fonts.googleapis.com; font-src https://cdn.jsdelivr.net https://fonts.gstatic.com data:; img-src data: https:; connect-src *"

interface RouteInfo {
  method: string
  path: string
  hooks?: { body?: unknown }
}

type Operation = { requestBody?: { content?: Record<string, unknown> }; responses?: Record<string, { content?: unknown }> }
type OpenApiDocument = { paths: Record<string, Record<string, Operation>> }

const toOpenApiPath = (path: string) => (path.length > 1 ? path.replace(/\/$/, '') : path).replace(/:(\w+)/g, '{$1}')

function fixDocument(document: OpenApiDocument, routes: RouteInfo[]): OpenApiDocument {
  if ((document as { __fixed?: boolean }).__fixed) return document
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
  Object.defineProperty(document, '__fixed', { value: true, enumerable: false })
  return document
}

export function apiDocs(routes: () => RouteInfo[], documentation: Record<string, unknown>) {
  return new Elysia({ name: 'http.openapi' })
    .onAfterHandle(({ path, response, set }) => {
      if (path === SPEC_PATH && response && typeof response === 'object') {
        set.headers['access-control-allow-origin'] = '*'
        return fixDocument(response as OpenApiDocument, routes())
      }
      if (path === DOCS_PATH) set.headers['content-security-policy'] = DOCS_CSP
    })
    .use(
      openapi({
        path: DOCS_PATH,
        specPath: SPEC_PATH,
        openapiVersion: '3.1.0',
        // The plugin's default URL is relative ("api/openapi"), which resolves under /api/api/.
        scalar: { url: SPEC_PATH } as never,
        documentation,
      }),
    )
}
