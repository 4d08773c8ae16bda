// Issue 35: two-factor tokens in and out of other authenticator apps. Each format's file is made
// here from known secrets (by code written from the format's own documentation, independent of
// the server's), imported, and every code the vault then shows is oathtool's at fixed times
// (TOTP and HOTP); Steam Guard codes are held to published vectors. The vault's own exports are
// imported back the same way. Damaged files are 400 with the reason and write nothing.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { Secret } from 'otpauth'
import { storedAuditEvents } from '../support/audit-file'
import { PASSWORD, signUp, type Client } from '../support/client'
import { removeDir, startTestServer, type TestServer } from '../support/server'
import { steamCode } from '../../src/modules/two-factor/totp-code'
import { describeNeeding, missingCommand } from '../support/requirements'
import {
  aegisContent,
  aegisEncrypted,
  aegisPlain,
  andOtp,
  googleLink,
  HOTP,
  oathtool as oathtoolAt,
  otpauthList,
  STEAM,
  STEAM_SECRET,
  STEAM_VECTORS,
  TOTP_A,
  TOTP_B,
  TOTP_C,
  TOTP_SLOW,
  twoFas,
  type Known,
} from '../support/two-factor-formats'

// 2026-01-01T00:00:10Z; the clock moves only when a test sets it.
const START_SECONDS = 1_767_225_610
let nowSeconds = START_SECONDS
let server: TestServer

beforeAll(async () => {
  server = await startTestServer({ now: () => nowSeconds * 1000 })
})
afterAll(async () => {
  await server.stop()
  removeDir(server.dataDir)
})

/** Codes are held to oathtool (scripts/test.sh installs it). */
const withOathtool = describeNeeding(missingCommand('oathtool'))
const oathtool = (token: Known, counter = token.counter) => oathtoolAt(token, nowSeconds, counter)

// ---- Checks ----

async function tokensOf(client: Client): Promise<any[]> {
  const answer = await client.get('/api/2fa')
  expect(answer.status).toBe(200)
  return answer.body
}

/** Every known token is there once, and every code it shows is oathtool's (Steam: the vectors). */
async function expectCodes(client: Client, expected: Known[]) {
  const stored = await tokensOf(client)
  expect(stored.map((t) => `${t.service}|${t.accountName}`).sort()).toEqual(expected.map((t) => `${t.issuer}|${t.account}`).sort())
  for (const known of expected) {
    const token = stored.find((t) => t.service === known.issuer && t.accountName === known.account)
    expect(token).toMatchObject({
      type: known.type,
      algorithm: known.algorithm,
      digits: known.digits,
      period: known.period,
      counter: known.type === 'hotp' ? known.counter : null,
    })
    if (known.type === 'steam') {
      for (const [seconds, code] of STEAM_VECTORS) {
        nowSeconds = seconds
        expect((await client.post(`/api/2fa/${token.id}/reveal`)).body).toMatchObject({ code, type: 'steam' })
      }
      nowSeconds = START_SECONDS
      continue
    }
    if (known.type === 'hotp') {
      // Each reveal shows the next counter's code, as the app would.
      for (const counter of [known.counter, known.counter + 1]) {
        const revealed = await client.post(`/api/2fa/${token.id}/reveal`)
        expect(revealed.body).toMatchObject({ code: oathtool(known, counter), counter, type: 'hotp' })
      }
      continue
    }
    for (const seconds of [START_SECONDS, START_SECONDS + 12_345]) {
      nowSeconds = seconds
      expect((await client.post(`/api/2fa/${token.id}/reveal`)).body).toMatchObject({ code: oathtool(known), type: 'totp' })
    }
    nowSeconds = START_SECONDS
  }
}

