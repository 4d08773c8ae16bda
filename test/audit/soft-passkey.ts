// A software passkey (ES256, "none" attestation) for tests over HTTP without a browser: makes the
// registration and sign-in responses a browser's authenticator would (WebAuthn level 2).
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto'

/** The few CBOR types WebAuthn needs: integers, byte and text strings, maps. */
function cbor(value: unknown): Buffer {
  const head = (major: number, n: number): Buffer => {
    if (n < 24) return Buffer.from([(major << 5) | n])
    if (n < 256) return Buffer.from([(major << 5) | 24, n])
    if (n < 65536) return Buffer.from([(major << 5) | 25, n >> 8, n & 0xff])
    throw new Error('too long')
  }
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value)
  if (typeof value === 'string') return Buffer.concat([head(3, Buffer.byteLength(value)), Buffer.from(value)])
  if (value instanceof Uint8Array) return Buffer.concat([head(2, value.length), Buffer.from(value)])
  if (value instanceof Map) return Buffer.concat([head(5, value.size), ...[...value].flatMap(([k, v]) => [cbor(k), cbor(v)])])
  throw new Error('unsupported')
}

const sha256 = (data: Uint8Array | string) => createHash('sha256').update(data).digest()
const b64url = (data: Uint8Array) => Buffer.from(data).toString('base64url')

export class SoftPasskey {
  readonly credentialId = randomBytes(16)
  private readonly privateKey: KeyObject
  private readonly publicKey: KeyObject
  private counter = 0

  constructor(private readonly origin: string) {
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    this.privateKey = pair.privateKey
    this.publicKey = pair.publicKey
  }

  /** The response to creation options (POST /api/account/passkeys/options). */
  register(options: { challenge: string; rp: { id: string } }) {
    const jwk = this.publicKey.export({ format: 'jwk' })
    const coseKey = cbor(
      new Map<number, unknown>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x!, 'base64url')],
        [-3, Buffer.from(jwk.y!, 'base64url')],
      ]),
    )
    const id = this.credentialId
    const authData = Buffer.concat([
      sha256(options.rp.id),
      Buffer.from([0x45]),
      Buffer.alloc(4),
      Buffer.alloc(16),
      Buffer.from([id.length >> 8, id.length & 0xff]),
      id,
      coseKey,
    ])
    const clientData = JSON.stringify({ type: 'webauthn.create', challenge: options.challenge, origin: this.origin, crossOrigin: false })
    return {
      id: b64url(id),
      rawId: b64url(id),
      type: 'public-key',
      clientExtensionResults: {},
      response: {
        clientDataJSON: b64url(Buffer.from(clientData)),
        attestationObject: b64url(
          cbor(
            new Map<string, unknown>([
              ['fmt', 'none'],
              ['attStmt', new Map()],
              ['authData', authData],
            ]),
          ),
        ),
        transports: ['internal'],
      },
    }
  }

  /** The response to request options (POST /api/auth/passkey/options). */
  signIn(options: { challenge: string; rpId: string }) {
    this.counter++
    const authData = Buffer.concat([sha256(options.rpId), Buffer.from([0x05]), Buffer.from([0, 0, this.counter >> 8, this.counter & 0xff])])
    const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge: options.challenge, origin: this.origin, crossOrigin: false }))
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientData)]), this.privateKey)
    return {
      id: b64url(this.credentialId),
      rawId: b64url(this.credentialId),
      type: 'public-key',
      clientExtensionResults: {},
      response: { clientDataJSON: b64url(clientData), authenticatorData: b64url(authData), signature: b64url(signature) },
    }
  }
}
