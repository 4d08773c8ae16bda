// HTTP to the vault: every failure becomes one clear line (CliError), never a stack trace.
import { VERSION } from '../../version'
import { CliError } from './errors'
import { request1 } from './http1'
import type { Credentials } from './config'

/** An answer's headers by lower-case name (not the Web `Headers`: on Node its first use loads undici). */
export interface AnswerHeaders {
  get(name: string): string | null
}

export interface ApiAnswer {
  status: number
  headers: AnswerHeaders
  text: string
}

/** Names the CLI and its runtime (the device approval page shows it). */
const USER_AGENT = `svc/${VERSION} (${process.versions.bun ? `Bun/${process.versions.bun}` : `Node/${process.versions.node}`})`

/** The resource routes a shared vault has again under /api/vaults/{vaultId} (the rest are the account's). */
const VAULT_RESOURCES = /^\/api\/(entries|categories|envs|2fa|stats|export|trash|audit)(?=[/?]|$)/

interface VaultSummary {
  id: string
  name: string
  role: string
}

export class VaultClient {
  /** The shared vault the resource paths go to, once known (null: the personal vault). */
  private vaultId: string | null
  private resolving: Promise<void> | null = null
  private sentListener: (() => void) | null = null

  constructor(
    readonly url: string,
    private readonly key: string | null,
    private readonly keySource: Credentials['keySource'] | null = null,
    /** `--vault NAME` (or its id): looked up with GET /api/vaults before the first resource request. */
    private readonly vaultName: string | null = null,
    /** The vault the stored key was bound to at sign-in (saves a round trip). */
    knownVaultId: string | null = null,
  ) {
    this.vaultId = vaultName === null ? knownVaultId : null
  }

  static signedIn(creds: Credentials, vaultName?: string): VaultClient {
    const known = creds.keySource === 'config' ? (creds.stored?.vaultId ?? null) : null
    return new VaultClient(creds.url, creds.key, creds.keySource, vaultName ?? null, known)
  }

  /** Calls `listener` once the next request is on its way to the vault (or has failed). */
  onceSent(listener: () => void): void {
    this.sentListener = listener
  }

