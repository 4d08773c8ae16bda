// Sign-in through an OpenID Connect provider: authorization code flow with PKCE (S256), state
// and nonce. The provider is discovered once from SVC_OIDC_ISSUER and its configuration cached;
// openid-client checks the ID token (signature through the provider's JWKS, issuer, audience,
// expiry, nonce). What the browser carries between the two legs (state, nonce, PKCE verifier) is
// one sealed, short-lived transaction that is good for one callback only.
// Type only: openid-client loads when OIDC is first used, not at start-up.
import type * as OpenId from 'openid-client'
import type { Config, OidcConfig } from '../config'
import { isLoopbackHost } from '../config'
import type { Keyring } from '../crypto/keyring'
import { constantTimeEqual, randomToken } from '../crypto/tokens'
import { AppError } from '../http/errors'
import { lazy } from '../http/lazy'
import type { Logger } from '../http/error-handler'
import type { UserRecord } from '../store/records'
import { MemoryState, type Entries, type SharedState } from '../store/shared-state'
import { normalizeEmail, type Accounts, type SignedIn } from './accounts'
import { EMAIL_PATTERN } from './model'

const loadOpenIdClient = lazy('OpenID Connect sign-in', () => import('openid-client'))

export const OIDC_CALLBACK_PATH = '/api/auth/oidc/callback'
/** The cookie holding the sealed transaction; sent only to the callback path. */
export const OIDC_TRANSACTION_COOKIE = 'svc_oidc'
export const OIDC_TRANSACTION_TTL_MS = 10 * 60_000
const SCOPE = 'openid email profile'
const SEAL_PURPOSE = 'oidc-transaction'
/** Seconds for each request to the provider (discovery, token, userinfo, JWKS). */
const PROVIDER_TIMEOUT_S = 10
const MAX_NAME_LENGTH = 200
const MAX_EMAIL_LENGTH = 200

export interface OidcDeps {
  config: Pick<Config, 'baseUrl'> & { oidc: OidcConfig }
  keyring: Keyring
  accounts: Accounts
  log: Logger
  now: () => number
  /** Where used transactions are remembered (the store's: shared by instances on a database). */
  state?: SharedState
}

/** What the sealed cookie holds between the redirect and the callback. */
interface Transaction {
  /** Random id, remembered once used so the same transaction cannot complete twice. */
  id: string
  state: string
  nonce: string
  verifier: string
  /** Expiry, epoch milliseconds. */
  exp: number
  /** Set when a signed-in user started the round trip to link an identity to their account. */
  link?: { userId: string; sessionHash: string }
}

/** What a completed callback did: signed someone in, or linked an identity to the signed-in account. */
export type CallbackOutcome = { signedIn: SignedIn } | { linked: UserRecord }

/** The callback's own request: who is signed in there, and from where it came. */
export interface CallbackContext {
  /** SHA-256 of the session cookie the callback carried, when it names a live session. */
  sessionHash: string | null
  client: string
  /** The browser's User-Agent, for the session list. */
  userAgent?: string | null
}

/** The refusal of a first sign-in whose e-mail already has an account. */
export const LINK_FROM_SETTINGS = 'sign in with your password, then link the provider in Settings'

export const oidcFailed = (message: string) => new AppError(400, 'OIDC_FAILED', message)

/** The part of the claims a sign-in uses. */
interface ProfileClaims {
  email?: unknown
  email_verified?: unknown
  name?: unknown
  preferred_username?: unknown
}

export class OidcSignIn {
  readonly redirectUri: string
  private discovered: Promise<OpenId.Configuration> | undefined
  /** Transactions already completed (or attempted), until they would have expired anyway. */
  private readonly used: Entries

  constructor(private readonly deps: OidcDeps) {
    this.used = (deps.state ?? new MemoryState(deps.now)).entries('oidc-used')
    this.redirectUri = `${deps.config.baseUrl}${OIDC_CALLBACK_PATH}`
  }

  /** The provider's configuration, discovered on first use and kept; a failed discovery is retried next time. */
  private configuration(): Promise<OpenId.Configuration> {
    if (!this.discovered) {
      const { issuer, clientId, clientSecret } = this.deps.config.oidc
      const issuerUrl = new URL(issuer)
      // Plain http only for a provider on this machine (config.ts already refuses it elsewhere).
      const insecure = issuerUrl.protocol === 'http:' && isLoopbackHost(issuerUrl.hostname)
      const attempt = loadOpenIdClient().then((client) =>
        client.discovery(issuerUrl, clientId, undefined, clientSecret ? client.ClientSecretBasic(clientSecret) : client.None(), {
          timeout: PROVIDER_TIMEOUT_S,
          // Signature checks against the provider's JWKS even for tokens from the token endpoint
          // (openid-client otherwise relies on TLS there, and loopback http has none).
          execute: insecure ? [client.allowInsecureRequests, client.enableNonRepudiationChecks] : [client.enableNonRepudiationChecks],
        }),
      )
      this.discovered = attempt
      attempt.catch(() => {
        if (this.discovered === attempt) this.discovered = undefined
      })
    }
    return this.discovered
  }

