// Passkeys (WebAuthn) through @simplewebauthn/server. The relying party is SVC_BASE_URL's
// host and origin; without SVC_BASE_URL (a laptop instance), the loopback origin it listens on.
// Ceremony challenges are single-use: registration ones are kept per session in the store's shared
// state (as a hash: the database never holds one), sign-in ones travel sealed in a short-lived
// cookie (SealedChallenges).
// Type only: the library (and its ASN.1 and COSE code, megabytes resident) loads when a
// passkey is first used, not at start-up.
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server'
import type { Config } from '../config'
import { isLoopbackHost } from '../config'
import { AppError } from '../http/errors'
import { lazy } from '../http/lazy'
import { constantTimeEqual, sha256Hex } from '../crypto/tokens'
import type { PasskeyRecord, UserRecord } from '../store/records'
import { MemoryState, type Entries, type SharedState } from '../store/shared-state'
import type { Accounts } from './accounts'

const webauthn = lazy('Passkeys', () => import('@simplewebauthn/server'))

export const PASSKEY_CHALLENGE_TTL_MS = 5 * 60_000
export const PASSKEY_SIGN_IN_COOKIE = 'svc_passkey'
const MAX_PASSKEYS_PER_USER = 20
const RP_NAME = 'svc-vault'

export const passkeyFailed = (message = 'The passkey could not be verified') => new AppError(401, 'PASSKEY_FAILED', message)

const counterRefused = () => passkeyFailed('The passkey signature counter did not move forward (a replayed or cloned passkey)')

export interface PublicPasskey {
  id: string
  name: string
  createdAt: string
  lastUsedAt: string | null
}

export const publicPasskey = (p: PasskeyRecord): PublicPasskey => ({ id: p.id, name: p.name, createdAt: p.createdAt, lastUsedAt: p.lastUsedAt })

export interface RelyingParty {
  rpID: string
  origin: string
}

/**
 * The relying party for a request: SVC_BASE_URL's; when it is unset, the origin the server itself
 * listens on: the loopback name the request used (localhost, 127.0.0.1, [::1]) only on the port
 * this server listens on, else http://localhost:<that port>. Never another port a Host header
 * names: an assertion made for a page on http://localhost:5173 must not sign in here.
 */
export function relyingParty(config: Pick<Config, 'origin' | 'baseUrlExplicit' | 'port'>, request: Request, listeningPort?: number | null): RelyingParty {
  if (!config.baseUrlExplicit) {
    const port = listeningPort || config.port
    const url = URL.parse(request.url)
    if (url && isLoopbackHost(url.hostname) && Number(url.port || 80) === port) return { rpID: url.hostname.replace(/^\[|\]$/g, ''), origin: url.origin }
    return { rpID: 'localhost', origin: `http://localhost:${port}` }
  }
  return { rpID: new URL(config.origin).hostname, origin: config.origin }
}

const bytesToBase64url = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url')
const userHandle = (userId: string) => new TextEncoder().encode(userId)

/** A registration under way: the challenge's hash (it is compared, never needed again) and the relying party. */
interface PendingRegistration {
  challengeHash: string
  rp: RelyingParty
}

export class Passkeys {
  /** Registration challenges by session token hash (any instance finishes what another started). */
  private readonly registrations: Entries

  constructor(
    private readonly accounts: Accounts,
    private readonly now: () => number,
    state: SharedState = new MemoryState(now),
  ) {
    this.registrations = state.entries('passkey-registration')
  }

  list(user: UserRecord): PublicPasskey[] {
    return (user.passkeys ?? []).map(publicPasskey)
  }

  /** Whose passkey a credential id is (for recording a failed sign-in); null when nobody's. */
  ownerOf(credentialId: unknown): string | null {
    return typeof credentialId === 'string' ? (this.find(credentialId)?.user.id ?? null) : null
  }

  /** The owner of a credential id and its record, or undefined (an index lookup: no scan of the users). */
  private find(credentialId: string): { user: UserRecord; passkey: PasskeyRecord } | undefined {
    const user = this.accounts.userByCredential(credentialId)
    const passkey = user?.passkeys?.find((p) => p.credentialId === credentialId)
    return user && passkey ? { user, passkey } : undefined
  }

