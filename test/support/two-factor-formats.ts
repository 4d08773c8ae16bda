// Issue 35's test files in each authenticator app's format, made from known secrets by code
// written from each format's own documentation (independent of the server's readers and writers),
// and oathtool's codes for them.
import { createCipheriv, randomBytes, scryptSync } from 'node:crypto'
import { Secret } from 'otpauth'

export type Kind = 'totp' | 'hotp' | 'steam'
export interface Known {
  issuer: string
  account: string
  secret: string
  type: Kind
  algorithm: 'SHA1' | 'SHA256' | 'SHA512'
  digits: number
  period: number
  counter: number
}

// Published Steam Guard vector (KeePassXC's tests): this secret shows FR8RV at 1511200518.
export const STEAM_SECRET = '63BEDWCQZKTQWPESARIERL5DTTQFCJTK'
export const STEAM_VECTORS: [number, string][] = [
  [1511200518, 'FR8RV'],
  [1511200714, '9P3VP'],
]

export const TOTP_A: Known = {
  issuer: 'GitHub',
  account: 'alice@example.test',
  secret: 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ',
  type: 'totp',
  algorithm: 'SHA1',
  digits: 6,
  period: 30,
  counter: 0,
}
export const TOTP_B: Known = {
  issuer: 'Bank',
  account: 'alice',
  secret: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP',
  type: 'totp',
  algorithm: 'SHA256',
  digits: 8,
  period: 30,
  counter: 0,
}
export const TOTP_C: Known = {
  issuer: 'Cloud',
  account: 'ops',
  secret: 'KRSXG5CTMVRXEZLUKRSXG5CTMVRXEZLU',
  type: 'totp',
  algorithm: 'SHA512',
  digits: 6,
  period: 30,
  counter: 0,
}
export const TOTP_SLOW: Known = {
  issuer: 'Slow',
  account: 'alice',
  secret: 'MFRGGZDFMZTWQ2LKNNWG23TPOBYXE43U',
  type: 'totp',
  algorithm: 'SHA1',
  digits: 7,
  period: 60,
  counter: 0,
}
export const HOTP: Known = {
  issuer: 'VPN',
  account: 'alice',
  secret: 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ',
  type: 'hotp',
  algorithm: 'SHA1',
  digits: 6,
  period: 30,
  counter: 5,
}
export const STEAM: Known = { issuer: 'Steam', account: 'gamer', secret: STEAM_SECRET, type: 'steam', algorithm: 'SHA1', digits: 5, period: 30, counter: 0 }

/** oathtool's code for a TOTP token at `nowSeconds`, or for a HOTP token at `counter`. */
export function oathtool(token: Known, nowSeconds: number, counter = token.counter): string {
  const args =
    token.type === 'hotp'
      ? ['--hotp', `--counter=${counter}`, `--digits=${token.digits}`]
      : [`--totp=${token.algorithm.toLowerCase()}`, `--digits=${token.digits}`, `--time-step-size=${token.period}s`, `--now=@${nowSeconds}`]
  const run = Bun.spawnSync(['oathtool', ...args, '-b', token.secret])
  if (run.exitCode !== 0) throw new Error(`oathtool failed: ${run.stderr.toString()}`)
  return run.stdout.toString().trim()
}

// ---- Fixtures, written from each format's documentation ----

/** Protocol Buffers by hand (varints and length-delimited fields), not the server's library. */
function varint(value: number | bigint): number[] {
  let v = BigInt(value)
  const out: number[] = []
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80)
    v >>= 7n
  }
  out.push(Number(v))
  return out
}
const pbVarint = (field: number, value: number | bigint) => [...varint(field << 3), ...varint(value)]
const pbBytes = (field: number, bytes: Uint8Array | number[]) => [...varint((field << 3) | 2), ...varint(bytes.length), ...bytes]
const utf8 = (text: string) => [...new TextEncoder().encode(text)]

/** A Google Authenticator export link for one batch (its MigrationPayload). */
export function googleLink(tokens: Known[], batchIndex: number, batchSize: number, batchId = 424242): string {
  const payload: number[] = []
  for (const token of tokens) {
    const otp = [
      ...pbBytes(1, Secret.fromBase32(token.secret).bytes),
      ...pbBytes(2, utf8(`${token.issuer}:${token.account}`)),
      ...pbBytes(3, utf8(token.issuer)),
      ...pbVarint(4, { SHA1: 1, SHA256: 2, SHA512: 3 }[token.algorithm]),
      ...pbVarint(5, token.digits === 8 ? 2 : 1),
      ...pbVarint(6, token.type === 'hotp' ? 1 : 2),
      ...(token.type === 'hotp' ? pbVarint(7, token.counter) : []),
    ]
    payload.push(...pbBytes(1, otp))
  }
  payload.push(...pbVarint(2, 1), ...pbVarint(3, batchSize), ...pbVarint(4, batchIndex), ...pbVarint(5, batchId))
  return `otpauth-migration://offline?data=${encodeURIComponent(Buffer.from(payload).toString('base64'))}`
}

