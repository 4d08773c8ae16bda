// TOTP secrets and codes (RFC 6238: SHA-1, 6 digits, 30-second period), as authenticator apps
// show them. Secrets arrive as base32 (forgiving of case, spaces and `=` padding) or as an
// `otpauth://totp/…` URI; they are kept in one normalized form: upper-case base32, no padding.
import * as OTPAuth from 'otpauth'

export const TOTP_DIGITS = 6
export const TOTP_PERIOD_SECONDS = 30
/** RFC 4226 asks for at least 128 bits; 80 bits (10 bytes) is what services hand out in practice. */
export const MIN_SECRET_BYTES = 10
/** Generous room for a long otpauth URI; anything longer is not a TOTP secret. */
export const MAX_SECRET_INPUT_LENGTH = 4096

const BASE32 = /^[A-Z2-7]+$/

function checkedBase32(candidate: string): string | null {
  const normalized = candidate.replace(/\s+/g, '').replace(/=+$/, '').toUpperCase()
  if (!BASE32.test(normalized)) return null
  try {
    return OTPAuth.Secret.fromBase32(normalized).bytes.length >= MIN_SECRET_BYTES ? normalized : null
  } catch {
    return null
  }
}

/** The normalized base32 secret of `input`, or null when it is neither base32 nor a TOTP URI. */
export function normalizeTotpSecret(input: string): string | null {
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
    return checkedBase32(parsed.secret.base32)
  }
  return checkedBase32(trimmed)
}

export interface TotpCode {
  code: string
  /** Whole seconds until the code changes: 1 to 30. */
  remainingSeconds: number
}

/** The code shown at `timestampMs` for a normalized base32 secret. */
export function totpCode(base32Secret: string, timestampMs: number): TotpCode {
  const code = OTPAuth.TOTP.generate({
    secret: OTPAuth.Secret.fromBase32(base32Secret),
    algorithm: 'SHA1',
    digits: TOTP_DIGITS,
    period: TOTP_PERIOD_SECONDS,
    timestamp: timestampMs,
  })
  const remainingSeconds = TOTP_PERIOD_SECONDS - (Math.floor(timestampMs / 1000) % TOTP_PERIOD_SECONDS)
  return { code, remainingSeconds }
}