async function importInto(client: Client, content: string, expected: Known[], format: string, password?: string) {
  const preview = await client.post('/api/2fa/import', { content, ...(password ? { password } : {}) })
  expect(preview.status).toBe(200)
  expect(preview.body).toMatchObject({ format, applied: false, duplicates: [], refused: [] })
  expect(preview.body.created.length).toBe(expected.length)
  // A preview writes nothing.
  expect(await tokensOf(client)).toEqual([])
  const applied = await client.post('/api/2fa/import', { content, apply: true, ...(password ? { password } : {}) })
  expect(applied.status).toBe(200)
  expect(applied.body).toMatchObject({ format, applied: true, duplicates: [], refused: [] })
  expect(applied.body.created.every((item: any) => typeof item.id === 'string')).toBe(true)
  // Nothing secret in the answer.
  for (const known of expected) expect(applied.text).not.toContain(known.secret)
  await expectCodes(client, expected)
  // The same file again: every token a duplicate, nothing added.
  const again = await client.post('/api/2fa/import', { content, apply: true, ...(password ? { password } : {}) })
  expect(again.body.created).toEqual([])
  expect(again.body.duplicates.length).toBe(expected.length)
  expect((await tokensOf(client)).length).toBe(expected.length)
}

const ALL = [TOTP_A, TOTP_B, TOTP_C, TOTP_SLOW, HOTP, STEAM]
const GOOGLE = [TOTP_A, TOTP_B, TOTP_C, HOTP]

withOathtool('import: each format made from known secrets, codes equal oathtool', () => {
  test('Google Authenticator export links, two batches', async () => {
    const alice = await signUp(server.url)
    const content = `${googleLink(GOOGLE.slice(0, 2), 0, 2)}\n${googleLink(GOOGLE.slice(2), 1, 2)}\n`
    await importInto(alice, content, GOOGLE, 'google-migration')
  })

  test('Aegis plain vault', async () => {
    await importInto(await signUp(server.url), aegisPlain(ALL), ALL, 'aegis')
  })

  test('Aegis encrypted vault, with its password (scrypt + AES-256-GCM)', async () => {
    const alice = await signUp(server.url)
    const content = aegisEncrypted(ALL, 'vault password é')
    const missing = await alice.post('/api/2fa/import', { content })
    expect(missing.status).toBe(400)
    expect(missing.body.code).toBe('IMPORT_PASSWORD_REQUIRED')
    await importInto(alice, content, ALL, 'aegis-encrypted', 'vault password é')
  })

  test('2FAS backup (plain)', async () => {
    await importInto(await signUp(server.url), twoFas(ALL), ALL, '2fas')
  })

  test('andOTP JSON', async () => {
    await importInto(await signUp(server.url), andOtp(ALL), ALL, 'andotp')
  })

  test('otpauth:// links, one per line (Ente Auth plain export)', async () => {
    await importInto(await signUp(server.url), `${otpauthList(ALL)}\n`, ALL, 'otpauth')
  })

  test('otpauth links as apps write them: no counter, no label, Steam as encoder=steam, a comment line', async () => {
    const alice = await signUp(server.url)
    const content = [
      '# exported by some app',
      `otpauth://hotp/VPN:alice?secret=${HOTP.secret}`,
      `otpauth://totp/?secret=${TOTP_A.secret}&issuer=GitHub`,
      `otpauth://totp/Steam:gamer?secret=${STEAM_SECRET}&issuer=Steam&digits=5&encoder=steam`,
      `otpauth://yaotp/Yandex:me?secret=${TOTP_A.secret}`,
    ].join('\r\n')
    const answer = await alice.post('/api/2fa/import', { content, apply: true })
    expect(answer.body.created.map((c: any) => [c.service, c.accountName, c.type, c.counter])).toEqual([
      ['VPN', 'alice', 'hotp', 0],
      ['GitHub', 'GitHub', 'totp', null],
      ['Steam', 'gamer', 'steam', null],
    ])
    expect(answer.body.refused.map((r: any) => [r.index, r.reason])).toEqual([[4, expect.stringContaining('yaotp')]])
  })

  test('a mixed file: unsupported tokens are refused with why, duplicates skipped, the rest created', async () => {
    const alice = await signUp(server.url)
    expect((await alice.post('/api/2fa', { service: TOTP_A.issuer, accountName: TOTP_A.account, secret: TOTP_A.secret })).status).toBe(201)
    const content = JSON.stringify({
      version: 1,
      header: { slots: null, params: null },
      db: {
        version: 2,
        entries: [
          ...aegisContent([TOTP_A, TOTP_B, TOTP_B]).entries,
          { type: 'yandex', name: 'y', issuer: 'Yandex', info: { secret: TOTP_A.secret, algo: 'SHA256', digits: 8, period: 30 } },
          { type: 'totp', name: 'md5', issuer: 'Old', info: { secret: TOTP_A.secret, algo: 'MD5', digits: 6, period: 30 } },
          { type: 'totp', name: 'short', issuer: 'Short', info: { secret: 'JBSWY3DP', algo: 'SHA1', digits: 6, period: 30 } },
        ],
      },
    })
    const applied = await alice.post('/api/2fa/import', { content, apply: true })
    expect(applied.status).toBe(200)
    expect(applied.body.created.map((c: any) => c.index)).toEqual([2])
    const kept = (await tokensOf(alice)).find((t) => t.service === TOTP_A.issuer)
    // Already stored, and an earlier line of the same file.
    expect(applied.body.duplicates.map((c: any) => [c.index, c.existingId])).toEqual([
      [1, kept.id],
      [3, applied.body.created[0].id],
    ])
    expect(applied.body.refused.map((r: any) => r.index)).toEqual([4, 5, 6])
    for (const refused of applied.body.refused) expect(refused.reason.length).toBeGreaterThan(5)
    expect((await tokensOf(alice)).length).toBe(2)
    // One event for the import, naming the created token.
    const events = await storedAuditEvents(server, alice.user.id)
    const imported = events.filter((e) => e.action === 'twofa.import')
    expect(imported.length).toBe(1)
    expect(imported[0].records.map((r: any) => r.id)).toEqual([applied.body.created[0].id])
    expect(JSON.stringify(events)).not.toContain(TOTP_B.secret)
  })
})