  /**
   * The provider's authorization URL and the sealed transaction for the cookie. With `link`, the
   * callback links the identity to that user instead of signing in (the same session must finish it).
   */
  async begin(link?: { userId: string; sessionHash: string }): Promise<{ authorizationUrl: string; transaction: string }> {
    const client = await loadOpenIdClient()
    let configuration: OpenId.Configuration
    try {
      configuration = await this.configuration()
    } catch (error) {
      this.logFailure('discovery', error)
      throw oidcFailed('The identity provider could not be reached; try again later')
    }
    const transaction: Transaction = {
      id: randomToken(16),
      state: client.randomState(),
      nonce: client.randomNonce(),
      verifier: client.randomPKCECodeVerifier(),
      exp: this.deps.now() + OIDC_TRANSACTION_TTL_MS,
      ...(link ? { link } : {}),
    }
    const url = client.buildAuthorizationUrl(configuration, {
      redirect_uri: this.redirectUri,
      response_type: 'code',
      scope: SCOPE,
      state: transaction.state,
      nonce: transaction.nonce,
      code_challenge: await client.calculatePKCECodeChallenge(transaction.verifier),
      code_challenge_method: 'S256',
    })
    return {
      authorizationUrl: url.href,
      transaction: this.deps.keyring.sealState(SEAL_PURPOSE, JSON.stringify(transaction)),
    }
  }

  /**
   * Completes the round trip from the callback's query string and the sealed transaction: checks
   * and exchanges the code, then signs in (a linked identity, or a new account) or, for a link
   * started from Settings, links the identity to the signed-in account.
   */
  async complete(
    search: string,
    sealedTransaction: string | undefined,
    context: CallbackContext = { sessionHash: null, client: 'unknown' },
  ): Promise<CallbackOutcome> {
    const transaction = await this.takeTransaction(sealedTransaction)
    const params = new URLSearchParams(search)
    const error = params.get('error')
    if (error !== null) {
      const reason = /^[A-Za-z0-9_.-]{1,64}$/.test(error) ? ` (${error})` : ''
      throw oidcFailed(`The identity provider did not sign you in${reason}`)
    }
    const state = params.get('state')
    if (state === null || state !== transaction.state || params.getAll('state').length !== 1) {
      throw oidcFailed('The sign-in state does not match; start the sign-in again')
    }
    if (!params.get('code')) throw oidcFailed('The identity provider sent no authorization code')

    let configuration: OpenId.Configuration
    try {
      configuration = await this.configuration()
    } catch (cause) {
      this.logFailure('discovery', cause)
      throw oidcFailed('The identity provider could not be reached; try again later')
    }
    // The URL the provider redirected to, as registered (the request may have come through a proxy).
    const currentUrl = new URL(this.redirectUri)
    currentUrl.search = search
    const client = await loadOpenIdClient()
    let tokens: Awaited<ReturnType<typeof OpenId.authorizationCodeGrant>>
    try {
      tokens = await client.authorizationCodeGrant(configuration, currentUrl, {
        expectedState: transaction.state,
        expectedNonce: transaction.nonce,
        pkceCodeVerifier: transaction.verifier,
        idTokenExpected: true,
      })
    } catch (cause) {
      this.logFailure('code exchange', cause)
      throw oidcFailed("The identity provider's answer could not be verified; start the sign-in again")
    }
    const idToken = tokens.claims()
    if (!idToken) throw oidcFailed('The identity provider sent no ID token')
    const identity = { issuer: idToken.iss, subject: idToken.sub }

    if (transaction.link) return { linked: await this.link(transaction.link, identity, context) }

    const linked = this.deps.accounts.userByIdentity(identity.issuer, identity.subject)
    if (linked) return { signedIn: await this.deps.accounts.startSession(linked, { client: context.client, userAgent: context.userAgent, method: 'oidc' }) }

    let profile = idToken as ProfileClaims
    if (typeof idToken.email !== 'string' && tokens.access_token) {
      // Providers that keep profile claims out of the ID token (as the code flow allows) give them here.
      try {
        profile = { ...(await client.fetchUserInfo(configuration, tokens.access_token, idToken.sub)) }
      } catch (cause) {
        this.logFailure('userinfo', cause)
        throw oidcFailed("The identity provider's user information could not be read")
      }
    }
    return { signedIn: await this.signInNewIdentity(identity, profile, context.client, false, context.userAgent ?? null) }
  }