  async registrationOptions(user: UserRecord, sessionHash: string, rp: RelyingParty): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const { generateRegistrationOptions } = await webauthn()
    const options = await generateRegistrationOptions({
      rpName: RP_NAME,
      rpID: rp.rpID,
      userName: user.email,
      userDisplayName: user.name ?? user.email,
      userID: userHandle(user.id),
      attestationType: 'none',
      excludeCredentials: (user.passkeys ?? []).map((p) => ({ id: p.credentialId, transports: [...p.transports] })),
      // Discoverable: the sign-in page asks for no e-mail.
      authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
      timeout: PASSKEY_CHALLENGE_TTL_MS,
    })
    // A new ceremony replaces the session's earlier one.
    await this.registrations.remove(sessionHash)
    const pending: PendingRegistration = { challengeHash: sha256Hex(options.challenge), rp }
    await this.registrations.create(sessionHash, pending, this.now() + PASSKEY_CHALLENGE_TTL_MS)
    return options
  }

  async register(user: UserRecord, sessionHash: string, name: string, response: RegistrationResponseJSON): Promise<PublicPasskey> {
    const entry = await this.registrations.get<PendingRegistration>(sessionHash)
    // One use: whatever the outcome, the challenge is gone (of two racing uses, one takes it).
    if (!entry || !(await this.registrations.remove(sessionHash, entry.version))) {
      throw passkeyFailed('Start the registration again (no challenge, or it expired)')
    }
    const pending = entry.value
    const { verifyRegistrationResponse } = await webauthn()
    let verified
    try {
      verified = await verifyRegistrationResponse({
        response,
        expectedChallenge: (challenge: string) => constantTimeEqual(sha256Hex(challenge), pending.challengeHash),
        expectedOrigin: pending.rp.origin,
        expectedRPID: pending.rp.rpID,
        requireUserVerification: false,
      })
    } catch {
      throw passkeyFailed('The passkey registration could not be verified')
    }
    if (!verified.verified) throw passkeyFailed('The passkey registration could not be verified')
    const { credential } = verified.registrationInfo
    if (this.find(credential.id)) throw passkeyFailed('This passkey is registered already')
    const at = new Date(this.now()).toISOString()
    const record: PasskeyRecord = {
      id: crypto.randomUUID(),
      name: name.trim() || 'Passkey',
      credentialId: credential.id,
      publicKey: bytesToBase64url(credential.publicKey),
      counter: credential.counter,
      transports: credential.transports ?? [],
      createdAt: at,
      lastUsedAt: null,
    }
    await this.accounts.updateUser(user, (u) => {
      const list = u.passkeys ?? []
      if (list.length >= MAX_PASSKEYS_PER_USER) throw new AppError(409, 'PASSKEY_FAILED', `At most ${MAX_PASSKEYS_PER_USER} passkeys per account`)
      u.passkeys = [...list, record]
    })
    return publicPasskey(record)
  }

  async remove(user: UserRecord, id: string): Promise<void> {
    if (!(user.passkeys ?? []).some((p) => p.id === id)) throw new AppError(404, 'PASSKEY_NOT_FOUND', 'Passkey not found')
    await this.accounts.updateUser(user, (u) => {
      u.passkeys = (u.passkeys ?? []).filter((p) => p.id !== id)
    })
  }

  /** Options for a sign-in: any discoverable passkey, or only `user`'s (as the second factor). */
  async signInOptions(rp: RelyingParty, user: UserRecord | null): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const { generateAuthenticationOptions } = await webauthn()
    return generateAuthenticationOptions({
      rpID: rp.rpID,
      userVerification: 'preferred',
      timeout: PASSKEY_CHALLENGE_TTL_MS,
      allowCredentials: user ? (user.passkeys ?? []).map((p) => ({ id: p.credentialId, transports: [...p.transports] })) : undefined,
    })
  }

  /**
   * Verifies a sign-in assertion against the challenge it was issued with; `onlyUserId` restricts
   * it to one account (the second factor). The signature counter must move forward (a replayed or
   * cloned authenticator's assertion is refused). Answers the user, whose record is replaced in
   * memory with the passkey's new counter (the new session's write stores it).
   */
  async verifySignIn(response: AuthenticationResponseJSON, challenge: string, rp: RelyingParty, onlyUserId: string | null): Promise<UserRecord> {
    const found = typeof response?.id === 'string' ? this.find(response.id) : undefined
    if (!found) throw passkeyFailed('This passkey is not registered on this vault')
    const { user, passkey } = found
    if (onlyUserId !== null && user.id !== onlyUserId) throw passkeyFailed('This passkey belongs to another account')
    const handle = response.response?.userHandle
    if (handle && handle !== bytesToBase64url(userHandle(user.id))) throw passkeyFailed('This passkey belongs to another account')
    const { verifyAuthenticationResponse } = await webauthn()
    let verified
    try {
      verified = await verifyAuthenticationResponse({
        response,
        expectedChallenge: challenge,
        expectedOrigin: rp.origin,
        expectedRPID: rp.rpID,
        credential: {
          id: passkey.credentialId,
          publicKey: new Uint8Array(Buffer.from(passkey.publicKey, 'base64url')),
          counter: passkey.counter,
          transports: [...passkey.transports],
        },
        requireUserVerification: false,
      })
    } catch (error) {
      // The library refuses a counter that did not move forward itself; say which check failed.
      throw /counter/i.test((error as Error)?.message ?? '') ? counterRefused() : passkeyFailed()
    }
    if (!verified.verified) throw passkeyFailed()
    // Checked again after the await: two racing uses of one assertion cannot both pass.
    const newCounter = verified.authenticationInfo.newCounter
    // From the current record: a racing use replaces it (records are frozen once stored).
    const owner = this.accounts.userById(user.id)
    const current = owner?.passkeys?.find((p) => p.id === passkey.id)
    if (!owner || !current) throw passkeyFailed('This passkey was removed')
    if ((newCounter > 0 || current.counter > 0) && newCounter <= current.counter) throw counterRefused()
    const at = new Date(this.now()).toISOString()
    return this.accounts.changeUser(owner, {
      passkeys: owner.passkeys!.map((p) => (p.id === passkey.id ? { ...p, counter: newCounter, lastUsedAt: at } : p)),
    })
  }
}
