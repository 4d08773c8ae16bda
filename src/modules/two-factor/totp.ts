// TOTP secrets as users paste them: base32 (forgiving of case, spaces and `=` padding) or an
// `otpauth://totp/…` URI; kept in one normalized form: upper-case base32, no padding. Loaded
// with the first 2FA create or update (otpauth is about 2.5 MB resident).
import * as OTPAuth from 'otpauth'
import { normalizedBase32 } from './totp-code'

/** Generous room for a long otpauth URI; anything longer is not a TOTP secret. */
export const MAX_SECRET_INPUT_LENGTH = 4096

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
    return normalizedBase32(parsed.secret.base32)
  }
  return normalizedBase32(trimmed)
}

