// Every answer a test receives from a vault is checked against the OpenAPI document that vault
// serves (issue 25): the operation (path template and method) must document the answer's status,
// and a JSON body must validate (ajv, JSON Schema 2020-12, `$ref`s resolved) against the schema
// the document gives for that status and media type. Loaded before every test file (bunfig.toml
// preload), it wraps `fetch`, so test clients, helpers and plain fetch calls are all covered. A
// mismatch rejects the fetch that received it (the test that caused it fails), and is also failed
// in afterEach, should the test swallow that error.
import { afterEach } from 'bun:test'
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020'
import addFormats from 'ajv-formats'

type Json = Record<string, any>

interface PathTemplate {
  template: string
  pattern: RegExp
  /** Literal segments first: `/api/auth/me` wins over a `/api/auth/{x}`. */
  literalSegments: number
}

export interface VaultDocument {
  document: Json
  templates: PathTemplate[]
  ajv: Ajv2020
  validators: Map<string, ValidateFunction>
}

const DOCUMENT_ID = 'https://svc-vault.test/openapi.json'
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]'])
const originalFetch: typeof fetch = globalThis.fetch

/** By origin; undefined when the origin serves no OpenAPI document (another kind of server). */
const documents = new Map<string, Promise<VaultDocument | undefined>>()
const violations: string[] = []

export class AnswerMismatch extends Error {
  override name = 'AnswerMismatch'
}

const escapePointer = (part: string) => encodeURIComponent(part.replace(/~/g, '~0').replace(/\//g, '~1'))

function isJson(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

/** The checker for a served document (exported for tests of the checker itself). */
export function compileDocument(document: Json): VaultDocument {
  // strict: a keyword that is not JSON Schema (Elysia's `error`, say) fails the compilation.
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true })
  addFormats(ajv)
  // The document's own top-level fields: not schema keywords, only a place the pointers lead through.
  ajv.addVocabulary(['openapi', 'info', 'servers', 'tags', 'paths', 'components', 'security', 'webhooks', 'externalDocs', 'jsonSchemaDialect'])
  ajv.addSchema({ ...document, $id: DOCUMENT_ID })
  const templates = Object.keys(document.paths ?? {}).map((template) => ({
    template,
    pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^/}]+\\?\}/g, '[^/]+')}$`),
    literalSegments: template.split('/').filter((segment) => segment && !segment.startsWith('{')).length,
  }))
  templates.sort((a, b) => b.literalSegments - a.literalSegments)
  return { document, templates, ajv, validators: new Map() }
}

/**
 * What is wrong with this answer, or undefined when the document describes it (or describes no
 * operation at this path and method: an unknown endpoint is not the document's to describe).
 */
export function answerProblem(
  vault: VaultDocument,
  method: string,
  pathname: string,
  status: number,
  contentType: string | null,
  text: string,
): string | undefined {
  const path = pathname.length > 1 ? pathname.replace(/\/$/, '') : pathname
  const template = vault.templates.find((candidate) => candidate.pattern.test(path))?.template
  const lower = method.toLowerCase()
  const operation = template ? vault.document.paths[template]?.[lower] : undefined
  if (!template || !operation) return undefined
  // Bun's HTTP parser refuses a request line and headers over 16 KiB with a bare 431 before any
  // code of the vault runs: no operation's answer (test/robustness/hostile-input.test.ts holds it).
  if (status === 431 && !contentType && !text) return undefined
  const label = `${method.toUpperCase()} ${template} answered ${status}`
  const responses: Json = operation.responses ?? {}
  const statusKey = [String(status), `${String(status)[0]}XX`, 'default'].find((key) => key in responses)
  if (!statusKey) return `${label}, a status the document does not describe for this operation (it lists ${Object.keys(responses).join(', ')})`
  if (!text || lower === 'head') return undefined
  const mediaType = (contentType ?? '').split(';')[0].trim().toLowerCase()
  const content: Json = responses[statusKey].content ?? {}
  if (!(mediaType in content)) {
    return `${label} with a ${mediaType || 'untyped'} body, but the document gives ${Object.keys(content).join(', ') || 'no body'} for it`
  }
  // JSON Lines (the audit log's export): the document describes the text; each line must be JSON.
  if (/ndjson|jsonl/.test(mediaType)) return text.split('\n').every((line) => line === '' || isJson(line)) ? undefined : `${label} with a line that is not JSON`
  if (!mediaType.includes('json')) return undefined
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return `${label} with a body that is not JSON: ${text.slice(0, 200)}`
  }
  const pointer = ['paths', template, lower, 'responses', statusKey, 'content', mediaType, 'schema'].map(escapePointer).join('/')
  let validate = vault.validators.get(pointer)
  if (!validate) {
    validate = vault.ajv.getSchema(`${DOCUMENT_ID}#/${pointer}`)
    if (!validate) return `${label}: no schema at #/${pointer}`
    vault.validators.set(pointer, validate)
  }
  if (validate(body)) return undefined
  const errors = (validate.errors ?? []).slice(0, 5).map((error) => `${error.instancePath || '(body)'} ${error.message} (${error.schemaPath})`)
  return `${label} with a body its documented schema rejects: ${errors.join('; ')}. Body: ${text.slice(0, 500)}`
}

