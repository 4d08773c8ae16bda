// Device login for the `svc` command (RFC 8628's device authorization grant, in our API's shape).
// The CLI asks for a device code and a short user code; the person opens
// <SVC_BASE_URL>/cli?code=ABCD-EFGH while signed in, sees the device name and the scopes, and
// approves or denies; the CLI, polling with the device code, then receives a new access key.
//
// Requests live in the store's shared state (in memory on the file store: a restart makes the CLI
// start again; in the database with PostgreSQL: any instance approves or answers a poll of a
// sign-in another started). They last ten minutes. The device code and the user code are keys
// only (the database keeps their hashes); the request itself holds neither.
import type { AccessKeys, PublicAccessKey } from '../../../auth/access-keys'
import { isScope, type Scope } from '../../../auth/scopes'
import { constantTimeEqual, randomToken, sha256Hex } from '../../../crypto/tokens'
import { AppError, NotFound, validationError } from '../../../http/errors'
import type { VaultRole } from '../../../store/records'
import { MemoryState, type Entries, type SharedState, type WindowCounter } from '../../../store/shared-state'

export const DEVICE_CODE_TTL_MS = 10 * 60_000
export const POLL_INTERVAL_MS = 5_000
/** RFC 8628 3.5: each slow_down adds five seconds to the interval. */
export const SLOW_DOWN_STEP_MS = 5_000
/** Timers and networks are not exact: a poll this much early still counts as on time. */
const POLL_SLACK_MS = 250
export const KEY_TTL_MS = 90 * 86_400_000
export const DEFAULT_CLI_SCOPES: readonly Scope[] = [
  'entries:read',
  'entries:reveal',
  'export:read',
  'envs:read',
  'envs:reveal',
  '2fa:read',
  '2fa:reveal',
  'categories:read',
]
// Memory stays bounded on a public endpoint: pending requests per client address, per IPv6 /64
// (one host usually holds a whole /64, so counting addresses alone lets it fill the global cap)
// and in all.
const MAX_PENDING_PER_CLIENT = 10
export const MAX_PENDING_PER_NETWORK = 20
const MAX_PENDING = 1000
// A signed-in user guessing user codes: this many unknown codes per 15 minutes.
const LOOKUP_WINDOW_MS = 15 * 60_000
const MAX_FAILED_LOOKUPS = 20

// RFC 8628 6.1: consonants only (no vowels, so no words), no look-alikes.
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ'
const USER_CODE_LENGTH = 8

export type DeviceRequestStatus = 'pending' | 'approved' | 'denied'

interface DeviceRequest {
  deviceCodeHash: string
  deviceName: string
  /** What the device asked for; an approval without a choice grants only its default ones. */
  scopes: Scope[]
  client: string
  /** The client's IPv6 /64 (its address for IPv4). */
  network: string
  userAgent: string | null
  createdAt: number
  expiresAt: number
  intervalMs: number
  lastPollAt: number | null
  status: DeviceRequestStatus
  approvedBy: string | null
  /** What the approver granted. */
  granted: Scope[]
  /** `svc login --vault`: the shared vault asked for, by name or id (null: the personal vault). */
  vault: string | null
  /** The approver's vault of that name, bound to the key on approval. */
  vaultId: string | null
  approvedAt: number | null
  /** When it was counted among the pending ones of its client, network and in all (taken back when it goes). */
  countedAt: number
}

/** A request as stored, with the version its next change must find. */
interface Stored {
  request: DeviceRequest
  version: number
}

/** A shared vault as the approver sees it (their own vaults only). */
export interface ApproverVault {
  id: string
  name: string
  role: VaultRole
}

export interface DeviceAuthorization {
  deviceCode: string
  userCode: string
  verificationUri: string
  expiresIn: number
  interval: number
}

export interface DeviceRequestView {
  userCode: string
  deviceName: string
  keyName: string
  /** Everything the device asked for; beyond `grantedByDefault`, granted only when the approver picks it. */
  scopes: Scope[]
  /** What an approval without a choice grants: the requested scopes among the default ones. */
  grantedByDefault: Scope[]
  /** Where and when the request started, as the server saw it. */
  address: string
  userAgent: string | null
  createdAt: string
  keyExpiresInDays: number
  expiresAt: string
  /** Asked for with `svc login --vault`: the approver's vault of that name (id and role null when they have none). */
  vault?: { name: string; id: string | null; role: VaultRole | null }
}