export function aegisContent(tokens: Known[]) {
  return {
    version: 2,
    entries: tokens.map((t) => ({
      type: t.type,
      uuid: crypto.randomUUID(),
      name: t.account,
      issuer: t.issuer,
      icon: null,
      info: { secret: t.secret, algo: t.algorithm, digits: t.digits, period: t.period, ...(t.type === 'hotp' ? { counter: t.counter } : {}) },
    })),
  }
}

export const aegisPlain = (tokens: Known[]) => JSON.stringify({ version: 1, header: { slots: null, params: null }, db: aegisContent(tokens) })

/** Aegis' encrypted vault: a random master key wrapped by scrypt(password) in a password slot; the db sealed with AES-256-GCM. */
export function aegisEncrypted(tokens: Known[], password: string, scrypt = { n: 32768, r: 8, p: 1 }): string {
  const seal = (key: Buffer, plain: Buffer) => {
    const nonce = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', key, nonce)
    const sealed = Buffer.concat([cipher.update(plain), cipher.final()])
    return { sealed, params: { nonce: nonce.toString('hex'), tag: cipher.getAuthTag().toString('hex') } }
  }
  const master = randomBytes(32)
  const salt = randomBytes(32)
  const derived = scryptSync(password, salt, 32, { N: scrypt.n, r: scrypt.r, p: scrypt.p, maxmem: 64 * 1024 * 1024 })
  const slotKey = seal(derived, master)
  const db = seal(master, Buffer.from(JSON.stringify(aegisContent(tokens))))
  return JSON.stringify({
    version: 1,
    header: {
      slots: [
        {
          type: 1,
          uuid: crypto.randomUUID(),
          key: slotKey.sealed.toString('hex'),
          key_params: slotKey.params,
          n: scrypt.n,
          r: scrypt.r,
          p: scrypt.p,
          salt: salt.toString('hex'),
          repaired: true,
        },
      ],
      params: db.params,
    },
    db: db.sealed.toString('base64'),
  })
}

export function twoFas(tokens: Known[]): string {
  return JSON.stringify({
    services: tokens.map((t, i) => ({
      name: t.issuer,
      secret: t.secret,
      updatedAt: 1700000000000 + i,
      otp: {
        label: `${t.issuer}:${t.account}`,
        account: t.account,
        issuer: t.issuer,
        digits: t.digits,
        period: t.period,
        algorithm: t.algorithm,
        counter: t.counter,
        tokenType: t.type.toUpperCase(),
        source: 'Manual',
      },
      order: { position: i },
    })),
    groups: [],
    updatedAt: 1700000000000,
    schemaVersion: 4,
    appVersionCode: 5000000,
    appVersionName: '5.0.0',
    appOrigin: 'android',
  })
}

export function andOtp(tokens: Known[]): string {
  return JSON.stringify(
    tokens.map((t) => ({
      secret: t.secret,
      issuer: t.issuer,
      label: t.account,
      digits: t.digits,
      type: t.type.toUpperCase(),
      algorithm: t.algorithm,
      thumbnail: 'Default',
      last_used: 1700000000000,
      used_frequency: 0,
      period: t.period,
      ...(t.type === 'hotp' ? { counter: t.counter } : {}),
      tags: [],
    })),
  )
}

/** otpauth:// links, one per line: also what Ente Auth's plain export writes. */
export function otpauthList(tokens: Known[]): string {
  return tokens
    .map((t) => {
      const label = `${encodeURIComponent(t.issuer)}:${encodeURIComponent(t.account)}`
      if (t.type === 'steam') return `otpauth://steam/${label}?secret=${t.secret}&issuer=${encodeURIComponent(t.issuer)}`
      const extra = t.type === 'hotp' ? `&counter=${t.counter}` : `&period=${t.period}`
      return `otpauth://${t.type}/${label}?secret=${t.secret}&issuer=${encodeURIComponent(t.issuer)}&algorithm=${t.algorithm}&digits=${t.digits}${extra}`
    })
    .join('\n')
}
