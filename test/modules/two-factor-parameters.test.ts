// Issue 23: an otpauth URI's algorithm, digits and period are honoured, stored and answered, and
// codes match oathtool's for them; a bare base32 secret stays SHA1/6/30.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { signUp, type Client } from '../support/client'
import { startTestServer, type TestServer } from '../support/server'
import { setStoredFields } from '../support/stored'

// A fixed clock: 2026-01-01T00:00:10Z, 10 s into a 30 s and a 60 s step.
const NOW_SECONDS = 1_767_225_610
let server: TestServer
let alice: Client & { user: any }

beforeAll(async () => {
  server = await startTestServer({ now: () => NOW_SECONDS * 1000 })
  alice = await signUp(server.url)
})
afterAll(() => server.stop())

const SECRET = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ'

/** The code oathtool computes for this secret at the fixed time. */
function oathtool(algorithm: string, digits: number, period: number): string {
  const run = Bun.spawnSync([
    'oathtool',
    `--totp=${algorithm.toLowerCase()}`,
    `--digits=${digits}`,
    `--time-step-size=${period}s`,
    `--now=@${NOW_SECONDS}`,
    '-b',
    SECRET,
  ])
  if (run.exitCode !== 0) throw new Error(`oathtool failed: ${run.stderr.toString()}`)
  return run.stdout.toString().trim()
}

async function addToken(secret: string) {
  return alice.post('/api/2fa', { service: 'Example', accountName: 'alice', secret })
}

describe('2FA parameters from otpauth links', () => {
  const cases: [string, number, number][] = [
    ['SHA256', 8, 30],
    ['SHA512', 7, 60],
    ['SHA1', 8, 15],
    ['SHA256', 6, 120],
    ['SHA1', 6, 30],
  ]
  for (const [algorithm, digits, period] of cases) {
    test(`${algorithm}, ${digits} digits, ${period} s: stored, answered, and the code is oathtool's`, async () => {
      const uri = `otpauth://totp/Example:alice?secret=${SECRET}&issuer=Example&algorithm=${algorithm}&digits=${digits}&period=${period}`
      const created = await addToken(uri)
      expect(created.status).toBe(201)
      expect(created.body).toMatchObject({ algorithm, digits, period })
      expect((await alice.get(`/api/2fa/${created.body.id}`)).body).toMatchObject({ algorithm, digits, period })
      const listed = (await alice.get('/api/2fa')).body.find((t: any) => t.id === created.body.id)
      expect(listed).toMatchObject({ algorithm, digits, period })

      const revealed = await alice.post(`/api/2fa/${created.body.id}/reveal`)
      expect(revealed.status).toBe(200)
      expect(revealed.body.code).toBe(oathtool(algorithm, digits, period))
      expect(revealed.body.code).toHaveLength(digits)
      expect(revealed.body.remainingSeconds).toBe(period - (NOW_SECONDS % period))
    })
  }

  test('a lower-case algorithm name is accepted (sha256)', async () => {
    const created = await addToken(`otpauth://totp/x?secret=${SECRET}&algorithm=sha256&digits=8`)
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ algorithm: 'SHA256', digits: 8, period: 30 })
    expect((await alice.post(`/api/2fa/${created.body.id}/reveal`)).body.code).toBe(oathtool('SHA256', 8, 30))
  })

  test('a bare base32 secret is SHA1, 6 digits, 30 seconds', async () => {
    const created = await addToken(SECRET)
    expect(created.body).toMatchObject({ algorithm: 'SHA1', digits: 6, period: 30 })
    const revealed = await alice.post(`/api/2fa/${created.body.id}/reveal`)
    expect(revealed.body.code).toBe(oathtool('SHA1', 6, 30))
    expect(revealed.body.remainingSeconds).toBe(20)
  })

  test('out-of-range or unknown parameters: 400 INVALID_TOTP_SECRET, nothing stored', async () => {
    const before = (await alice.get('/api/2fa')).body.length
    for (const query of [
      'digits=5',
      'digits=9',
      'digits=10',
      'period=14',
      'period=121',
      'period=0',
      'algorithm=MD5',
      'algorithm=SHA384',
      'algorithm=SHA3-256',
      'digits=x',
      'period=-30',
    ]) {
      const answer = await addToken(`otpauth://totp/x?secret=${SECRET}&${query}`)
      expect({ query, status: answer.status, body: answer.body }).toMatchObject({ query, status: 400, body: { code: 'INVALID_TOTP_SECRET' } })
    }
    expect((await alice.get('/api/2fa')).body.length).toBe(before)
  })

  test('updating the secret takes its parameters; other updates keep them', async () => {
    const created = await addToken(`otpauth://totp/x?secret=${SECRET}&algorithm=SHA512&digits=8&period=60`)
    const renamed = await alice.put(`/api/2fa/${created.body.id}`, { service: 'Renamed' })
    expect(renamed.body).toMatchObject({ algorithm: 'SHA512', digits: 8, period: 60 })
    const bare = await alice.put(`/api/2fa/${created.body.id}`, { secret: SECRET })
    expect(bare.body).toMatchObject({ algorithm: 'SHA1', digits: 6, period: 30 })
    expect((await alice.post(`/api/2fa/${created.body.id}/reveal`)).body.code).toBe(oathtool('SHA1', 6, 30))
    const invalid = await alice.put(`/api/2fa/${created.body.id}`, { secret: `otpauth://totp/x?secret=${SECRET}&digits=12` })
    expect(invalid.status).toBe(400)
    expect(invalid.body.code).toBe('INVALID_TOTP_SECRET')
  })

  test('a token stored before the parameters were kept reads as SHA1/6/30', async () => {
    const created = await addToken(`otpauth://totp/x?secret=${SECRET}&algorithm=SHA256&digits=8&period=60`)
    const { doc } = await server.deps.vaults.open(alice.user.id)
    await doc.update((data, write) =>
      setStoredFields(write.twoFactor, data.twoFactor, created.body.id, { algorithm: undefined, digits: undefined, period: undefined }),
    )
    expect((await alice.get(`/api/2fa/${created.body.id}`)).body).toMatchObject({ algorithm: 'SHA1', digits: 6, period: 30 })
    const revealed = await alice.post(`/api/2fa/${created.body.id}/reveal`)
    expect(revealed.body).toMatchObject({ code: oathtool('SHA1', 6, 30), remainingSeconds: 20 })
  })
})