const DEFAULTS = new Set<Scope>(DEFAULT_CLI_SCOPES)
/** The scopes an approval grants unless the approver widens them: the default ones asked for. */
export const defaultGrant = (requested: readonly Scope[]) => requested.filter((scope) => DEFAULTS.has(scope))

/** The /64 of an IPv6 address (the unit one host or customer gets), or the address itself. */
export function networkOf(address: string): string {
  if (!address.includes(':')) return address
  const zone = address.indexOf('%')
  const bare = zone === -1 ? address : address.slice(0, zone)
  const halves = bare.split('::')
  if (halves.length > 2) return bare
  const head = halves[0] ? halves[0].split(':') : []
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : []
  // An embedded IPv4 tail (::ffff:1.2.3.4) takes two groups; only the first four matter here.
  const groups = halves.length === 2 ? [...head, ...Array(Math.max(0, 8 - head.length - tail.length)).fill('0'), ...tail] : head
  return (
    groups
      .slice(0, 4)
      .map((group) => group.replace(/^0+(?=.)/, ''))
      .join(':') + '::/64'
  )
}

/** A User-Agent header as stored and shown: printable characters only, at most 300. */
const cleanUserAgent = (raw: string | null | undefined): string | null => {
  const text = (raw ?? '')
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, '')
    .trim()
    .slice(0, 300)
  return text === '' ? null : text
}

/** "ABCDEFGH" -> "ABCD-EFGH". */
export const formatUserCode = (code: string) => `${code.slice(0, 4)}-${code.slice(4)}`

/** What a person types or a link carries: case, spaces and hyphens do not matter. */
export function normalizeUserCode(input: string): string | null {
  const code = input.toUpperCase().replace(/[\s-]/g, '')
  if (code.length !== USER_CODE_LENGTH) return null
  for (const letter of code) if (!USER_CODE_ALPHABET.includes(letter)) return null
  return code
}

function randomUserCode(): string {
  let code = ''
  // Rejection sampling: 240 is the largest multiple of 20 below 256, so every letter is as likely.
  while (code.length < USER_CODE_LENGTH) {
    for (const byte of crypto.getRandomValues(new Uint8Array(16))) {
      if (byte < 240 && code.length < USER_CODE_LENGTH) code += USER_CODE_ALPHABET[byte % 20]
    }
  }
  return code
}

export const keyNameFor = (deviceName: string) => `svc on ${deviceName}`

const tooMany = (retryAfterSeconds: number, message: string) =>
  new AppError(429, 'TOO_MANY_ATTEMPTS', message, { 'retry-after': String(Math.max(1, retryAfterSeconds)) })
const deviceCodeNotFound = () =>
  new AppError(404, 'DEVICE_CODE_NOT_FOUND', 'No pending sign-in has this code: it may have expired (codes last 10 minutes) or been used')

/** How long a request is kept past its expiry: a late poll hears EXPIRED_TOKEN, not an unknown code. */
const KEEP_EXPIRED_MS = DEVICE_CODE_TTL_MS
/** Tries of a change that lost a race with another (a poll and an approval at once). */
const CHANGE_TRIES = 5

export class DeviceLogins {
  /** Requests by their device code's SHA-256. */
  private readonly requests: Entries
  /** The device code's SHA-256 by user code (the user code is the key: the database keeps its hash). */
  private readonly userCodes: Entries
  /** Accounts deleted: when (their approved, uncollected sign-ins give no key). */
  private readonly cancelled: Entries
  /** Pending requests per client, network and in all (events taken back when a request goes). */
  private readonly pendingCount: WindowCounter
  /** Unknown user codes per signed-in user. */
  private readonly failedLookups: WindowCounter