  /** Any answer, errors included (the caller decides); only an unreachable vault throws. */
  async raw(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiAnswer> {
    if (!VAULT_RESOURCES.test(path)) return this.send0(method, path, body, headers)
    if (this.vaultName !== null) await (this.resolving ??= this.resolveVault(this.vaultName))
    const answer = await this.send0(method, this.inVault(path), body, headers)
    // A key bound to a shared vault, used without --vault: ask the vault which one, then go there.
    if (answer.status === 403 && this.vaultId === null && errorBody(answer.text).code === 'KEY_BOUND_TO_VAULT') {
      const own = await this.send0('GET', '/api/auth/key')
      const vaultId = own.status === 200 ? (JSON.parse(own.text) as { vaultId?: string }).vaultId : undefined
      if (!vaultId) return answer
      this.vaultId = vaultId
      return this.send0(method, this.inVault(path), body, headers)
    }
    return answer
  }

  private inVault(path: string): string {
    return this.vaultId === null ? path : `/api/vaults/${encodeURIComponent(this.vaultId)}${path.slice('/api'.length)}`
  }

  /** `--vault`: the one vault of this name (or id) among those the key sees; else a clear error. */
  private async resolveVault(wanted: string): Promise<void> {
    const answer = await this.send0('GET', '/api/vaults')
    if (answer.status !== 200) throw this.failure(answer)
    const vaults = JSON.parse(answer.text) as VaultSummary[]
    const byId = vaults.find((vault) => vault.id === wanted)
    const matches = byId ? [byId] : vaults.filter((vault) => vault.name === wanted)
    if (matches.length === 1) {
      this.vaultId = matches[0].id
      return
    }
    if (matches.length > 1) {
      throw new CliError(`several shared vaults are named "${wanted}" (${matches.map((vault) => vault.id).join(', ')}): pass the id with --vault`)
    }
    const seen = vaults.length ? `it sees ${vaults.map((vault) => `"${vault.name}"`).join(', ')}` : 'it sees none'
    throw new CliError(
      `no shared vault named "${wanted}" for this key (${seen}; a key reaches one vault): sign in for that vault with svc login --vault "${wanted}"`,
    )
  }

  private async send0(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiAnswer> {
    const all: Record<string, string> = { accept: 'application/json', 'user-agent': USER_AGENT, ...headers }
    if (this.key) all.authorization = `Bearer ${this.key}`
    if (body !== undefined) all['content-type'] = 'application/json'
    const onSent = this.sentListener
    this.sentListener = null
    try {
      return await httpSend(new URL(this.url + path), method, all, body === undefined ? undefined : JSON.stringify(body), onSent)
    } catch (error) {
      throw new CliError(`cannot reach the vault at ${this.url}: ${reason(error)}`, 1, true)
    }
  }

  /** A 2xx answer, or a CliError that says what went wrong and what to do. */
  async send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiAnswer> {
    const answer = await this.raw(method, path, body, headers)
    if ((answer.status >= 200 && answer.status < 300) || answer.status === 304) return answer
    throw this.failure(answer)
  }

  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const answer = await this.send(method, path, body)
    if (answer.status === 204 || answer.text === '') return undefined as T
    try {
      return JSON.parse(answer.text) as T
    } catch {
      throw new CliError(`the vault at ${this.url} answered ${path} with something that is not JSON (is this an svc-vault server?)`)
    }
  }

  failure(answer: ApiAnswer): CliError {
    const failure = this.describe(answer)
    failure.status = answer.status
    return failure
  }

  private describe(answer: ApiAnswer): CliError {
    const { code, error } = errorBody(answer.text)
    if (answer.status === 401) {
      const what = this.keySource === 'SVC_TOKEN' ? 'the key in SVC_TOKEN' : 'the stored access key'
      return new CliError(`the vault refused ${what} (${code ?? 401}: unknown, revoked or expired): run svc login`)
    }
    if (answer.status === 403 && code === 'AUTH_SCOPE_REQUIRED') {
      const scope = /scope (\S+)/.exec(error ?? '')?.[1]
      return new CliError(`the access key lacks the scope ${scope ?? '(unnamed)'}: sign in again with svc login --scopes, or use a key that has it`)
    }
    if (code && error) return new CliError(`${error.replace(/\.$/, '')} (${code})`)
    if (answer.status >= 300 && answer.status < 400) {
      return new CliError(`the vault at ${this.url} redirected to ${answer.headers.get('location') ?? '?'}: use that address with svc login`)
    }
    // A proxy's answer while the vault behind it is down: as good as unreachable.
    if (answer.status === 502 || answer.status === 503 || answer.status === 504) {
      return new CliError(`the vault at ${this.url} is not answering (HTTP ${answer.status} from the proxy)`, 1, true)
    }
    return new CliError(`the vault at ${this.url} answered HTTP ${answer.status} (is this an svc-vault server?)`)
  }
}

/**
 * One request, written and read by http1.ts rather than with fetch or node:http: on Node, fetch's
 * first use loads undici and keeps a pooled socket alive, and node:http's first request takes
 * longer to leave than svc run's whole wait for the vault. No redirect is followed; no connection
 * is kept.
 */
async function httpSend(url: URL, method: string, headers: Record<string, string>, body: string | undefined, onSent: (() => void) | null): Promise<ApiAnswer> {
  const answer = await request1(url, method, headers, body, onSent)
  let text: string | undefined
  return {
    status: answer.status,
    headers: { get: (name) => answer.headers.get(name.toLowerCase()) ?? null },
    // Decoded when read: svc run does not read an export its offline copy already holds.
    get text() {
      text ??= answer.body.toString('utf8')
      return text
    },
  }
}

export function errorBody(text: string): { code?: string; error?: string } {
  try {
    const parsed = JSON.parse(text) as { code?: unknown; error?: unknown }
    return { code: typeof parsed.code === 'string' ? parsed.code : undefined, error: typeof parsed.error === 'string' ? parsed.error : undefined }
  } catch {
    return {}
  }
}

function reason(error: unknown): string {
  const code = (error as { code?: string })?.code
  if (code === 'ConnectionRefused' || code === 'ECONNREFUSED') return 'connection refused'
  if (code === 'FailedToOpenSocket' || code === 'ENOTFOUND') return 'host not found or unreachable'
  const message = (error as Error)?.message ?? String(error)
  return message.split('\n')[0]
}
