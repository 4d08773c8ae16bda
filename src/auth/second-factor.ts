// Two-factor sign-in for accounts: a TOTP seed sealed by the user's vault data key,
// ten recovery codes stored as SHA-256 (each carries 80 random bits, so a fast hash is enough),
// and the short-lived sign-in challenge that sits between the password and the second factor.
import { constantTimeEqual, randomBytes, sha256Hex } from '../crypto/tokens'
import type { Keyring } from '../crypto/keyring'
import { AppError } from '../http/errors'
import { totpCode, TOTP_PERIOD_SECONDS } from '../crypto/totp-code'
import type { Vaults } from '../vault-access'
import type { UserRecord } from '../store/records'
import type { Accounts } from './accounts'
import { MemoryState, type Entries, type SharedState, type WindowCounter } from '../store/shared-state'
import { tooManyAttempts } from './login-throttle'
import { lazy } from '../http/lazy'

// Loaded on first use: neither is needed to start or to sign in.
const loadSetupLibraries = lazy('Two-factor set-up', () => Promise.all([import('otpauth'), import('uqr')]))

export const RECOVERY_CODE_COUNT = 10
/** How long the password step of a two-factor sign-in stays good. */
export const TWO_FACTOR_CHALLENGE_TTL_MS = 5 * 60_000
export const TWO_FACTOR_CHALLENGE_COOKIE = 'svc_2fa'
/** Wrong codes a two-factor challenge takes before it dies: the password step again. */
export const CHALLENGE_MAX_WRONG_CODES = 5
/** Wrong codes for one account within a day after which its second step locks, and for how long. */
export const LOCK_AFTER_WRONG_CODES = 20
export const WRONG_CODES_WINDOW_MS = 24 * 3_600_000
export const SECOND_STEP_LOCK_MS = 15 * 60_000
/** How long a used recovery code stays claimed in the shared state (its removal is written long before). */
const RECOVERY_CLAIM_MS = 24 * 3_600_000
/** Codes from one step before and one step after now are accepted (clock drift). */
const DRIFT_STEPS = 1
const ISSUER = 'svc-vault'
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789'

export const invalidCode = () => new AppError(401, 'INVALID_TWO_FACTOR_CODE', 'The two-factor code is wrong or was used already')
export const twoFactorRequired = () =>
  new AppError(401, 'TWO_FACTOR_REQUIRED', 'Sign in with your password first; the two-factor step expired or was not started')

const secondStepLocked = (retryAfter: number) =>
  tooManyAttempts(
    `Two-factor sign-in is locked for ${SECOND_STEP_LOCK_MS / 60_000} minutes after ${LOCK_AFTER_WRONG_CODES} wrong codes within a day; the account's owner is told`,
    retryAfter,
  )

/** An account's second step locked after too many wrong codes (recorded and told to the owner). */
export interface SecondStepLock {
  userId: string
  /** The client address of the code that locked it. */
  client: string
  wrongCodes: number
  lockedUntil: number
}

/** What proves the second factor: a code from the app or a recovery code. */
export interface SecondFactorProof {
  code?: string
  recoveryCode?: string
}

const stepAt = (timestampMs: number) => Math.floor(timestampMs / 1000 / TOTP_PERIOD_SECONDS)

/** Ten fresh recovery codes (xxxx-xxxx-xxxx-xxxx, 16 characters of a 31-letter alphabet: 79 bits). */
export function newRecoveryCodes(): string[] {
  const codes: string[] = []
  for (let n = 0; n < RECOVERY_CODE_COUNT; n++) {
    // Rejection sampling keeps every letter equally likely.
    let code = ''
    while (code.length < 16) {
      for (const byte of randomBytes(32)) {
        if (byte < 248 && code.length < 16) code += RECOVERY_ALPHABET[byte % 31]
      }
    }
    codes.push(code.match(/.{4}/g)!.join('-'))
  }
  return codes
}

export const normalizeRecoveryCode = (code: string) => code.toLowerCase().replace(/[\s-]/g, '')
export const hashRecoveryCode = (code: string) => sha256Hex(`svc-vault:recovery-code:${normalizeRecoveryCode(code)}`)

/**
 * Single-use, short-lived sealed values that travel through the browser as cookies (the
 * two-factor challenge, passkey ceremonies). Sealed under a key only this master key derives, so
 * the browser can neither read nor forge them; each id is remembered once used until it expires,
 * in the store's shared state (every instance on a database sees the use).
 */