  constructor(
    private readonly accessKeys: AccessKeys,
    private readonly baseUrl: string,
    private readonly now: () => number = Date.now,
    /** The shared vaults a user is a member of, with their role. */
    private readonly vaultsOf: (userId: string) => ApproverVault[] = () => [],
    state: SharedState = new MemoryState(now),
  ) {
    this.requests = state.entries('device-login')
    this.userCodes = state.entries('device-login-user-code')
    this.cancelled = state.entries('device-login-cancelled')
    this.pendingCount = state.window('device-login-pending', DEVICE_CODE_TTL_MS)
    this.failedLookups = state.window('device-login-lookups', LOOKUP_WINDOW_MS)
  }

  /** The approver's vaults matching the name (or id) the device asked for. */
  private matchVaults(userId: string, wanted: string): ApproverVault[] {
    const vaults = this.vaultsOf(userId)
    const byId = vaults.find((vault) => vault.id === wanted)
    return byId ? [byId] : vaults.filter((vault) => vault.name === wanted)
  }

  private static countKeys(request: Pick<DeviceRequest, 'client' | 'network'>): string[] {
    return [`c:${request.client}`, `n:${request.network}`, 'all']
  }

  async start(
    input: { deviceName?: string; scopes?: string[]; vault?: string } | null,
    client: string,
    userAgent: string | null = null,
  ): Promise<DeviceAuthorization> {
    const deviceName = input?.deviceName === undefined ? 'unknown device' : input.deviceName.trim()
    if (deviceName === '') throw validationError('deviceName', 'must not be blank')
    const scopes = [...new Set(input?.scopes ?? DEFAULT_CLI_SCOPES)]
    if (scopes.length === 0) throw validationError('scopes', 'at least one scope is required')
    const unknown = scopes.find((scope) => !isScope(scope))
    if (unknown !== undefined) throw validationError('scopes', `unknown scope "${unknown}"`)
    const vault = input?.vault === undefined ? null : input.vault.trim()
    if (vault === '') throw validationError('vault', 'must not be blank')
    const network = networkOf(client)
    const [clientKey, networkKey, allKey] = DeviceLogins.countKeys({ client, network })
    const counted = await this.pendingCount.take([
      { key: clientKey, max: MAX_PENDING_PER_CLIENT },
      { key: networkKey, max: MAX_PENDING_PER_NETWORK },
      { key: allKey, max: MAX_PENDING },
    ])
    if ('retryAfter' in counted) throw tooMany(60, 'Too many sign-ins are waiting for approval; try again in a minute')
    const deviceCode = randomToken(32)
    const now = this.now()
    const request: DeviceRequest = {
      deviceCodeHash: sha256Hex(deviceCode),
      deviceName,
      scopes: scopes as Scope[],
      client,
      network,
      userAgent: cleanUserAgent(userAgent),
      createdAt: now,
      expiresAt: now + DEVICE_CODE_TTL_MS,
      intervalMs: POLL_INTERVAL_MS,
      lastPollAt: null,
      status: 'pending',
      approvedBy: null,
      granted: [],
      vault,
      vaultId: null,
      approvedAt: null,
      countedAt: counted.at,
    }
    let userCode = randomUserCode()
    try {
      while (!(await this.userCodes.create(userCode, request.deviceCodeHash, request.expiresAt))) userCode = randomUserCode()
      await this.requests.create(request.deviceCodeHash, request, request.expiresAt + KEEP_EXPIRED_MS)
    } catch (error) {
      // Not stored (the database away): it does not count among the pending ones.
      await Promise.resolve(this.pendingCount.remove(DeviceLogins.countKeys(request), counted.at)).catch(() => {})
      throw error
    }
    return {
      deviceCode,
      userCode: formatUserCode(userCode),
      verificationUri: `${this.baseUrl}/cli?code=${formatUserCode(userCode)}`,
      expiresIn: DEVICE_CODE_TTL_MS / 1000,
      interval: POLL_INTERVAL_MS / 1000,
    }
  }