  /**
   * A first sign-in: creates an account. Never joins an existing account on the strength of the
   * e-mail alone (whoever registered that e-mail first would get the newcomer's identity, or the
   * other way round): its owner signs in and links the provider from Settings.
   */
  private async signInNewIdentity(
    identity: { issuer: string; subject: string },
    profile: ProfileClaims,
    client: string,
    retried = false,
    userAgent: string | null = null,
  ): Promise<SignedIn> {
    const email = typeof profile.email === 'string' ? normalizeEmail(profile.email) : ''
    if (!email || email.length > MAX_EMAIL_LENGTH || !new RegExp(EMAIL_PATTERN).test(email)) {
      throw oidcFailed('The identity provider did not share a usable e-mail address (the "email" scope is needed)')
    }
    if (this.deps.accounts.userByEmail(email)) throw oidcFailed(LINK_FROM_SETTINGS)

    this.deps.accounts.assertSignupOpen()
    try {
      return await this.deps.accounts.withRegistrationSlot(client, () =>
        this.deps.accounts.createUser({ email, name: displayName(profile), passwordHash: null, identities: [identity] }, { client, userAgent, method: 'oidc' }),
      )
    } catch (error) {
      // Another sign-in (or a registration) took this e-mail meanwhile: decide again, once.
      if (error instanceof AppError && error.code === 'EMAIL_TAKEN' && !retried) {
        const linked = this.deps.accounts.userByIdentity(identity.issuer, identity.subject)
        if (linked) return this.deps.accounts.startSession(linked, { client, userAgent, method: 'oidc' })
        return this.signInNewIdentity(identity, profile, client, true, userAgent)
      }
      throw error
    }
  }

  /** Links the identity to the account that started the round trip, from that same session. */
  private async link(
    link: { userId: string; sessionHash: string },
    identity: { issuer: string; subject: string },
    context: CallbackContext,
  ): Promise<UserRecord> {
    const user = this.deps.accounts.userById(link.userId)
    // The browser finishing the round trip must still hold the session that started it.
    if (!user || context.sessionHash === null || !constantTimeEqual(context.sessionHash, link.sessionHash)) {
      throw oidcFailed('The session that started linking has ended; sign in and link the provider again')
    }
    await this.deps.accounts.linkIdentity(user, identity, link.sessionHash)
    return user
  }

  /** Opens the sealed transaction and marks it used: one callback per transaction, within its lifetime. */
  private async takeTransaction(sealed: string | undefined): Promise<Transaction> {
    const expired = () => oidcFailed('The sign-in request is missing, expired or already used; start the sign-in again')
    if (!sealed || sealed.length > 4096) throw expired()
    const plaintext = this.deps.keyring.openState(SEAL_PURPOSE, sealed)
    let transaction: Transaction
    try {
      transaction = JSON.parse(plaintext ?? 'null') as Transaction
    } catch {
      throw expired()
    }
    const now = this.deps.now()
    if (!isTransaction(transaction) || transaction.exp <= now) throw expired()
    // Claimed in one step of the shared state: of two concurrent callbacks with one transaction
    // (on any instances), one wins.
    if (!(await this.used.create(transaction.id, true, transaction.exp))) throw expired()
    return transaction
  }

  /** One line naming the step and the library's reason; never tokens, codes or the query. */
  private logFailure(step: string, error: unknown): void {
    const failure = error as { name?: string; code?: string; message?: string; error?: string; cause?: unknown }
    const detail = [failure?.name, failure?.code, failure?.error].filter(Boolean).join(' ')
    const cause = failure?.cause instanceof Error ? ` (${failure.cause.message})` : ''
    this.deps.log(`oidc: ${step} failed: ${detail}: ${failure?.message ?? String(error)}${cause}`)
  }
}

function isTransaction(value: unknown): value is Transaction {
  const t = value as Transaction | null
  return (
    typeof t === 'object' &&
    t !== null &&
    typeof t.id === 'string' &&
    typeof t.state === 'string' &&
    typeof t.nonce === 'string' &&
    typeof t.verifier === 'string' &&
    typeof t.exp === 'number' &&
    (t.link === undefined || (typeof t.link === 'object' && t.link !== null && typeof t.link.userId === 'string' && typeof t.link.sessionHash === 'string'))
  )
}

function displayName(profile: ProfileClaims): string | null {
  const raw = typeof profile.name === 'string' && profile.name.trim() ? profile.name : profile.preferred_username
  if (typeof raw !== 'string') return null
  return raw.trim().slice(0, MAX_NAME_LENGTH) || null
}