export class SealedChallenges {
  /** Ids used, until they would have expired. */
  private readonly used: Entries
  /** Codes tried per two-factor challenge id, until the challenge expires. */
  private readonly tries: Entries
  /**
   * In memory (the file store) the used ids die with the process, so a challenge is good only in
   * the process that issued it: one from before a restart (whose use this process cannot know) is
   * refused. One server per data folder (the lock), so nothing else could have issued it. On a
   * database the used ids outlive an instance: any instance takes any other's challenge.
   */
  private readonly boot: string | undefined

  constructor(
    private readonly keyring: Keyring,
    private readonly now: () => number,
    state: SharedState = new MemoryState(now),
  ) {
    this.used = state.entries('challenge-used')
    this.tries = state.entries('challenge-tries')
    this.boot = state.shared ? undefined : crypto.randomUUID()
  }

  issue<T extends object>(purpose: string, payload: T, ttlMs: number): { sealed: string; id: string } {
    const id = crypto.randomUUID()
    return { sealed: this.keyring.sealState(purpose, JSON.stringify({ ...payload, id, exp: this.now() + ttlMs, boot: this.boot })), id }
  }

  /** The payload when the value is genuine, unexpired and unused; else null. */
  async read<T extends object>(purpose: string, sealed: unknown): Promise<(T & { id: string; exp: number }) | null> {
    if (typeof sealed !== 'string' || sealed === '' || sealed.length > 4096) return null
    const text = this.keyring.openState(purpose, sealed)
    if (!text) return null
    let value: T & { id: string; exp: number; boot?: string }
    try {
      value = JSON.parse(text) as T & { id: string; exp: number; boot?: string }
    } catch {
      return null
    }
    if (typeof value.id !== 'string' || typeof value.exp !== 'number' || value.exp <= this.now() || value.boot !== this.boot) return null
    if (await this.used.get(value.id)) return null
    return value
  }

  /**
   * Counts a code tried on a two-factor challenge, before its check (parallel guesses on one
   * challenge cannot pass the limit, on any instance): null when the challenge has had
   * CHALLENGE_MAX_WRONG_CODES already (it is then used up). `wrong()` keeps the count and kills
   * the challenge at the limit; `undo()` takes it back (the code was right, or was never checked).
   */
  async tryCode(challenge: { id: string; exp: number }): Promise<{ wrong(): Promise<void>; undo(): Promise<void> } | null> {
    const tried = await this.tries.increment(challenge.id, 1, challenge.exp)
    if (tried > CHALLENGE_MAX_WRONG_CODES) {
      await this.tries.increment(challenge.id, -1, challenge.exp)
      await this.consume(challenge)
      return null
    }
    return {
      wrong: async () => {
        if (tried >= CHALLENGE_MAX_WRONG_CODES) await this.consume(challenge)
      },
      undo: async () => {
        await this.tries.increment(challenge.id, -1, challenge.exp)
      },
    }
  }

  /** Marks a challenge used; false when it was used already (one step of the shared state: two racing requests cannot both win). */
  async consume(challenge: { id: string; exp: number }): Promise<boolean> {
    return this.used.create(challenge.id, true, challenge.exp)
  }
}

export interface SecondFactorDeps {
  accounts: Accounts
  vaults: Vaults
  now: () => number
  /** Where wrong codes, locks and used steps are kept (the store's: shared by instances on a database). */
  state?: SharedState
}

export class TwoFactorSignIn {
  /** Wrong codes per account in the last day (counted before each check, as the throttle does). */
  private readonly wrongCodes: WindowCounter
  /** Accounts whose second step is locked: until when (the entry expires then). */
  private readonly locks: Entries
  /**
   * Time steps whose code was accepted, per account, until they can no longer match. The record's
   * `usedSteps` keeps them too, but another instance sees that only after the write that follows:
   * this claim is what makes a code good once across instances.
   */
  private readonly usedSteps: Entries
  private readonly lockListeners: ((lock: SecondStepLock) => Promise<void> | void)[] = []

  constructor(private readonly deps: SecondFactorDeps) {
    const state = deps.state ?? new MemoryState(deps.now)
    this.wrongCodes = state.window('2fa-wrong-codes', WRONG_CODES_WINDOW_MS)
    this.locks = state.entries('2fa-lock')
    this.usedSteps = state.entries('totp-used-step')
  }

  /** Called when an account's second step locks (the audit event, the owner's notice). */
  onLocked(listener: (lock: SecondStepLock) => Promise<void> | void): void {
    this.lockListeners.push(listener)
  }

  /** Seconds until the account's second step takes codes again; 0 when it does now. */
  async lockedFor(userId: string): Promise<number> {
    const lock = await this.locks.get<number>(userId)
    const left = lock ? lock.value - this.deps.now() : 0
    return left > 0 ? Math.ceil(left / 1000) : 0
  }