withOathtool('export, then import into another account: codes equal oathtool', () => {
  for (const [format, expected, skipped] of [
    ['otpauth', ALL, []],
    ['aegis', ALL, []],
    ['google-migration', GOOGLE, ['Slow', 'Steam']],
  ] as const) {
    test(format, async () => {
      const alice = await signUp(server.url)
      for (const known of ALL) {
        const created = await alice.post('/api/2fa', { service: known.issuer, accountName: known.account, secret: otpauthList([known]) })
        expect(created.status).toBe(201)
      }
      const exported = await alice.post('/api/2fa/export', { format, password: PASSWORD })
      expect(exported.status).toBe(200)
      expect(exported.headers.get('cache-control')).toBe('no-store')
      expect(exported.body.count).toBe(expected.length)
      expect(exported.body.skipped.map((s: any) => s.service).sort()).toEqual([...skipped])
      if (format === 'google-migration')
        expect(
          exported.body.content
            .trim()
            .split('\n')
            .every((line: string) => line.startsWith('otpauth-migration://offline?data=')),
        ).toBe(true)
      const events = await storedAuditEvents(server, alice.user.id)
      expect(events.filter((e) => e.action === 'twofa.export').map((e) => e.details)).toEqual([{ format, count: expected.length }])

      const bob = await signUp(server.url)
      await importInto(bob, exported.body.content, expected as Known[], format === 'aegis' ? 'aegis' : format)
    })
  }

  test('Google Authenticator export: more than ten tokens make several batches', async () => {
    const alice = await signUp(server.url)
    const many: Known[] = Array.from({ length: 23 }, (_, i) => ({ ...TOTP_A, account: `user${i}` }))
    for (const known of many)
      expect((await alice.post('/api/2fa', { service: known.issuer, accountName: known.account, secret: known.secret })).status).toBe(201)
    const exported = await alice.post('/api/2fa/export', { format: 'google-migration', password: PASSWORD })
    expect(exported.body.content.trim().split('\n').length).toBe(3)
    const bob = await signUp(server.url)
    const applied = await bob.post('/api/2fa/import', { content: exported.body.content, apply: true })
    expect(applied.body.created.length).toBe(23)
  })

  test('export needs the session and the password again', async () => {
    const alice = await signUp(server.url)
    expect((await alice.post('/api/2fa', { service: 'X', accountName: 'y', secret: TOTP_A.secret })).status).toBe(201)
    const wrong = await alice.post('/api/2fa/export', { format: 'otpauth', password: 'not the password' })
    expect(wrong.status).toBe(401)
    expect(wrong.body.code).toBe('INVALID_CREDENTIALS')
    expect(wrong.text).not.toContain(TOTP_A.secret)
    const none = await alice.post('/api/2fa/export', { format: 'otpauth' })
    expect(none.status).toBe(401)
    const key = await alice.keyClient(['2fa:read', '2fa:write', '2fa:reveal', 'export:read'])
    const byKey = await key.post('/api/2fa/export', { format: 'otpauth', password: PASSWORD })
    expect(byKey.status).toBe(403)
    expect(byKey.body.code).toBe('SESSION_REQUIRED')
    const events = await storedAuditEvents(server, alice.user.id)
    expect(events.filter((e) => e.action === 'twofa.export')).toEqual([])
  })
})

