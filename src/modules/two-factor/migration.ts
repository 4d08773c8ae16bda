// Google Authenticator's export QR codes: `otpauth-migration://offline?data=<base64>`, whose data
// is a protobuf MigrationPayload. Read and written with @bufbuild/protobuf's wire reader and
// writer (no generated code, no eval; bounds-checked: a truncated payload throws). The message,
// as Google Authenticator writes it:
//   MigrationPayload { repeated OtpParameters otp_parameters = 1; int32 version = 2;
//                      int32 batch_size = 3; int32 batch_index = 4; int32 batch_id = 5; }
//   OtpParameters { bytes secret = 1; string name = 2; string issuer = 3; Algorithm algorithm = 4;
//                   DigitCount digits = 5; OtpType type = 6; int64 counter = 7; }
//   Algorithm: 0 unspecified, 1 SHA1, 2 SHA256, 3 SHA512, 4 MD5. DigitCount: 0 unspecified,
//   1 six, 2 eight. OtpType: 0 unspecified, 1 HOTP, 2 TOTP. Codes change every 30 seconds.
import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire'

export interface MigrationOtp {
  secret: Uint8Array
  name: string
  issuer: string
  /** 0 unspecified (SHA1), 1 SHA1, 2 SHA256, 3 SHA512, 4 MD5. */
  algorithm: number
  /** 0 unspecified (6), 1 six, 2 eight. */
  digits: number
  /** 0 unspecified (TOTP), 1 HOTP, 2 TOTP. */
  type: number
  counter: number
}

export interface MigrationBatch {
  otps: MigrationOtp[]
  version: number
  batchSize: number
  batchIndex: number
  batchId: number
}

export const MIGRATION_PREFIX = 'otpauth-migration://offline?'

const utf8 = new TextDecoder('utf-8', { fatal: true })

function decodeOtp(bytes: Uint8Array): MigrationOtp {
  const reader = new BinaryReader(bytes, (b) => utf8.decode(b))
  const otp: MigrationOtp = { secret: new Uint8Array(), name: '', issuer: '', algorithm: 0, digits: 0, type: 0, counter: 0 }
  while (reader.pos < reader.len) {
    const [field, wire] = reader.tag()
    if (field === 1 && wire === WireType.LengthDelimited) otp.secret = reader.bytes()
    else if (field === 2 && wire === WireType.LengthDelimited) otp.name = reader.string()
    else if (field === 3 && wire === WireType.LengthDelimited) otp.issuer = reader.string()
    else if (field === 4 && wire === WireType.Varint) otp.algorithm = reader.int32()
    else if (field === 5 && wire === WireType.Varint) otp.digits = reader.int32()
    else if (field === 6 && wire === WireType.Varint) otp.type = reader.int32()
    else if (field === 7 && wire === WireType.Varint) {
      const counter = BigInt(reader.int64())
      if (counter < 0n || counter > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error('counter out of range')
      otp.counter = Number(counter)
    } else reader.skip(wire, field)
  }
  return otp
}

/** The payload's tokens; throws on anything that is not a whole MigrationPayload. */
export function decodeMigrationPayload(bytes: Uint8Array): MigrationBatch {
  const reader = new BinaryReader(bytes)
  const batch: MigrationBatch = { otps: [], version: 0, batchSize: 0, batchIndex: 0, batchId: 0 }
  while (reader.pos < reader.len) {
    const [field, wire] = reader.tag()
    if (field === 1 && wire === WireType.LengthDelimited) batch.otps.push(decodeOtp(reader.bytes()))
    else if (field === 2 && wire === WireType.Varint) batch.version = reader.int32()
    else if (field === 3 && wire === WireType.Varint) batch.batchSize = reader.int32()
    else if (field === 4 && wire === WireType.Varint) batch.batchIndex = reader.int32()
    else if (field === 5 && wire === WireType.Varint) batch.batchId = reader.int32()
    else reader.skip(wire, field)
  }
  // The reader stops exactly at the end of a whole message; anything else was cut short.
  if (reader.pos !== reader.len) throw new Error('truncated')
  return batch
}

export function encodeMigrationPayload(batch: MigrationBatch): Uint8Array {
  const writer = new BinaryWriter()
  for (const otp of batch.otps) {
    writer.tag(1, WireType.LengthDelimited).fork()
    writer.tag(1, WireType.LengthDelimited).bytes(otp.secret)
    writer.tag(2, WireType.LengthDelimited).string(otp.name)
    writer.tag(3, WireType.LengthDelimited).string(otp.issuer)
    writer.tag(4, WireType.Varint).int32(otp.algorithm)
    writer.tag(5, WireType.Varint).int32(otp.digits)
    writer.tag(6, WireType.Varint).int32(otp.type)
    if (otp.counter !== 0) writer.tag(7, WireType.Varint).int64(otp.counter)
    writer.join()
  }
  writer.tag(2, WireType.Varint).int32(batch.version)
  writer.tag(3, WireType.Varint).int32(batch.batchSize)
  writer.tag(4, WireType.Varint).int32(batch.batchIndex)
  writer.tag(5, WireType.Varint).int32(batch.batchId)
  return writer.finish()
}

/** The link Google Authenticator's QR code holds for one batch. */
export const migrationLink = (batch: MigrationBatch) =>
  `${MIGRATION_PREFIX}data=${encodeURIComponent(Buffer.from(encodeMigrationPayload(batch)).toString('base64'))}`

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/

/** The payload bytes of a migration link, or null when it does not carry base64 `data`. */
export function migrationLinkData(link: string): Uint8Array | null {
  const match = /[?&]data=([^&#]*)/.exec(link)
  if (!match) return null
  let data: string
  try {
    data = decodeURIComponent(match[1])
  } catch {
    return null
  }
  // A '+' left unencoded in a pasted link reads as a space in a query string.
  data = data.replace(/ /g, '+')
  if (data.length === 0 || !BASE64.test(data)) return null
  return new Uint8Array(Buffer.from(data, /[-_]/.test(data) ? 'base64url' : 'base64'))
}
