// Passkey ceremonies in the page, through @simplewebauthn/browser.
import { startAuthentication, startRegistration, WebAuthnError } from '@simplewebauthn/browser'
import type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/browser'
import { api, ApiError, type User } from './api'

export interface Passkey {
  id: string
  name: string
  createdAt: string
  lastUsedAt: string | null
}

/** The browser's own refusal (cancelled, no authenticator) as a readable error. */
function browserError(error: unknown): Error {
  if (error instanceof WebAuthnError || (error instanceof Error && error.name === 'NotAllowedError')) {
    return new ApiError(0, 'PASSKEY_CANCELLED', 'The passkey prompt was cancelled or no passkey was found')
  }
  return error instanceof Error ? error : new Error(String(error))
}

/** Signs in with a passkey (any of this vault's, or after a password only that account's); answers the user. */
export async function signInWithPasskey(): Promise<User> {
  const optionsJSON = await api<PublicKeyCredentialRequestOptionsJSON>('POST', '/api/auth/passkey/options')
  let response
  try {
    response = await startAuthentication({ optionsJSON })
  } catch (error) {
    throw browserError(error)
  }
  return (await api<{ user: User }>('POST', '/api/auth/passkey/login', { response })).user
}

export async function registerPasskey(name: string): Promise<Passkey> {
  const optionsJSON = await api<PublicKeyCredentialCreationOptionsJSON>('POST', '/api/account/passkeys/options')
  let response
  try {
    response = await startRegistration({ optionsJSON })
  } catch (error) {
    throw browserError(error)
  }
  return api<Passkey>('POST', '/api/account/passkeys', { name, response })
}