describe('damaged files: 400 with the reason, nothing written', () => {
  let alice: Client & { user: any }
  beforeAll(async () => {
    alice = await signUp(server.url)
    expect((await alice.post('/api/2fa', { service: 'Kept', accountName: 'me', secret: TOTP_A.secret })).status).toBe(201)
  })

  async function refused(body: unknown, code: string, reason: RegExp) {
    const before = await tokensOf(alice)
    for (const apply of [false, true]) {
      const answer = await alice.post('/api/2fa/import', typeof body === 'string' ? body : { ...(body as object), apply })
      expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 400, code })
      expect(answer.body.error).toMatch(reason)
    }
    expect(await tokensOf(alice)).toEqual(before)
  }

  test('a truncated Google Authenticator payload', async () => {
    const whole = googleLink(GOOGLE, 0, 1)
    const bytes = Buffer.from(decodeURIComponent(whole.split('data=')[1]), 'base64')
    for (const cut of [1, 7, bytes.length - 3]) {
      const content = `otpauth-migration://offline?data=${encodeURIComponent(bytes.subarray(0, cut).toString('base64'))}`
      await refused({ content }, 'IMPORT_UNREADABLE', /truncated or damaged/)
    }
    await refused({ content: 'otpauth-migration://offline?data=' }, 'IMPORT_UNREADABLE', /no base64 data/)
  })

  test('an encrypted Aegis vault with the wrong password', async () => {
    await refused({ content: aegisEncrypted([TOTP_A], 'right one', { n: 1024, r: 8, p: 1 }), password: 'wrong one' }, 'IMPORT_WRONG_PASSWORD', /password/)
  })

  test('an Aegis slot asking scrypt for too much memory', async () => {
    const vault = JSON.parse(aegisEncrypted([TOTP_A], 'pw', { n: 1024, r: 8, p: 1 }))
    vault.header.slots[0].n = 2 ** 20
    vault.header.slots[0].r = 32
    await refused({ content: JSON.stringify(vault), password: 'pw' }, 'IMPORT_UNREADABLE', /scrypt/)
  })

  test('10 MB', async () => {
    const content = `${otpauthList([TOTP_B])}\n${'#'.repeat(10 * 1024 * 1024)}`
    await refused(JSON.stringify({ content }), 'IMPORT_TOO_LARGE', /larger than/)
  })

  test('deeply nested JSON', async () => {
    await refused({ content: `${'['.repeat(100_000)}${']'.repeat(100_000)}` }, 'IMPORT_UNREADABLE', /nested|JSON/)
    await refused(
      { content: JSON.stringify({ services: [{ otp: JSON.parse(`${'{"a":'.repeat(40)}1${'}'.repeat(40)}`) }] }) },
      'IMPORT_UNREADABLE',
      /nested more than/,
    )
  })

  test('not a format at all, or empty', async () => {
    await refused({ content: 'hello\nworld' }, 'IMPORT_UNREADABLE', /not a format/)
    await refused({ content: '   ' }, 'IMPORT_UNREADABLE', /empty/)
    await refused({ content: '{"hello": 1}' }, 'IMPORT_UNREADABLE', /not an Aegis vault/)
    await refused({ content: '{"version":1,"header":{},"db":' }, 'IMPORT_UNREADABLE', /not valid JSON/)
  })
})

