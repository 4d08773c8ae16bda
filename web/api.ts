// The public API, as the page uses it. Same-origin fetch with the session cookie; a 401 anywhere
// means the session is gone: the page asks to sign in again and keeps what was typed (in memory).
import { signal } from '@preact/signals'
import { vaultPath } from './vault'

// Shapes of the answers, from the server's own definitions (type-only: nothing of the server is bundled).
import type { PublicAccessKey } from '../src/auth/access-keys'
import type { PublicUser } from '../src/auth/accounts'
import type { PublicCategory } from '../src/modules/categories/service'
import type { RevealedEntry } from '../src/modules/entries/service'
import type { Stats } from '../src/modules/stats/service'
import type { EnvFileType, Environment, KeyType } from '../src/store/records'
import type { Static } from '@sinclair/typebox'
import type { ProvidersAnswer } from '../src/auth/model'
import type { ImportAnswer as ImportResult, ImportKeySchema } from '../src/modules/ai/model'
import type { EntryListItemSchema, EntrySchema } from '../src/modules/entries/model'
import type { EnvFileItemSchema, EnvProjectListItemSchema } from '../src/modules/envs/model'
import type { TwoFactorCodeSchema, TwoFactorSchema } from '../src/modules/two-factor/model'

export type { Environment, KeyType, RevealedEntry, Stats }
export type User = PublicUser
export type Category = PublicCategory
export const ENVIRONMENTS: Environment[] = ['development', 'staging', 'production']

/** An entry as the list (with its category) or a write (without) answers it. */
export type Entry = Static<typeof EntrySchema> & Partial<Pick<Static<typeof EntryListItemSchema>, 'category' | 'fields'>>
export type TwoFactorToken = Static<typeof TwoFactorSchema>
export type TotpCode = Static<typeof TwoFactorCodeSchema>
export type AccessKey = PublicAccessKey & { key?: string }
export const FILE_TYPES: readonly EnvFileType[] = ['env', 'env.local', 'env.production', 'env.development']
export type FileType = EnvFileType
export type EnvFileItem = Static<typeof EnvFileItemSchema>
/** An env project as the list answers it; its detail adds `files`. */
export type EnvProject = Static<typeof EnvProjectListItemSchema> & { files?: EnvFileItem[] }
export type ImportKey = Static<typeof ImportKeySchema>
export interface ImportCategorySuggestion {
  name: string
  reuse?: boolean
}
/** `categories`: not in this server's answer (each key says `reuse`); the page still reads it when given. */
export type ImportAnswer = Static<typeof ImportResult>['data'] & { categories?: ImportCategorySuggestion[] }
export type Providers = Static<typeof ProvidersAnswer>

// One list of scopes for the server and the page.
export { SCOPES as ALL_SCOPES } from '../src/auth/scopes'

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The whole error answer, for codes that carry more than { error, code }. */
    readonly details: Record<string, unknown> = {},
  ) {
    super(message)
  }
}

/** The signed-in user: undefined while unknown, null when signed out. */
export const currentUser = signal<User | null | undefined>(undefined)
/**
 * The session ended while the page was in use (a 401): the page asks to sign in again over the
 * current page, which stays mounted (hidden), so unsaved text survives in memory only.
 */
export const sessionLost = signal(false)

/**
 * What outlives a session (an access key, a passkey, a device approval, the webhook,
 * deleting the account) needs a sign-in or re-authentication within 10 minutes. When the server
 * answers 403 REAUTHENTICATION_REQUIRED, the page asks for the proof (components/reauth.tsx sets
 * this; it resolves true once proved) and sends the request once more.
 */
export const reauthPrompt: { ask: ((reason: string) => Promise<boolean>) | null } = { ask: null }

async function send(method: string, path: string, body?: unknown, retried = false): Promise<Response> {
  // A resource path goes to the chosen shared vault (vault.ts); every page calls through here.
  path = vaultPath(path)
  const init: RequestInit = { method, headers: { accept: 'application/json' }, credentials: 'same-origin', cache: 'no-store' }
  if (body !== undefined) {
    init.body = JSON.stringify(body)
    ;(init.headers as Record<string, string>)['content-type'] = 'application/json'
  }
  let response: Response
  try {
    response = await fetch(path, init)
  } catch {
    throw new ApiError(0, 'NETWORK', 'The vault cannot be reached')
  }
  if (!response.ok) {
    let code = 'HTTP_' + response.status
    let message = response.statusText || 'Request failed'
    let details: Record<string, unknown> = {}
    try {
      const parsed = (await response.json()) as { error?: string; code?: string }
      if (parsed && typeof parsed === 'object') details = parsed as Record<string, unknown>
      code = parsed.code ?? code
      message = parsed.error ?? message
    } catch {
      // not JSON: keep the status text
    }
    if (response.status === 403 && code === 'REAUTHENTICATION_REQUIRED' && !retried && reauthPrompt.ask && path !== '/api/auth/reauth') {
      if (await reauthPrompt.ask(message)) return send(method, path, body, true)
      throw new ApiError(response.status, code, 'Not done: confirm it is you to continue.', details)
    }
    // Only a missing or ended session signs the page out; a wrong password or code is the form's error.
    if (response.status === 401 && code === 'AUTH_REQUIRED' && path !== '/api/auth/me') {
      if (currentUser.value) {
        sessionLost.value = true
        message = 'Your session has ended: sign in again, then try once more.'
      } else currentUser.value = null
    }
    throw new ApiError(response.status, code, message, details)
  }
  return response
}

export async function api<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await send(method, path, body)
  if (response.status === 204) return undefined as T
  return (await response.json()) as T
}

/** A plain-text answer (export, env download) with the file name the server suggests. */
export async function apiText(path: string): Promise<{ text: string; filename: string | null }> {
  const response = await send('GET', path)
  const disposition = response.headers.get('content-disposition') ?? ''
  const match = /filename="([^"]+)"/.exec(disposition)
  return { text: await response.text(), filename: match ? match[1] : null }
}

export const errorMessage = (error: unknown) => (error instanceof Error ? error.message : String(error))