  private async cipher(userId: string) {
    return (await this.deps.vaults.open(userId)).cipher
  }

  /** A new secret for the user, kept (sealed) as pending until a code from it enables it. */
  async setup(user: UserRecord): Promise<{ secret: string; uri: string; qr: string }> {
    if (user.twoFactor) throw new AppError(409, 'TWO_FACTOR_ALREADY_ENABLED', 'Two-factor sign-in is on already; turn it off first to set it up again')
    const [OTPAuth, { renderSVG }] = await loadSetupLibraries()
    const secret = new OTPAuth.Secret({ size: 20 }).base32
    const uri = new OTPAuth.TOTP({ issuer: ISSUER, label: user.email, secret: OTPAuth.Secret.fromBase32(secret) }).toString()
    const cipher = await this.cipher(user.id)
    const encryptedSecret = cipher.seal('account-totp', user.id, secret)
    await this.deps.accounts.updateUser(user, (u) => {
      u.twoFactorPending = { encryptedSecret, createdAt: new Date(this.deps.now()).toISOString() }
    })
    return { secret, uri, qr: renderSVG(uri, { border: 2 }) }
  }

  /** Turns two-factor sign-in on with a code from the pending secret; answers the recovery codes (shown once). */
  async enable(user: UserRecord, code: string, client: string): Promise<string[]> {
    if (user.twoFactor) throw new AppError(409, 'TWO_FACTOR_ALREADY_ENABLED', 'Two-factor sign-in is on already')
    const pending = user.twoFactorPending
    if (!pending) throw new AppError(409, 'TWO_FACTOR_SETUP_REQUIRED', 'Start with POST /api/account/2fa/setup')
    const cipher = await this.cipher(user.id)
    let step = -1
    // The code that turns it on proves the app works; it is not a sign-in, so it is not used up.
    await this.deps.accounts.throttled(
      `2fa:${user.id}`,
      client,
      () => {
        const secret = cipher.open('account-totp', user.id, pending.encryptedSecret)
        step = secret ? this.matchingStep(secret, code, []) : -1
        return step >= 0
      },
      invalidCode,
    )
    const codes = newRecoveryCodes()
    await this.deps.accounts.updateUser(user, (u) => {
      if (u.twoFactor || u.twoFactorPending !== pending) throw new AppError(409, 'TWO_FACTOR_SETUP_REQUIRED', 'The setup changed meanwhile; start it again')
      u.twoFactor = {
        encryptedSecret: pending.encryptedSecret,
        enabledAt: new Date(this.deps.now()).toISOString(),
        recoveryCodeHashes: codes.map(hashRecoveryCode),
        usedSteps: [],
      }
      u.twoFactorPending = null
    })
    return codes
  }

  async disable(user: UserRecord): Promise<void> {
    await this.deps.accounts.updateUser(user, (u) => {
      u.twoFactor = null
      u.twoFactorPending = null
    })
  }

  async regenerateRecoveryCodes(user: UserRecord): Promise<string[]> {
    const codes = newRecoveryCodes()
    await this.deps.accounts.updateUser(user, (u) => {
      if (!u.twoFactor) throw notEnabled()
      u.twoFactor = { ...u.twoFactor, recoveryCodeHashes: codes.map(hashRecoveryCode) }
    })
    return codes
  }

  /**
   * Checks a second factor for a user with 2FA on, throttled like passwords (counted before the
   * check). A code is good once (a step whose code was accepted is not accepted again); a recovery
   * code is removed. The record is replaced in memory here and written by the caller's next write
   * (the new session), or by `persist`.
   */
  async verify(user: UserRecord, proof: SecondFactorProof, client: string): Promise<void> {
    if (!user.twoFactor) throw notEnabled()
    const hasCode = typeof proof.code === 'string' && proof.code !== ''
    const hasRecovery = typeof proof.recoveryCode === 'string' && proof.recoveryCode !== ''
    if (hasCode === hasRecovery) throw new AppError(400, 'VALIDATION_ERROR', 'code: send either code or recoveryCode')
    // 20 wrong codes within a day lock the account's second step for 15 minutes (and
    // every further wrong one while 20 are within the day locks it again). Counted before the
    // check: the attempt that reaches the limit locks at once, so parallel guesses wait.
    const wait = await this.lockedFor(user.id)
    if (wait > 0) throw secondStepLocked(wait)
    const counted = await this.wrongCodes.add(user.id)
    const atLimit = counted.count >= LOCK_AFTER_WRONG_CODES
    const lockedUntil = this.deps.now() + SECOND_STEP_LOCK_MS
    // At the limit, the attempt that sets the lock is checked and every other waits: of parallel
    // ones (on any instance) only one creates it.
    if (atLimit && !(await this.locks.create(user.id, lockedUntil, lockedUntil))) {
      await this.wrongCodes.remove([user.id], counted.at)
      throw secondStepLocked(Math.max(1, await this.lockedFor(user.id)))
    }
    const takeBack = async () => {
      await this.wrongCodes.remove([user.id], counted.at)
      if (!atLimit) return
      const lock = await this.locks.get<number>(user.id)
      if (lock?.value === lockedUntil) await this.locks.remove(user.id, lock.version)
    }
    try {
      await this.check(user, proof, hasCode, client)
    } catch (error) {
      if (!(error instanceof AppError && error.code === 'INVALID_TWO_FACTOR_CODE')) {
        await takeBack()
        throw error
      }
      if (atLimit) {
        const lock: SecondStepLock = { userId: user.id, client, wrongCodes: LOCK_AFTER_WRONG_CODES, lockedUntil }
        await Promise.allSettled(this.lockListeners.map(async (listener) => listener(lock)))
      }
      throw error
    }
    await takeBack()
  }