withOathtool('Steam Guard and HOTP codes', () => {
  test('Steam codes match published vectors', () => {
    for (const [seconds, code] of STEAM_VECTORS) expect(steamCode(STEAM_SECRET, seconds * 1000).code).toBe(code)
    // A key of 20 zero bytes: RYH4D at step 0, DR2DK at step 1.
    const zeros = 'A'.repeat(32)
    expect(steamCode(zeros, 0).code).toBe('RYH4D')
    expect(steamCode(zeros, 30_000).code).toBe('DR2DK')
  })

  test('a HOTP link is accepted on create; each reveal shows the next counter, audited', async () => {
    const alice = await signUp(server.url)
    const created = await alice.post('/api/2fa', { service: 'VPN', accountName: 'me', secret: `otpauth://hotp/VPN:me?secret=${HOTP.secret}&counter=0` })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ type: 'hotp', counter: 0 })
    for (const counter of [0, 1, 2])
      expect((await alice.post(`/api/2fa/${created.body.id}/reveal`)).body).toMatchObject({ code: oathtool(HOTP, counter), counter })
    expect((await alice.get(`/api/2fa/${created.body.id}`)).body.counter).toBe(3)
    const events = await storedAuditEvents(server, alice.user.id)
    expect(events.filter((e) => e.action === 'twofa.reveal').map((e) => e.details.counter)).toEqual([0, 1, 2])
  })

  test('an earlier secret of a HOTP or Steam token comes back with its kind (version history)', async () => {
    const alice = await signUp(server.url)
    const hotp = await alice.post('/api/2fa', { service: 'VPN', accountName: 'me', secret: `otpauth://hotp/VPN:me?secret=${HOTP.secret}&counter=7` })
    const steam = await alice.post('/api/2fa', { service: 'Steam', accountName: 'me', secret: `otpauth://steam/Steam:me?secret=${STEAM_SECRET}` })
    for (const token of [hotp.body, steam.body]) expect((await alice.put(`/api/2fa/${token.id}`, { secret: TOTP_C.secret })).body.type).toBe('totp')
    // The HOTP version shows its counter's code without advancing anything; restored, it resumes past it.
    expect((await alice.post(`/api/2fa/${hotp.body.id}/versions/1/reveal`)).body.code).toBe(oathtool(HOTP, 7))
    expect((await alice.post(`/api/2fa/${hotp.body.id}/versions/1/restore`)).body).toMatchObject({ type: 'hotp', counter: 8 })
    expect((await alice.post(`/api/2fa/${hotp.body.id}/reveal`)).body).toMatchObject({ counter: 8, code: oathtool(HOTP, 8) })
    nowSeconds = STEAM_VECTORS[0][0]
    expect((await alice.post(`/api/2fa/${steam.body.id}/versions/1/reveal`)).body.code).toBe(STEAM_VECTORS[0][1])
    expect((await alice.post(`/api/2fa/${steam.body.id}/versions/1/restore`)).body).toMatchObject({ type: 'steam', digits: 5 })
    expect((await alice.post(`/api/2fa/${steam.body.id}/reveal`)).body.code).toBe(STEAM_VECTORS[0][1])
    nowSeconds = START_SECONDS
  })

  test('concurrent reveals of a HOTP token never show the same code twice', async () => {
    const alice = await signUp(server.url)
    const created = await alice.post('/api/2fa', { service: 'VPN', accountName: 'me', secret: `otpauth://hotp/VPN:me?secret=${HOTP.secret}&counter=100` })
    const answers = await Promise.all(Array.from({ length: 40 }, () => alice.post(`/api/2fa/${created.body.id}/reveal`)))
    const counters = answers.map((a) => a.body.counter).sort((a, b) => a - b)
    expect(counters).toEqual(Array.from({ length: 40 }, (_, i) => 100 + i))
    for (const answer of answers) expect(answer.body.code).toBe(oathtool(HOTP, answer.body.counter))
    expect((await alice.get(`/api/2fa/${created.body.id}`)).body.counter).toBe(140)
  })
})