  /**
   * The CLI's poll. Pending, too fast, denied and expired answer errors (RFC 8628 3.5); once
   * approved, the key is created for the approving user and handed over this once, with for whom
   * it was made and from which device (for the audit log).
   */
  async poll(deviceCode: string): Promise<{ key: PublicAccessKey & { key: string }; userId: string; deviceName: string }> {
    const hash = sha256Hex(deviceCode)
    for (let tries = 0; ; tries++) {
      const found = await this.find(hash)
      if (!found || !constantTimeEqual(found.request.deviceCodeHash, hash)) {
        throw new AppError(400, 'INVALID_GRANT', 'Unknown or already used device code: run svc login again')
      }
      const { request, version } = found
      const now = this.now()
      if (now >= request.expiresAt) {
        await this.remove(found)
        throw new AppError(400, 'EXPIRED_TOKEN', 'The sign-in code expired before it was approved: run svc login again')
      }
      if (request.status === 'denied') {
        await this.remove(found)
        throw new AppError(400, 'ACCESS_DENIED', 'The sign-in was denied in the web interface')
      }
      const early = request.lastPollAt !== null && now - request.lastPollAt < request.intervalMs - POLL_SLACK_MS
      const intervalMs = early ? request.intervalMs + SLOW_DOWN_STEP_MS : request.intervalMs
      if (early || request.status === 'pending') {
        // An approval that came in meanwhile (another instance) wins: read again and poll again.
        if (!(await this.requests.replace(hash, version, { ...request, lastPollAt: now, intervalMs }))) {
          if (tries < CHANGE_TRIES) continue
          throw new AppError(400, 'SLOW_DOWN', 'Polling too fast', { 'retry-after': String(intervalMs / 1000) })
        }
      }
      if (early) {
        const seconds = intervalMs / 1000
        throw new AppError(400, 'SLOW_DOWN', `Polling too fast: wait ${seconds} seconds between polls`, { 'retry-after': String(seconds) })
      }
      if (request.status === 'pending') {
        throw new AppError(400, 'AUTHORIZATION_PENDING', 'Waiting for the sign-in to be approved in the web interface', {
          'retry-after': String(intervalMs / 1000),
        })
      }
      // Approved: single use, so the request goes (taken once, of racing polls one wins) before the key is written.
      if (!(await this.remove(found))) {
        if (tries < CHANGE_TRIES) continue
        throw new AppError(400, 'INVALID_GRANT', 'Unknown or already used device code: run svc login again')
      }
      const gone = await this.cancelled.get<number>(request.approvedBy!)
      if (gone && gone.value >= (request.approvedAt ?? 0)) {
        throw new AppError(400, 'INVALID_GRANT', 'Unknown or already used device code: run svc login again')
      }
      const key = await this.accessKeys.create(request.approvedBy!, {
        name: keyNameFor(request.deviceName),
        scopes: request.granted,
        expiresAt: new Date(now + KEY_TTL_MS).toISOString(),
        // Checked again here: an approver removed from the vault since gets no key for it (404).
        ...(request.vaultId ? { vaultId: request.vaultId } : {}),
      })
      return { key, userId: request.approvedBy!, deviceName: request.deviceName }
    }
  }

  /** What the approval page shows: only a pending, unexpired request. */
  async describe(userId: string, userCode: string): Promise<DeviceRequestView> {
    const { request } = await this.pending(userId, userCode)
    let vault: DeviceRequestView['vault']
    if (request.vault !== null) {
      const matches = this.matchVaults(userId, request.vault)
      vault = matches.length === 1 ? { name: matches[0].name, id: matches[0].id, role: matches[0].role } : { name: request.vault, id: null, role: null }
    }
    return {
      userCode: formatUserCode(normalizeUserCode(userCode)!),
      deviceName: request.deviceName,
      keyName: keyNameFor(request.deviceName),
      scopes: [...request.scopes],
      grantedByDefault: defaultGrant(request.scopes),
      address: request.client,
      userAgent: request.userAgent,
      createdAt: new Date(request.createdAt).toISOString(),
      keyExpiresInDays: KEY_TTL_MS / 86_400_000,
      expiresAt: new Date(request.expiresAt).toISOString(),
      ...(vault ? { vault } : {}),
    }
  }

