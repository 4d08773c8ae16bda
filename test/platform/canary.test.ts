// Canaries: plant recognisable secrets (password, entry values, 2FA secret, env file content,
// access key, session token, master key), use the API every way we can, then search every answer
// (except the one that creates or reveals that secret), the server's log output, and every file
// under the data folder.
import { expect, test } from 'bun:test'
import { relative } from 'node:path'
import { storedAuditLines, storedTexts } from '../support/audit-file'
import { ON_POSTGRES } from '../support/postgres'
import * as OTPAuth from 'otpauth'
import { sessionCookie } from '../support/client'
import { removeDir, spawnServer } from '../support/server'

interface Recorded {
  label: string
  text: string
  /** Canary names this answer may carry (it creates or reveals them). */
  allowed: string[]
}

function encodings(value: string): string[] {
  const bytes = Buffer.from(value)
  return [value, bytes.toString('base64'), bytes.toString('base64url'), bytes.toString('hex')].filter((v) => v.length >= 12)
}

function findCanaries(text: string, canaries: Record<string, string>, allowed: string[] = []): string[] {
  const found: string[] = []
  for (const [name, value] of Object.entries(canaries)) {
    if (allowed.includes(name)) continue
    if (encodings(value).some((encoded) => text.includes(encoded))) found.push(name)
  }
  return found
}