  private async check(user: UserRecord, proof: SecondFactorProof, hasCode: boolean, client: string): Promise<void> {
    const cipher = hasCode ? await this.cipher(user.id) : null
    await this.deps.accounts.throttled(
      `2fa:${user.id}`,
      client,
      async () => {
        // Read again after the await, from the current record (a use replaces it): another
        // request may have used a code meanwhile.
        const found = this.deps.accounts.userById(user.id)
        if (!found?.twoFactor) return false
        if (hasCode) {
          const secret = cipher!.open('account-totp', user.id, found.twoFactor.encryptedSecret)
          const step = secret ? this.matchingStep(secret, proof.code!, found.twoFactor.usedSteps ?? []) : -1
          if (step < 0) return false
          // Taken once, on every instance: the step stays claimed until it can no longer match.
          const unusable = (step + DRIFT_STEPS + 1) * TOTP_PERIOD_SECONDS * 1000
          if (!(await this.usedSteps.create(`${user.id}:${step}`, true, unusable))) return false
          const current = this.deps.accounts.userById(user.id)
          const twoFactor = current?.twoFactor
          if (!current || !twoFactor) return false
          const used = twoFactor.usedSteps ?? []
          // Steps older than the drift window can no longer match: only recent ones are kept.
          const oldest = stepAt(this.deps.now()) - DRIFT_STEPS
          this.deps.accounts.changeUser(current, { twoFactor: { ...twoFactor, usedSteps: [...used.filter((s) => s >= oldest && s !== step), step] } })
          return true
        }
        const hash = hashRecoveryCode(proof.recoveryCode!)
        if (!found.twoFactor.recoveryCodeHashes.some((stored) => constantTimeEqual(stored, hash))) return false
        // Used once on every instance, like a step (the record loses it with the write that follows).
        if (!(await this.usedSteps.create(`${user.id}:recovery:${hash}`, true, this.deps.now() + RECOVERY_CLAIM_MS))) return false
        const current = this.deps.accounts.userById(user.id)
        const twoFactor = current?.twoFactor
        if (!current || !twoFactor) return false
        const index = twoFactor.recoveryCodeHashes.findIndex((stored) => constantTimeEqual(stored, hash))
        if (index < 0) return false
        this.deps.accounts.changeUser(current, { twoFactor: { ...twoFactor, recoveryCodeHashes: twoFactor.recoveryCodeHashes.filter((_, i) => i !== index) } })
        return true
      },
      invalidCode,
    )
  }

  /** Writes what `verify` changed (a used step, a used recovery code) when no other write follows. */
  async persist(user: UserRecord): Promise<void> {
    await this.deps.accounts.updateUser(user, () => {})
  }

  /**
   * The step (within ±1 of now) whose code this is, when no code of that step was accepted yet;
   * else -1. Every candidate step is compared, in constant time, whatever matches first.
   */
  private matchingStep(secret: string, code: string, usedSteps: readonly number[]): number {
    const presented = code.replace(/\s+/g, '')
    if (!/^\d{6}$/.test(presented)) return -1
    const now = this.deps.now()
    const current = stepAt(now)
    let found = -1
    for (let delta = -DRIFT_STEPS; delta <= DRIFT_STEPS; delta++) {
      const step = current + delta
      const expected = totpCode(secret, step * TOTP_PERIOD_SECONDS * 1000).code
      if (constantTimeEqual(expected, presented) && !usedSteps.includes(step) && found < 0) found = step
    }
    return found
  }
}

const notEnabled = () => new AppError(409, 'TWO_FACTOR_NOT_ENABLED', 'Two-factor sign-in is not on for this account')