  /**
   * Approves or denies; answers what was decided on (device name, the scopes asked for and
   * granted; never a code), for the audit log. An approval grants `chosen` when the approver
   * picked scopes on the page, else only the default scopes among those asked for: a link
   * asking for every scope gets no write scope from one click.
   */
  async decide(
    userId: string,
    userCode: string,
    approve: boolean,
    chosen?: readonly string[],
  ): Promise<{ status: 'approved' | 'denied'; deviceName: string; scopes: Scope[]; requestedScopes: Scope[]; vault: { id: string; name: string } | null }> {
    let granted: Scope[] = []
    if (approve) {
      if (chosen !== undefined) {
        granted = [...new Set(chosen)] as Scope[]
        const unknown = granted.find((scope) => !isScope(scope))
        if (unknown !== undefined) throw validationError('scopes', `unknown scope "${unknown}"`)
        if (granted.length === 0) throw validationError('scopes', 'at least one scope is required')
      }
    }
    for (let tries = 0; ; tries++) {
      const { request, version } = await this.pending(userId, userCode)
      if (approve && chosen === undefined) {
        granted = defaultGrant(request.scopes)
        if (granted.length === 0) {
          throw validationError('scopes', `the device asked only for ${request.scopes.join(' ')}, beyond the default scopes: choose the scopes to grant`)
        }
      }
      // A key for a shared vault: only one the approver is a member of, named without doubt.
      let vault: ApproverVault | null = null
      if (approve && request.vault !== null) {
        const matches = this.matchVaults(userId, request.vault)
        if (matches.length === 0) throw NotFound.vault()
        if (matches.length > 1) {
          throw new AppError(409, 'VAULT_NAME_AMBIGUOUS', 'Several of your shared vaults have this name: run svc login --vault with the vault id instead')
        }
        vault = matches[0]
      }
      const status = approve ? 'approved' : 'denied'
      const decided: DeviceRequest = {
        ...request,
        status,
        vaultId: vault?.id ?? null,
        approvedBy: approve ? userId : null,
        approvedAt: approve ? this.now() : null,
        granted,
      }
      // A poll that came in meanwhile changed it: read again (still pending: decide on it).
      if (!(await this.requests.replace(request.deviceCodeHash, version, decided))) {
        if (tries < CHANGE_TRIES) continue
        throw deviceCodeNotFound()
      }
      return {
        status,
        deviceName: request.deviceName,
        scopes: granted,
        requestedScopes: [...request.scopes],
        vault: vault ? { id: vault.id, name: vault.name } : null,
      }
    }
  }

  /** Drops the sign-ins this user approved that the CLI has not collected yet (account deletion). */
  async cancelFor(userId: string): Promise<void> {
    const now = this.now()
    const known = await this.cancelled.get<number>(userId)
    if (known) await this.cancelled.replace(userId, known.version, now, now + DEVICE_CODE_TTL_MS + KEEP_EXPIRED_MS)
    else await this.cancelled.create(userId, now, now + DEVICE_CODE_TTL_MS + KEEP_EXPIRED_MS)
  }

  private async find(deviceCodeHash: string): Promise<Stored | undefined> {
    const entry = await this.requests.get<DeviceRequest>(deviceCodeHash)
    return entry && { request: entry.value, version: entry.version }
  }

  private async pending(userId: string, userCode: string): Promise<Stored> {
    const retry = await this.failedLookups.wait(userId, MAX_FAILED_LOOKUPS)
    if (retry > 0) throw tooMany(retry, 'Too many unknown codes; try again later')
    const code = normalizeUserCode(userCode)
    const hash = code === null ? undefined : await this.userCodes.get<string>(code)
    const found = hash === undefined ? undefined : await this.find(hash.value)
    if (!found || found.request.status !== 'pending' || this.now() >= found.request.expiresAt) {
      if (found && this.now() >= found.request.expiresAt) await this.remove(found)
      await this.failedLookups.add(userId)
      throw deviceCodeNotFound()
    }
    return found
  }

  /** Removes the request (at its version: answers false when another change came first) and its count. */
  private async remove({ request, version }: Stored): Promise<boolean> {
    if (!(await this.requests.remove(request.deviceCodeHash, version))) return false
    await this.pendingCount.remove(DeviceLogins.countKeys(request), request.countedAt)
    return true
  }
}
