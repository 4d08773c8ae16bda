// TOTP secrets as users paste them: base32 (forgiving of case, spaces and `=` padding) or an
// `otpauth://totp/…` URI; kept in one normalized form: upper-case base32, no padding. A URI's
// `algorithm`, `digits` and `period` are kept with it; a bare secret is SHA-1, 6
// digits, 30 seconds. Loaded with the first 2FA create or update (otpauth is large: docs/performance.md).
import * as OTPAuth from 'otpauth'
import {
  DEFAULT_TOTP_PARAMETERS,
  normalizedBase32,
  STEAM_DIGITS,
  STEAM_PERIOD_SECONDS,
  TOTP_ALGORITHMS,
  TOTP_LIMITS,
  type OtpType,
  type TotpAlgorithm,
  type TotpParameters,
} from './totp-code'

/** Generous room for a long otpauth URI; anything longer is not a TOTP secret. */
export const MAX_SECRET_INPUT_LENGTH = 4096

export interface ParsedTotpSecret extends TotpParameters {
  /** Normalized base32. */
  secret: string
}

const inRange = (value: number, { min, max }: { min: number; max: number }) => Number.isInteger(value) && value >= min && value <= max

/**
 * The normalized secret and code parameters of `input`, or null when it is neither base32 nor a
 * TOTP URI, or when the URI asks for an algorithm, digit count or period codes are not made with
 * here (SHA1/SHA256/SHA512, 6 to 8 digits, 15 to 120 seconds).
 */
export function parseTotpSecret(input: string): ParsedTotpSecret | null {
  if (input.length > MAX_SECRET_INPUT_LENGTH) return null
  const trimmed = input.trim()
  if (/^otpauth:\/\//i.test(trimmed)) {
    let parsed: OTPAuth.HOTP | OTPAuth.TOTP
    try {
      parsed = OTPAuth.URI.parse(trimmed)
    } catch {
      return null
    }
    if (!(parsed instanceof OTPAuth.TOTP)) return null
    const secret = normalizedBase32(parsed.secret.base32)
    // otpauth canonicalizes the name ("sha-256" -> "SHA256").
    const algorithm = parsed.algorithm.toUpperCase() as TotpAlgorithm
    if (secret === null || !TOTP_ALGORITHMS.includes(algorithm)) return null
    if (!inRange(parsed.digits, TOTP_LIMITS.digits) || !inRange(parsed.period, TOTP_LIMITS.period)) return null
    return { secret, algorithm, digits: parsed.digits, period: parsed.period }
  }
  const secret = normalizedBase32(trimmed)
  return secret === null ? null : { secret, ...DEFAULT_TOTP_PARAMETERS }
}

/** The normalized base32 secret of `input`, or null when it is neither base32 nor a usable TOTP URI. */
export function normalizeTotpSecret(input: string): string | null {
  return parseTotpSecret(input)?.secret ?? null
}

export interface ParsedOtpSecret extends ParsedTotpSecret {
  type: OtpType
  /** HOTP: the counter of the next code; 0 for the others. */
  counter: number
}

/** The largest HOTP counter kept: beyond it a JavaScript number loses whole values. */
export const MAX_HOTP_COUNTER = Number.MAX_SAFE_INTEGER - 1

/**
 * Like parseTotpSecret, and also `otpauth://hotp/…` (its `counter` kept, default 0) and Steam
 * Guard: `otpauth://steam/…`, or a totp URI with `encoder=steam` (Steam's parameters are fixed:
 * SHA-1, 5 characters, 30 s).
 */
export function parseOtpSecret(input: string): ParsedOtpSecret | null {
  if (input.length > MAX_SECRET_INPUT_LENGTH) return null
  const trimmed = input.trim()
  const steamLink = /^otpauth:\/\/steam\//i.test(trimmed)
  if (steamLink || (/^otpauth:\/\/totp\//i.test(trimmed) && /[?&]encoder=steam(&|$)/i.test(trimmed))) {
    let parsed: OTPAuth.HOTP | OTPAuth.TOTP
    try {
      parsed = OTPAuth.URI.parse(steamLink ? `otpauth://totp/${trimmed.slice('otpauth://steam/'.length)}` : trimmed)
    } catch {
      return null
    }
    const secret = normalizedBase32(parsed.secret.base32)
    return secret === null ? null : { type: 'steam', secret, algorithm: 'SHA1', digits: STEAM_DIGITS, period: STEAM_PERIOD_SECONDS, counter: 0 }
  }
  if (/^otpauth:\/\/hotp\//i.test(trimmed)) {
    let parsed: OTPAuth.HOTP | OTPAuth.TOTP
    try {
      // The key URI format asks for `counter`; some apps leave it out for a counter at 0.
      parsed = OTPAuth.URI.parse(/[?&]counter=/i.test(trimmed) ? trimmed : `${trimmed}${trimmed.includes('?') ? '&' : '?'}counter=0`)
    } catch {
      return null
    }
    if (!(parsed instanceof OTPAuth.HOTP)) return null
    const secret = normalizedBase32(parsed.secret.base32)
    const algorithm = parsed.algorithm.toUpperCase() as TotpAlgorithm
    if (secret === null || !TOTP_ALGORITHMS.includes(algorithm) || !inRange(parsed.digits, TOTP_LIMITS.digits)) return null
    if (!Number.isSafeInteger(parsed.counter) || parsed.counter < 0 || parsed.counter > MAX_HOTP_COUNTER) return null
    return { type: 'hotp', secret, algorithm, digits: parsed.digits, period: DEFAULT_TOTP_PARAMETERS.period, counter: parsed.counter }
  }
  const totp = parseTotpSecret(trimmed)
  return totp === null ? null : { type: 'totp', ...totp, counter: 0 }
}