async function loadDocument(origin: string): Promise<VaultDocument | undefined> {
  let response: Response
  try {
    response = await originalFetch(`${origin}/api/openapi`)
  } catch {
    return undefined
  }
  if (response.status !== 200 || !(response.headers.get('content-type') ?? '').includes('json')) return undefined
  const document = (await response.json()) as Json
  if (typeof document.openapi !== 'string') return undefined
  return compileDocument(document)
}

/** Starts loading the document of a vault that just started (before a test can kill it). */
export async function watchVault(url: string): Promise<void> {
  const origin = new URL(url).origin
  const loading = loadDocument(origin)
  documents.set(origin, loading)
  if (!(await loading)) throw new Error(`${origin} serves no OpenAPI document to check answers against`)
}

/** The vault at this URL stopped: its port may serve another one later. */
export function forgetVault(url: string): void {
  documents.delete(new URL(url).origin)
}

function documentFor(url: URL): Promise<VaultDocument | undefined> | undefined {
  if (!LOOPBACK.has(url.hostname) || !url.pathname.startsWith('/api/')) return undefined
  let loading = documents.get(url.origin)
  if (!loading) {
    loading = loadDocument(url.origin)
    documents.set(url.origin, loading)
  }
  return loading
}

async function checkedFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const response = await originalFetch(input as Request, init)
  let url: URL
  try {
    url = new URL(input instanceof Request ? input.url : String(input))
  } catch {
    return response
  }
  const loading = documentFor(url)
  if (!loading) return response
  const vault = await loading
  if (!vault) return response
  const method = input instanceof Request ? input.method : (init?.method ?? 'GET')
  const text = response.body ? await response.clone().text() : ''
  const problem = answerProblem(vault, method, url.pathname, response.status, response.headers.get('content-type'), text)
  if (problem) {
    violations.push(problem)
    throw new AnswerMismatch(`The answer does not match the OpenAPI document: ${problem}`)
  }
  return response
}

function installUnderTestRunner(): void {
  try {
    afterEach(() => {
      if (violations.length === 0) return
      const found = violations.splice(0)
      throw new AnswerMismatch(`Answers that do not match the OpenAPI document:\n${found.join('\n')}`)
    })
  } catch {
    // Imported outside `bun test` (a benchmark starting a test server): fetch stays as it is.
    return
  }
  globalThis.fetch = Object.assign(checkedFetch, { preconnect: originalFetch.preconnect }) as typeof fetch
}

installUnderTestRunner()
