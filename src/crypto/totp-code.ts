// TOTP codes (RFC 6238; SHA-1, 6 digits, 30-second period unless the token's otpauth URI said
// otherwise), as authenticator apps show them, from a normalized base32 secret. No dependencies:
// this is every 2FA reveal's path.
export const TOTP_DIGITS = 6
export const TOTP_PERIOD_SECONDS = 30

export const TOTP_ALGORITHMS = ['SHA1', 'SHA256', 'SHA512'] as const
export type TotpAlgorithm = (typeof TOTP_ALGORITHMS)[number]
/** What an otpauth URI may ask for; anything else is INVALID_TOTP_SECRET. */
export const TOTP_LIMITS = { digits: { min: 6, max: 8 }, period: { min: 15, max: 120 } } as const

export interface TotpParameters {
  algorithm: TotpAlgorithm
  digits: number
  /** Seconds. */
  period: number
}

/** What a token makes: time-based codes, counter-based codes, or Steam Guard's. */
export const OTP_TYPES = ['totp', 'hotp', 'steam'] as const
export type OtpType = (typeof OTP_TYPES)[number]

/** A bare base32 secret, and every token stored before tokens kept their parameters. */
export const DEFAULT_TOTP_PARAMETERS: Readonly<TotpParameters> = Object.freeze({ algorithm: 'SHA1', digits: TOTP_DIGITS, period: TOTP_PERIOD_SECONDS })

const HASHES: Record<TotpAlgorithm, 'sha1' | 'sha256' | 'sha512'> = { SHA1: 'sha1', SHA256: 'sha256', SHA512: 'sha512' }
/** RFC 4226 asks for at least 128 bits; 80 bits (10 bytes) is what services hand out in practice. */
export const MIN_SECRET_BYTES = 10
const BASE32 = /^[A-Z2-7]+$/

/** `candidate` as normalized base32 (upper case, no spaces or padding), or null when it is not one of at least MIN_SECRET_BYTES. */
export function normalizedBase32(candidate: string): string | null {
  const normalized = candidate.replace(/\s+/g, '').replace(/=+$/, '').toUpperCase()
  if (!BASE32.test(normalized)) return null
  // Each base32 character carries 5 bits; a trailing partial byte is dropped.
  return Math.floor((normalized.length * 5) / 8) >= MIN_SECRET_BYTES ? normalized : null
}

export interface TotpCode {
  code: string
  /** Whole seconds until the code changes: 1 to the period. */
  remainingSeconds: number
}

const BASE32_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'

/**
 * Bytes of a normalized base32 secret (checked against [A-Z2-7] already); a partial last byte is
 * dropped. Not @oslojs/encoding's decoder: that one was a fifth of a 2FA reveal's time.
 */
function base32Bytes(base32: string): Uint8Array {
  const bytes = new Uint8Array(Math.floor((base32.length * 5) / 8))
  let buffer = 0
  let bits = 0
  let index = 0
  for (let i = 0; i < base32.length; i++) {
    buffer = ((buffer << 5) | BASE32_ALPHABET.indexOf(base32[i])) & 0xfff
    bits += 5
    if (bits >= 8) {
      bits -= 8
      bytes[index++] = (buffer >>> bits) & 0xff
    }
  }
  return bytes
}

/** RFC 4226's HMAC and dynamic truncation: the 31-bit number a code is made from, for one counter. */
function truncatedHmac(base32Secret: string, counter: number, algorithm: TotpAlgorithm): number {
  const message = new DataView(new ArrayBuffer(8))
  message.setUint32(0, Math.floor(counter / 2 ** 32))
  message.setUint32(4, counter >>> 0)
  const mac = new Bun.CryptoHasher(HASHES[algorithm], base32Bytes(base32Secret)).update(message.buffer).digest()
  const offset = mac[mac.length - 1] & 0x0f
  return mac.readUInt32BE(offset) & 0x7fffffff
}

/**
 * The code shown at `timestampMs` for a normalized base32 secret (RFC 6238 with RFC 4226's
 * dynamic truncation). Bun's native HMAC rather than otpauth's JavaScript one: this runs on
 * every 2FA reveal, and the tests hold it to otpauth and to the RFC's vectors.
 */
export function totpCode(base32Secret: string, timestampMs: number, parameters: TotpParameters = DEFAULT_TOTP_PARAMETERS): TotpCode {
  const { digits, period } = parameters
  const step = Math.floor(timestampMs / 1000 / period)
  const code = String(truncatedHmac(base32Secret, step, parameters.algorithm) % 10 ** digits).padStart(digits, '0')
  const remainingSeconds = period - (Math.floor(timestampMs / 1000) % period)
  return { code, remainingSeconds }
}

/** The HOTP code (RFC 4226) of `counter`. */
export function hotpCode(base32Secret: string, counter: number, parameters: Pick<TotpParameters, 'algorithm' | 'digits'> = DEFAULT_TOTP_PARAMETERS): string {
  return String(truncatedHmac(base32Secret, counter, parameters.algorithm) % 10 ** parameters.digits).padStart(parameters.digits, '0')
}

/** Steam Guard's alphabet: digits and consonants that cannot be mistaken for one another. */
export const STEAM_ALPHABET = '23456789BCDFGHJKMNPQRTVWXY'
export const STEAM_DIGITS = 5
export const STEAM_PERIOD_SECONDS = 30

/**
 * A Steam Guard code: TOTP (SHA-1, 30 s) whose number is written as 5 characters of Steam's
 * alphabet, least significant first, instead of decimal digits.
 */
export function steamCode(base32Secret: string, timestampMs: number): TotpCode {
  let value = truncatedHmac(base32Secret, Math.floor(timestampMs / 1000 / STEAM_PERIOD_SECONDS), 'SHA1')
  let code = ''
  for (let i = 0; i < STEAM_DIGITS; i++) {
    code += STEAM_ALPHABET[value % STEAM_ALPHABET.length]
    value = Math.floor(value / STEAM_ALPHABET.length)
  }
  return { code, remainingSeconds: STEAM_PERIOD_SECONDS - (Math.floor(timestampMs / 1000) % STEAM_PERIOD_SECONDS) }
}