test('no planted secret shows up in any other answer, in the log output, or in any file of the data folder', async () => {
  const tag = crypto.randomUUID().replace(/-/g, '')
  const masterKey = Buffer.from(`canary-master-key-${tag}`.slice(0, 32)).toString('base64')
  const canaries: Record<string, string> = {
    password: `pw-canary-${tag}`,
    badPassword: `wrongpw-canary-${tag}`,
    longPassword: `longpw-canary-${tag}${'p'.repeat(1100)}`,
    simpleValue: `sk-canary-simple-${tag}`,
    simpleValue2: `sk-canary-updated-${tag}`,
    groupValue: `canary-group-field-${tag}`,
    invalidGroupValue: `canary-invalid-group-${tag}`,
    rejectedValue: `canary-rejected-${tag}`,
    totpSecret: new OTPAuth.Secret({ size: 20 }).base32,
    badTotpSecret: `canary-not-base32-${tag}`,
    envContent: `CANARY_ENV_SECRET=envcanary${tag}`,
    importValue: `importcanary${tag}`,
    masterKey,
  }
  const server = await spawnServer({ env: { SVC_MASTER_KEY: masterKey } })
  const recorded: Recorded[] = []
  let cookie = ''
  let key = ''
  let userId = ''

  async function call(label: string, method: string, path: string, body?: unknown, options: { allowed?: string[]; bearer?: boolean } = {}) {
    const headers: Record<string, string> = { 'content-type': 'application/json' }
    if (options.bearer) headers.authorization = `Bearer ${key}`
    else if (cookie) headers.cookie = `svc_session=${cookie}`
    const response = await fetch(server.url + path, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    })
    const text = await response.text()
    const head = [...response.headers.entries()].map(([k, v]) => `${k}: ${v}`).join('\n')
    recorded.push({
      label: `${label} (${method} ${path} -> ${response.status})`,
      text: `${response.status}\n${head}\n\n${text}`,
      allowed: options.allowed ?? [],
    })
    return {
      status: response.status,
      headers: response.headers,
      json: text && /\/json|\+json/.test(response.headers.get('content-type') ?? '') ? JSON.parse(text) : text,
    }
  }

  try {
    const email = `canary-${tag}@example.test`
    const registered = await call('register', 'POST', '/api/auth/register', { email, password: canaries.password }, { allowed: ['firstSession'] })
    expect(registered.status).toBe(201)
    userId = registered.json.user.id
    const firstCookie = sessionCookie(registered.headers)!
    await call('register, password too long', 'POST', '/api/auth/register', { email: `x${email}`, password: canaries.longPassword })
    await call('login, wrong password', 'POST', '/api/auth/login', { email, password: canaries.badPassword })
    await call('login, unknown e-mail', 'POST', '/api/auth/login', { email: `nobody-${email}`, password: canaries.password })
    const loggedIn = await call('login', 'POST', '/api/auth/login', { email, password: canaries.password }, { allowed: ['session'] })
    expect(loggedIn.status).toBe(200)
    cookie = sessionCookie(loggedIn.headers)!
    canaries.session = cookie
    canaries.firstSession = firstCookie

    const createdKey = await call(
      'create access key',
      'POST',
      '/api/access-keys',
      { name: 'canary', scopes: ['entries:read', 'entries:reveal', '2fa:read', 'envs:read', 'stats:read', 'export:read'] },
      { allowed: ['accessKey'] },
    )
    key = createdKey.json.key
    canaries.accessKey = key

    const simple = await call('create category', 'POST', '/api/categories', { name: 'Canary', keyType: 'simple', envVarName: 'CANARY_KEY' })
    const group = await call('create group category', 'POST', '/api/categories', { name: 'Canary group', keyType: 'group', fieldDefinitions: ['USER', 'PASS'] })
    const entry = await call('create entry', 'POST', '/api/entries', {
      categoryId: simple.json.id,
      name: 'app',
      value: canaries.simpleValue,
      environment: 'production',
    })
    expect(entry.status).toBe(201)
    const groupEntry = await call('create group entry', 'POST', '/api/entries', {
      categoryId: group.json.id,
      name: 'app',
      value: JSON.stringify({ USER: 'admin', PASS: canaries.groupValue }),
    })
    expect(groupEntry.status).toBe(201)
    await call('entry with unknown field', 'POST', '/api/entries', { categoryId: simple.json.id, name: 'x', value: canaries.rejectedValue, surprise: 1 })
    await call('entry in a missing category', 'POST', '/api/entries', { categoryId: crypto.randomUUID(), name: 'x', value: canaries.rejectedValue })
    await call('entry value too long', 'POST', '/api/entries', { categoryId: simple.json.id, name: 'x', value: canaries.rejectedValue.repeat(3000) })
    await call('group entry, invalid JSON value', 'POST', '/api/entries', {
      categoryId: group.json.id,
      name: 'x',
      value: `{"PASS": "${canaries.invalidGroupValue}"`,
    })
    await call('group entry, unknown field', 'POST', '/api/entries', {
      categoryId: group.json.id,
      name: 'x',
      value: JSON.stringify({ NOPE: canaries.invalidGroupValue }),
    })
    await call('malformed JSON', 'POST', '/api/entries', `{"value": "${canaries.rejectedValue}", `)

    const totp = await call('create 2fa', 'POST', '/api/2fa', { service: 'GitHub', accountName: 'me', secret: canaries.totpSecret })
    expect(totp.status).toBe(201)
    await call('create 2fa, bad secret', 'POST', '/api/2fa', { service: 'GitHub', accountName: 'me', secret: canaries.badTotpSecret })
    const project = await call('create env project', 'POST', '/api/envs', { name: 'canary project' })
    const file = await call('create env file', 'POST', `/api/envs/${project.json.data.id}/files`, { fileType: 'env', content: canaries.envContent })
    expect(file.status).toBe(201)

    await call('update entry value', 'PUT', `/api/entries/${entry.json.id}`, { value: canaries.simpleValue2 })
    await call('update entry notes', 'PUT', `/api/entries/${entry.json.id}`, { notes: 'rotated' })
    await call('import', 'POST', '/api/ai/import', { text: `STRIPE_SECRET_KEY=${canaries.importValue}\nexport OPENAI_API_KEY=${canaries.importValue}2\n` })
    await call('import and apply', 'POST', '/api/ai/import', { text: `RESEND_API_KEY=${canaries.importValue}3\n`, apply: true, name: 'imported' })

    // Account protection (issue 16): the account's TOTP seed and recovery codes appear only in the
    // answers that hand them out; a new password nowhere.
    const setup = await call('2fa setup', 'POST', '/api/account/2fa/setup', { password: canaries.password }, { allowed: ['accountTotpSecret'] })
    expect(setup.status).toBe(200)
    canaries.accountTotpSecret = setup.json.secret
    const accountCode = () => new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(canaries.accountTotpSecret) }).generate()
    await call('2fa enable, wrong code', 'POST', '/api/account/2fa/enable', { code: '000000' })
    const enabled = await call(
      '2fa enable',
      'POST',
      '/api/account/2fa/enable',
      { code: accountCode() },
      { allowed: Array.from({ length: 20 }, (_, i) => `recovery${i}`) },
    )
    expect(enabled.status).toBe(200)
    enabled.json.recoveryCodes.forEach((code: string, i: number) => {
      canaries[`recovery${i}`] = code
      canaries[`recoveryBare${i}`] = code.replace(/-/g, '')
    })
    const challenge = await call('login with 2fa on', 'POST', '/api/auth/login', { email, password: canaries.password }, { allowed: ['challenge'] })
    expect(challenge.json).toEqual({ twoFactorRequired: true })
    const challengeCookie = /svc_2fa=([^;]+)/.exec(challenge.headers.getSetCookie().join('\n'))![1]
    canaries.challenge = challengeCookie
    const saved = cookie
    cookie = ''
    const second = await fetch(`${server.url}/api/auth/login/2fa`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: `svc_2fa=${challengeCookie}` },
      body: JSON.stringify({ recoveryCode: canaries.recovery0 }),
    })
    const secondText = await second.text()
    recorded.push({
      label: 'login 2fa with a recovery code',
      text: `${second.status}\n${[...second.headers.entries()].join('\n')}\n\n${secondText}`,
      allowed: ['session2'],
    })
    expect(second.status).toBe(200)
    canaries.session2 = sessionCookie(second.headers)!
    cookie = saved
    await call('sessions', 'GET', '/api/account/sessions')
    const renewed = await call(
      'new recovery codes',
      'POST',
      '/api/account/2fa/recovery-codes',
      { password: canaries.password, recoveryCode: canaries.recovery1 },
      { allowed: Array.from({ length: 20 }, (_, i) => `newRecovery${i}`) },
    )
    expect(renewed.status).toBe(200)
    renewed.json.recoveryCodes.forEach((code: string, i: number) => (canaries[`newRecovery${i}`] = code))
    canaries.newPassword = `newpw-canary-${tag}`
    await call('password change, wrong current', 'POST', '/api/account/password', { currentPassword: canaries.badPassword, newPassword: canaries.newPassword })
    expect(
      (await call('password change', 'POST', '/api/account/password', { currentPassword: canaries.password, newPassword: canaries.newPassword })).status,
    ).toBe(204)
    await call('passkeys', 'GET', '/api/account/passkeys')

    for (const [label, path] of [
      ['me', '/api/auth/me'],
      ['access keys', '/api/access-keys'],
      ['categories', '/api/categories'],
      ['entries', '/api/entries'],
      ['entry', `/api/entries/${entry.json.id}`],
      ['group entry', `/api/entries/${groupEntry.json.id}`],
      ['2fa list', '/api/2fa'],
      ['2fa', `/api/2fa/${totp.json.id}`],
      ['env projects', '/api/envs'],
      ['env project', `/api/envs/${project.json.data.id}`],
      ['stats', '/api/stats'],
      ['openapi', '/api/openapi'],
    ] as const) {
      await call(label, 'GET', path)
    }
    for (const path of ['/api/auth/me', '/api/entries', `/api/entries/${entry.json.id}`, '/api/2fa', '/api/envs', '/api/stats'])
      await call('by key', 'GET', path, undefined, { bearer: true })

    // The answers that exist to reveal secrets: they may carry them, and must.
    const revealed = await call('reveal entry', 'POST', `/api/entries/${entry.json.id}/reveal`, undefined, { allowed: ['simpleValue2'] })
    expect(revealed.json.value).toBe(canaries.simpleValue2)
    const revealedByKey = await call('reveal group entry by key', 'POST', `/api/entries/${groupEntry.json.id}/reveal`, undefined, {
      allowed: ['groupValue'],
      bearer: true,
    })
    expect(revealedByKey.json.value.PASS).toBe(canaries.groupValue)
    const code = await call('reveal 2fa code', 'POST', `/api/2fa/${totp.json.id}/reveal`)
    expect(code.json.code).toMatch(/^\d{6}$/)
    const envRevealed = await call('reveal env file', 'POST', `/api/envs/${project.json.data.id}/files/${file.json.data.id}/reveal`, undefined, {
      allowed: ['envContent'],
    })
    expect(envRevealed.json.data.content).toBe(canaries.envContent)
    const exported = await call('export', 'GET', '/api/export', undefined, { allowed: ['simpleValue2', 'groupValue', 'importValue'] })
    expect(exported.json).toContain(canaries.simpleValue2)
    await call('ai extract', 'POST', '/api/ai/extract', { prompt: 'the canary app in production' }, { allowed: ['simpleValue2', 'groupValue', 'importValue'] })

    // The audit log (issue 17): a denied scope is recorded too; reading the log shows no secret.
    await call('missing scope by key', 'POST', '/api/categories', { name: 'denied', keyType: 'group' }, { bearer: true })
    await call('audit log', 'GET', '/api/audit?limit=500')
    await call('audit log export', 'GET', '/api/audit/export')
    canaries.totpCode = code.json.code

    // Revoke the key and sign out: answers afterwards must not echo them either.
    await call('revoke key', 'DELETE', `/api/access-keys/${createdKey.json.id}`)
    await call('revoked key', 'GET', '/api/auth/me', undefined, { bearer: true })
    await call('logout', 'POST', '/api/auth/logout')
    await call('after logout', 'GET', '/api/auth/me')
  } finally {
    expect(await server.stop()).toBe(0)
  }

  try {
    const leaks: string[] = []
    for (const answer of recorded) {
      for (const name of findCanaries(answer.text, canaries, answer.allowed)) leaks.push(`answer "${answer.label}" carries ${name}`)
    }
    for (const name of findCanaries(server.output(), canaries)) leaks.push(`log output carries ${name}`)
    // The data folder's files, or on the database store its rows (documents, changes, audit lines).
    const stored = await storedTexts(server)
    if (ON_POSTGRES) {
      expect(stored.filter((row) => row.where.startsWith('svc_documents ')).length).toBe(2)
    } else {
      const files = stored.map((row) => relative(server.dataDir, row.where))
      expect(files).toContain('accounts.json')
      expect(files.filter((name) => name.startsWith('vaults/') && name.endsWith('.json')).length).toBe(1)
    }
    // The audit logs are among what is searched: the user's, and the server's (the unknown e-mail's failed sign-in).
    const auditLogs = [
      { name: 'the user audit log', lines: await storedAuditLines(server, userId) },
      { name: "the server's audit log", lines: await storedAuditLines(server, null) },
    ]
    // The TOTP code (6 digits, too short to search for as text) is no value of any event.
    const totpCode = canaries.totpCode
    delete canaries.totpCode
    for (const { name, lines } of auditLogs) {
      expect(lines.length).toBeGreaterThan(0)
      const strings: string[] = []
      JSON.parse(`[${lines.join(',')}]`, (_key, value) => (typeof value === 'string' && strings.push(value), value))
      if (strings.includes(totpCode)) leaks.push(`${name} carries the TOTP code`)
    }
    for (const { where, text } of stored) {
      for (const leak of findCanaries(text, canaries)) leaks.push(`${where} carries ${leak}`)
    }
    // The TOTP secret is also checked in lower case and spaced the way apps show it.
    const loose = (text: string) => text.replace(/\s/g, '').toUpperCase()
    for (const { where, text } of stored) {
      if (loose(text).includes(canaries.totpSecret)) leaks.push(`${where} carries the TOTP secret`)
      if (loose(text).includes(canaries.accountTotpSecret)) leaks.push(`${where} carries the account's TOTP secret`)
    }
    expect(leaks).toEqual([])
    expect(recorded.length).toBeGreaterThan(40)
    // The rejected inputs were rejected (so their canaries were really sent and refused).
    // The label's own words, not its request line: an id such as …58758d39badd holds "bad".
    const rejected = recorded.filter((r) => /bad|unknown|missing|too long|invalid|malformed|wrong/.test(r.label.split(' (')[0]))
    expect(rejected.length).toBeGreaterThanOrEqual(10)
    for (const answer of rejected)
      expect({ label: answer.label, status: Number(answer.text.slice(0, 3)) >= 400 }).toEqual({ label: answer.label, status: true })
  } finally {
    removeDir(server.dataDir)
  }
}, 30_000)
