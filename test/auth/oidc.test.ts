// Sign-in through a real OpenID provider (oidc-provider on loopback), driven like a browser:
// the vault's redirect, the provider's login and consent pages, the callback, the session.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sessionCookie, signUp, uniqueEmail } from '../support/client'
import { Browser, oidcEnv, startOidcVault, startTestProvider, VAULT_CALLBACK as CALLBACK, type TestProvider } from '../support/oidc-provider'
import { freePort } from '../support/ports'
import { removeDir, startTestServer, tempDir, type TestServer } from '../support/server'

let provider: TestProvider
let vault: TestServer
let base: string

beforeAll(async () => {
  provider = await startTestProvider()
  vault = await startOidcVault(provider)
  base = vault.url
})

afterAll(async () => {
  await vault?.stop()
  await provider?.stop()
})

let subjects = 0
/** A provider account with a fresh subject; returns the subject (also its login name). */
function account(claims: { email?: string; email_verified?: boolean; name?: string } = {}): string {
  const sub = `user-${++subjects}-${Date.now()}`
  provider.accounts.set(sub, { email: uniqueEmail('oidc'), email_verified: true, name: `Person ${subjects}`, ...claims })
  return sub
}

/** GET /api/auth/oidc: the provider URL the vault redirects to. */
async function startSignIn(browser: Browser, origin = base): Promise<{ response: Response; authorizationUrl: URL }> {
  const response = await browser.request(`${origin}/api/auth/oidc`)
  expect(response.status).toBe(302)
  return { response, authorizationUrl: new URL(response.headers.get('location')!) }
}

/** Walks the provider's pages (login, consent) until it redirects back to the vault's callback. */
async function passProvider(browser: Browser, authorizationUrl: URL | string, login: string, origin = base): Promise<URL> {
  let step = await browser.follow(authorizationUrl, `${origin}${CALLBACK}`)
  for (let pages = 0; !step.stopped && pages < 4; pages++) {
    const html = await step.response.text()
    const prompt = /name="prompt" value="([a-z]+)"/.exec(html)?.[1]
    if (prompt === 'login') step = await browser.follow(step.url, `${origin}${CALLBACK}`, { form: { prompt, login, password: 'any' } })
    else if (prompt === 'consent') step = await browser.follow(step.url, `${origin}${CALLBACK}`, { form: { prompt } })
    else throw new Error(`unexpected provider page ${step.response.status}: ${html.slice(0, 300)}`)
  }
  if (!step.stopped) throw new Error('the provider did not redirect back to the vault')
  return step.url
}

/** The whole sign-in up to (not including) the callback request. */
async function toCallback(login: string, origin = base) {
  const browser = new Browser()
  const { authorizationUrl } = await startSignIn(browser, origin)
  const callbackUrl = await passProvider(browser, authorizationUrl, login, origin)
  return { browser, authorizationUrl, callbackUrl }
}

async function me(browser: Browser, origin = base) {
  const response = await browser.request(`${origin}/api/auth/me`)
  return { status: response.status, body: (await response.json()) as any }
}

/** The vault logged why the last exchange failed (the library's reason, so the right check fired). */
function expectLoggedReason(reason: RegExp) {
  const last = vault.logs.filter((line) => line.startsWith('oidc: ')).at(-1)
  expect(last).toMatch(reason)
}

/** The reasons the vault itself gives (the library's reasons go to the log: expectLoggedReason). */
const USED_UP = /missing, expired or already used/
const BAD_STATE = /state does not match/
const UNVERIFIABLE = /could not be verified/

/** 400 OIDC_FAILED (or the given status and code) with no session; `reason`: what the answer says. */
async function expectFailed(response: Response, status = 400, code = 'OIDC_FAILED', reason?: RegExp) {
  expect(response.status).toBe(status)
  const body = (await response.json()) as { error: string; code: string }
  expect(body.code).toBe(code)
  expect(typeof body.error).toBe('string')
  if (reason) expect(body.error).toMatch(reason)
  expect(sessionCookie(response.headers)).toBeUndefined()
  return body
}

describe('OIDC configuration', () => {
  test('without SVC_OIDC_ISSUER and SVC_OIDC_CLIENT_ID the routes answer 404 OIDC_DISABLED', async () => {
    const plain = await startTestServer()
    try {
      for (const path of ['/api/auth/oidc', `${CALLBACK}?code=x&state=y`]) {
        const response = await fetch(plain.url + path, { redirect: 'manual' })
        expect(response.status).toBe(404)
        expect(await response.json()).toEqual({ error: expect.any(String), code: 'OIDC_DISABLED' })
      }
      const providers = await (await fetch(`${plain.url}/api/auth/providers`)).json()
      expect(providers.oidc).toEqual({ enabled: false, name: null })
    } finally {
      await plain.stop()
    }
  })

  test('providers reports OIDC on with its display name', async () => {
    const providers = await (await fetch(`${base}/api/auth/providers`)).json()
    expect(providers.oidc).toEqual({ enabled: true, name: 'Test IdP' })
  })

  test('the redirect carries state, nonce and PKCE S256; the transaction cookie is sealed, HttpOnly, Lax, short-lived, callback-only', async () => {
    const { response, authorizationUrl } = await startSignIn(new Browser())
    expect(authorizationUrl.origin).toBe(provider.issuer)
    const q = authorizationUrl.searchParams
    expect(q.get('response_type')).toBe('code')
    expect(q.get('client_id')).toBe(provider.clientId)
    expect(q.get('redirect_uri')).toBe(`${base}${CALLBACK}`)
    expect(q.get('scope')!.split(' ')).toEqual(expect.arrayContaining(['openid', 'email']))
    expect(q.get('code_challenge_method')).toBe('S256')
    expect(q.get('code_challenge')!.length).toBeGreaterThanOrEqual(43)
    expect(q.get('state')!.length).toBeGreaterThanOrEqual(32)
    expect(q.get('nonce')!.length).toBeGreaterThanOrEqual(32)
    expect(response.headers.get('cache-control')).toBe('no-store')

    const cookies = response.headers.getSetCookie()
    expect(cookies).toHaveLength(1)
    const cookie = cookies[0]
    expect(cookie).toMatch(/^svc_oidc=/)
    expect(cookie).toMatch(/HttpOnly/i)
    expect(cookie).toMatch(/SameSite=Lax/i)
    expect(cookie).toMatch(/Path=\/api\/auth\/oidc\/callback(;|$)/)
    expect(cookie).toMatch(/Max-Age=600(;|$)/)
    expect(cookie).not.toMatch(/Secure/i) // http base URL
    // Sealed: neither the state nor the nonce can be read from it.
    const value = /^svc_oidc=([^;]*)/.exec(cookie)![1]
    expect(value).not.toContain(q.get('state')!)
    expect(value).not.toContain(q.get('nonce')!)
  })
})

describe('OIDC sign-in', () => {
  test('a first sign-in creates the user from the claims; the session works; a second sign-in reaches the same user', async () => {
    const email = uniqueEmail('Alice')
    const sub = account({ email, name: 'Alice Liddell', email_verified: false })
    const { browser, callbackUrl } = await toCallback(sub)
    expect(callbackUrl.searchParams.get('code')).toBeTruthy()

    const callback = await browser.request(callbackUrl)
    expect(callback.status).toBe(302)
    expect(callback.headers.get('location')).toBe('/')
    const setCookies = callback.headers.getSetCookie()
    const session = setCookies.find((line) => line.startsWith('svc_session='))!
    expect(session).toMatch(/HttpOnly/i)
    expect(session).toMatch(/SameSite=Lax/i)
    expect(session).toMatch(/Path=\/(;|$)/)
    // The one-time transaction cookie is cleared.
    expect(setCookies.find((line) => line.startsWith('svc_oidc='))).toMatch(/Max-Age=0|Expires=Thu, 01 Jan 1970/i)
    expect(browser.cookie(base, 'svc_oidc')).toBeUndefined()

    const first = await me(browser)
    expect(first.status).toBe(200)
    expect(first.body.auth).toBe('session')
    expect(first.body.user).toEqual({
      id: expect.any(String),
      email: email.toLowerCase(),
      name: 'Alice Liddell',
      createdAt: expect.any(String),
      twoFactorEnabled: false,
    })

    // Again, from a new browser (a new provider session too): the same vault user.
    const again = await toCallback(sub)
    const second = await again.browser.request(again.callbackUrl)
    expect(second.status).toBe(302)
    expect((await me(again.browser)).body.user.id).toBe(first.body.user.id)

    // And the vault still has one account with this e-mail: registering it is refused.
    const register = await fetch(`${base}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'long enough password' }),
    })
    expect(register.status).toBe(409)
  })

  test('a replayed callback answers 400 OIDC_FAILED and no session, with or without the old cookie', async () => {
    const sub = account()
    const browser = new Browser()
    const { authorizationUrl } = await startSignIn(browser)
    const sealed = browser.cookie(base, 'svc_oidc')!
    const callbackUrl = await passProvider(browser, authorizationUrl, sub)
    expect((await browser.request(callbackUrl)).status).toBe(302)

    // The browser's cookie is gone: no transaction.
    await expectFailed(await browser.request(callbackUrl), 400, 'OIDC_FAILED', USED_UP)
    // An attacker who kept the cookie: the transaction was used already.
    await expectFailed(await fetch(callbackUrl, { headers: { cookie: `svc_oidc=${sealed}` }, redirect: 'manual' }), 400, 'OIDC_FAILED', USED_UP)
  })

  test('a tampered state, a tampered cookie or a missing cookie answer 400 OIDC_FAILED and no session', async () => {
    const sub = account()
    {
      const { browser, callbackUrl } = await toCallback(sub)
      const tampered = new URL(callbackUrl)
      tampered.searchParams.set('state', `${callbackUrl.searchParams.get('state')!.slice(0, -2)}xx`)
      await expectFailed(await browser.request(tampered), 400, 'OIDC_FAILED', BAD_STATE)
      // The attempt used the transaction up: the genuine callback fails as well.
      await expectFailed(await browser.request(callbackUrl), 400, 'OIDC_FAILED', USED_UP)
      expect((await me(browser)).status).toBe(401)
    }
    {
      const browser = new Browser()
      const { authorizationUrl } = await startSignIn(browser)
      const callbackUrl = await passProvider(browser, authorizationUrl, sub)
      const sealed = browser.cookie(base, 'svc_oidc')!
      const flipped = sealed.slice(0, -3) + (sealed.at(-3) === 'A' ? 'B' : 'A') + sealed.slice(-2)
      await expectFailed(await fetch(callbackUrl, { headers: { cookie: `svc_oidc=${flipped}` }, redirect: 'manual' }), 400, 'OIDC_FAILED', USED_UP)
      await expectFailed(await fetch(callbackUrl, { redirect: 'manual' }), 400, 'OIDC_FAILED', USED_UP)
      // The genuine cookie still completes (the failed attempts did not carry it).
      expect((await browser.request(callbackUrl)).status).toBe(302)
    }
    // No state or no code at all.
    const browser = new Browser()
    const { authorizationUrl } = await startSignIn(browser)
    const callbackUrl = await passProvider(browser, authorizationUrl, sub)
    const noState = new URL(callbackUrl)
    noState.searchParams.delete('state')
    await expectFailed(await browser.request(noState), 400, 'OIDC_FAILED', BAD_STATE)
  })

  test('two concurrent callbacks with one transaction: exactly one signs in', async () => {
    const sub = account()
    const { browser, callbackUrl } = await toCallback(sub)
    const cookie = browser.cookieHeader(callbackUrl)
    const answers = await Promise.all([1, 2, 3].map(() => fetch(callbackUrl, { headers: { cookie }, redirect: 'manual' })))
    expect(answers.map((a) => a.status).sort()).toEqual([302, 400, 400])
    expect(answers.filter((a) => sessionCookie(a.headers)).length).toBe(1)
    for (const answer of answers.filter((a) => a.status === 400)) await expectFailed(answer, 400, 'OIDC_FAILED', USED_UP)
  })

  test('a transaction older than 10 minutes answers 400 OIDC_FAILED', async () => {
    let offset = 0
    const clocked = await startOidcVault(provider, { now: () => Date.now() + offset })
    try {
      const { browser, callbackUrl } = await toCallback(account(), clocked.url)
      offset = 10 * 60_000 + 1000
      await expectFailed(await browser.request(callbackUrl), 400, 'OIDC_FAILED', USED_UP)
    } finally {
      await clocked.stop()
    }
  })

  test('an ID token with another nonce answers 400 OIDC_FAILED and no session', async () => {
    const sub = account()
    const browser = new Browser()
    const { authorizationUrl } = await startSignIn(browser)
    // The provider is asked for a token bound to a nonce the vault never issued.
    authorizationUrl.searchParams.set('nonce', 'a-nonce-the-vault-never-issued-0123456789')
    const callbackUrl = await passProvider(browser, authorizationUrl, sub)
    await expectFailed(await browser.request(callbackUrl), 400, 'OIDC_FAILED', UNVERIFIABLE)
    expect((await me(browser)).status).toBe(401)
    expectLoggedReason(/code exchange failed.*"nonce"/)
  })

  test('the provider refusing the sign-in (error parameter) answers 400 OIDC_FAILED', async () => {
    const browser = new Browser()
    const { authorizationUrl } = await startSignIn(browser)
    const page = await browser.follow(authorizationUrl)
    expect(page.response.status).toBe(200)
    await page.response.body?.cancel()
    // The development interaction's "cancel" link.
    const aborted = await browser.follow(`${page.url.href}/abort`, `${base}${CALLBACK}`)
    expect(aborted.stopped).toBe(true)
    expect(aborted.url.searchParams.get('error')).toBe('access_denied')
    const body = await expectFailed(await browser.request(aborted.url))
    expect(body.error).toContain('access_denied')
  })

  describe('forged token answers (signed with the provider key)', () => {
    async function withTokenAnswer(claims: (nonce: string) => Record<string, unknown>, sign = provider.signIdToken) {
      const sub = account()
      const browser = new Browser()
      const { authorizationUrl } = await startSignIn(browser)
      const callbackUrl = await passProvider(browser, authorizationUrl, sub)
      const nonce = authorizationUrl.searchParams.get('nonce')!
      provider.overrideToken = () => ({ access_token: 'forged', token_type: 'Bearer', expires_in: 600, id_token: sign(claims(nonce)) })
      try {
        return { browser, response: await browser.request(callbackUrl) }
      } finally {
        provider.overrideToken = undefined
      }
    }
    const now = () => Math.floor(Date.now() / 1000)
    const valid = (nonce: string) => ({
      iss: provider.issuer,
      sub: `forged-${++subjects}`,
      aud: provider.clientId,
      iat: now(),
      exp: now() + 300,
      nonce,
      email: uniqueEmail('forged'),
      email_verified: true,
    })

    test('control: a well-formed token is accepted (so the failures below are the checks at work)', async () => {
      const { browser, response } = await withTokenAnswer(valid)
      expect(response.status).toBe(302)
      expect((await me(browser)).status).toBe(200)
    })

    test('an ID token for another audience answers 400 OIDC_FAILED and no session', async () => {
      const { browser, response } = await withTokenAnswer((nonce) => ({ ...valid(nonce), aud: 'another-client' }))
      await expectFailed(response, 400, 'OIDC_FAILED', UNVERIFIABLE)
      expectLoggedReason(/code exchange failed.*"aud"/)
      expect((await me(browser)).status).toBe(401)
    })

    test('an expired ID token, another issuer, or a signature by a key the provider does not publish: 400 OIDC_FAILED', async () => {
      await expectFailed((await withTokenAnswer((nonce) => ({ ...valid(nonce), iat: now() - 3600, exp: now() - 1800 }))).response)
      expectLoggedReason(/code exchange failed.*"exp"/)
      await expectFailed((await withTokenAnswer((nonce) => ({ ...valid(nonce), iss: 'http://127.0.0.1:1' }))).response)
      expectLoggedReason(/code exchange failed.*"iss"/)
      await expectFailed((await withTokenAnswer(valid, provider.signWithForeignKey)).response)
      expectLoggedReason(/code exchange failed.*signature verification failed/)
      // The log lines name reasons, never tokens or the client secret.
      const logs = vault.logs.join('\n')
      expect(logs).not.toContain(provider.clientSecret)
      expect(logs).not.toContain('eyJ')
    })
  })
})

describe('OIDC accounts', () => {
  test('a verified e-mail does not join the existing password account: 400 OIDC_FAILED, no session, nothing linked', async () => {
    const owner = await signUp(base)
    const sub = account({ email: owner.email.toUpperCase(), email_verified: true })
    const { browser, callbackUrl } = await toCallback(sub)
    const body = await expectFailed(await browser.request(callbackUrl))
    expect(body.error).toContain('sign in with your password, then link the provider in Settings')
    expect((await me(browser)).status).toBe(401)
    expect(vault.deps.accounts.userById(owner.user.id)!.identities).toEqual([])
  })

  test('an e-mail the provider does not call verified does not join an existing account either: 400 OIDC_FAILED, no session', async () => {
    const owner = await signUp(base)
    const sub = account({ email: owner.email, email_verified: false })
    const { browser, callbackUrl } = await toCallback(sub)
    const body = await expectFailed(await browser.request(callbackUrl))
    expect(body.error).toContain('link the provider in Settings')
    expect((await me(browser)).status).toBe(401)
  })

  test('without an e-mail claim a new user cannot be created: 400 OIDC_FAILED', async () => {
    const sub = `no-email-${Date.now()}`
    provider.accounts.set(sub, { name: 'Nobody' })
    const { browser, callbackUrl } = await toCallback(sub)
    await expectFailed(await browser.request(callbackUrl), 400, 'OIDC_FAILED', /usable e-mail address/)
  })

  test('SVC_SIGNUP=closed stops new OIDC users (403 SIGNUP_DISABLED) but lets existing accounts in', async () => {
    const dataDir = tempDir()
    try {
      // Made while sign-up was open (a single sign-on account), then the vault restarts closed.
      const open = await startOidcVault(provider, { dataDir })
      const knownSubject = account()
      const first = await toCallback(knownSubject, open.url)
      expect((await first.browser.request(first.callbackUrl)).status).toBe(302)
      const ownerId = (await me(first.browser, open.url)).body.user.id
      await open.stop()
      const closed = await startOidcVault(provider, { dataDir, env: { SVC_SIGNUP: 'closed' } })
      try {
        const stranger = await toCallback(account(), closed.url)
        await expectFailed(await stranger.browser.request(stranger.callbackUrl), 403, 'SIGNUP_DISABLED')

        const known = await toCallback(knownSubject, closed.url)
        expect((await known.browser.request(known.callbackUrl)).status).toBe(302)
        expect((await me(known.browser, closed.url)).body.user.id).toBe(ownerId)
      } finally {
        await closed.stop()
      }
    } finally {
      removeDir(dataDir)
    }
  })

  test('an https base URL: Secure transaction cookie and an https redirect URI', async () => {
    const https = await startTestServer({ env: oidcEnv(provider, 'https://vault.example.test') })
    try {
      const response = await fetch(`${https.url}/api/auth/oidc`, { redirect: 'manual' })
      expect(response.status).toBe(302)
      const location = new URL(response.headers.get('location')!)
      expect(location.searchParams.get('redirect_uri')).toBe(`https://vault.example.test${CALLBACK}`)
      expect(response.headers.getSetCookie()[0]).toMatch(/;\s*Secure/i)
    } finally {
      await https.stop()
    }
  })

  test('a provider that cannot be reached answers 400 OIDC_FAILED on the redirect', async () => {
    const port = await freePort()
    const unreachable = await startTestServer({
      env: { SVC_OIDC_ISSUER: `http://127.0.0.1:${port}`, SVC_OIDC_CLIENT_ID: 'x', SVC_BASE_URL: 'http://127.0.0.1:1' },
    })
    try {
      const response = await fetch(`${unreachable.url}/api/auth/oidc`, { redirect: 'manual' })
      const body = await expectFailed(response)
      expect(body.error).toMatch(/could not be reached/)
      // The log says why: the discovery request failed (nothing listens on that port).
      expect(unreachable.logs.filter((line) => line.startsWith('oidc: ')).at(-1)).toMatch(/^oidc: discovery failed: /)
    } finally {
      await unreachable.stop()
    }
  })
})

/** A Browser holding this session cookie for the vault. */
function browserWithSession(cookie: string, origin = base): Browser {
  const browser = new Browser()
  browser.cookies.push({ name: 'svc_session', value: cookie, origin, path: '/' })
  return browser
}

/** POST /api/auth/oidc/link from a signed-in browser: the provider URL it redirects to. */
async function startLink(browser: Browser): Promise<URL> {
  const response = await browser.request(`${base}/api/auth/oidc/link`, { method: 'POST' })
  expect(response.status).toBe(302)
  expect(response.headers.getSetCookie().some((line) => line.startsWith('svc_oidc='))).toBe(true)
  return new URL(response.headers.get('location')!)
}

describe('issue 14: account takeover through single sign-on', () => {
  test("the attack fails at every step: a squatted password account never gets the victim's identity", async () => {
    // The attacker registers a password account with the victim's e-mail (sign-up open) and plants a secret.
    const victimEmail = uniqueEmail('victim')
    const attacker = await signUp(base, victimEmail, 'attacker password 1')
    expect((await attacker.post('/api/categories', { name: 'Bait', keyType: 'group' })).status).toBe(201)
    const victimSubject = account({ email: victimEmail, email_verified: true, name: 'Victim' })

    // Step 1: the victim's first single sign-on with a verified e-mail is refused; no session, nothing linked.
    const first = await toCallback(victimSubject)
    const refused = await expectFailed(await first.browser.request(first.callbackUrl))
    expect(refused.error).toContain('sign in with your password, then link the provider in Settings')
    expect((await me(first.browser)).status).toBe(401)
    expect(vault.deps.accounts.userById(attacker.user.id)!.identities).toEqual([])

    // Step 2: the attacker starts a link from their session and gets the victim to finish it at the
    // provider: the callback reaches the victim's browser, which lacks the attacker's transaction.
    const attackerBrowser = browserWithSession(attacker.credentials.cookie!)
    const lure = await startLink(attackerBrowser)
    const victimBrowser = new Browser()
    const landed = await passProvider(victimBrowser, lure, victimSubject)
    await expectFailed(await victimBrowser.request(landed))
    expect((await me(victimBrowser)).status).toBe(401)
    expect(vault.deps.accounts.userById(attacker.user.id)!.identities).toEqual([])

    // Step 3: trying again later still does not join, and the attacker's session sees no identity.
    const again = await toCallback(victimSubject)
    await expectFailed(await again.browser.request(again.callbackUrl))
    const status = await attacker.get('/api/auth/oidc/link')
    expect(status.status).toBe(200)
    expect(status.body).toEqual({ enabled: true, name: 'Test IdP', linked: false, canUnlink: true })
    // The attacker's password never signed the victim in anywhere: their account holds only the bait.
    expect(vault.deps.accounts.userByIdentity(provider.issuer, victimSubject)).toBeUndefined()
  })

  test('the owner links from a signed-in session: other sessions end, this one stays, single sign-on then reaches the account', async () => {
    const owner = await signUp(base)
    const other = await fetch(`${base}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: owner.email, password: 'correct horse battery' }),
    })
    const otherCookie = sessionCookie(other.headers)!
    const sub = account({ email: owner.email, email_verified: true })

    const browser = browserWithSession(owner.credentials.cookie!)
    const callbackUrl = await passProvider(browser, await startLink(browser), sub)
    const linked = await browser.request(callbackUrl)
    expect(linked.status).toBe(302)
    expect(linked.headers.get('location')).toBe('/settings')
    expect(sessionCookie(linked.headers)).toBeUndefined()
    expect((await me(browser)).body.user.id).toBe(owner.user.id)
    // Every other session of the account has ended.
    const stale = await fetch(`${base}/api/auth/me`, { headers: { cookie: `svc_session=${otherCookie}` } })
    expect(stale.status).toBe(401)
    expect((await owner.get('/api/auth/oidc/link')).body.linked).toBe(true)

    // Single sign-on now signs in to the owner's account.
    const signIn = await toCallback(sub)
    expect((await signIn.browser.request(signIn.callbackUrl)).status).toBe(302)
    expect((await me(signIn.browser)).body.user.id).toBe(owner.user.id)

    // Another account cannot link the same identity.
    const someoneElse = await signUp(base)
    const elseBrowser = browserWithSession(someoneElse.credentials.cookie!)
    const elseCallback = await passProvider(elseBrowser, await startLink(elseBrowser), sub)
    await expectFailed(await elseBrowser.request(elseCallback))
    expect(vault.deps.accounts.userByIdentity(provider.issuer, sub)!.id).toBe(owner.user.id)

    // Unlinking (a password remains): 204; single sign-on is refused again.
    const unlinked = await owner.delete('/api/auth/oidc/link')
    expect(unlinked.status).toBe(204)
    expect((await owner.get('/api/auth/oidc/link')).body.linked).toBe(false)
    const after = await toCallback(sub)
    await expectFailed(await after.browser.request(after.callbackUrl))
  })

  test('a link must be finished by the session that started it', async () => {
    const owner = await signUp(base)
    const sub = account({ email: owner.email, email_verified: true })
    const browser = browserWithSession(owner.credentials.cookie!)
    const callbackUrl = await passProvider(browser, await startLink(browser), sub)
    // The session ends (sign-out) before the callback: nothing is linked.
    expect((await owner.post('/api/auth/logout')).status).toBe(204)
    await expectFailed(await browser.request(callbackUrl))
    expect(vault.deps.accounts.userById(owner.user.id)!.identities).toEqual([])
  })

  test('link needs a session; unlinking the only way in is 409 LAST_SIGN_IN_METHOD', async () => {
    expect((await fetch(`${base}/api/auth/oidc/link`, { method: 'POST', redirect: 'manual' })).status).toBe(401)
    expect((await fetch(`${base}/api/auth/oidc/link`, { method: 'DELETE' })).status).toBe(401)
    // An account made through single sign-on has no password.
    const { browser, callbackUrl } = await toCallback(account())
    expect((await browser.request(callbackUrl)).status).toBe(302)
    const refused = await browser.request(`${base}/api/auth/oidc/link`, { method: 'DELETE' })
    expect(refused.status).toBe(409)
    expect(await refused.json()).toEqual({ error: expect.any(String), code: 'LAST_SIGN_IN_METHOD' })
    expect((await me(browser)).status).toBe(200)
    const status = (await (await browser.request(`${base}/api/auth/oidc/link`)).json()) as any
    expect(status).toMatchObject({ linked: true, canUnlink: false })
  })

  test('OIDC callbacks are throttled per client address: past 60 in 15 minutes, 429 with Retry-After', async () => {
    const dataDir = tempDir()
    const limited = await startOidcVault(provider, { dataDir })
    try {
      const answers = await Promise.all(Array.from({ length: 61 }, () => fetch(`${limited.url}${CALLBACK}?code=x&state=y`, { redirect: 'manual' })))
      const statuses = answers.map((response) => response.status)
      expect(statuses.filter((status) => status === 400)).toHaveLength(60)
      const throttled = answers.find((response) => response.status === 429)!
      expect(await throttled.json()).toEqual({ error: expect.any(String), code: 'TOO_MANY_ATTEMPTS' })
      expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0)
    } finally {
      await limited.stop()
      removeDir(dataDir)
    }
  })

  test('new single sign-on accounts count toward SVC_REGISTER_LIMIT', async () => {
    const dataDir = tempDir()
    const limited = await startOidcVault(provider, { dataDir, env: { SVC_REGISTER_LIMIT: '1' } })
    try {
      const first = await toCallback(account(), limited.url)
      expect((await first.browser.request(first.callbackUrl)).status).toBe(302)
      const second = await toCallback(account(), limited.url)
      const response = await second.browser.request(second.callbackUrl)
      expect(response.status).toBe(429)
      expect(((await response.json()) as any).code).toBe('TOO_MANY_ATTEMPTS')
    } finally {
      await limited.stop()
      removeDir(dataDir)
    }
  })

  test('SVC_SIGNUP=first: a first single sign-on makes the only account; a second new identity gets 403 SIGNUP_DISABLED', async () => {
    const dataDir = tempDir()
    const first = await startOidcVault(provider, { dataDir, env: { SVC_SIGNUP: 'first' } })
    try {
      const owner = await toCallback(account(), first.url)
      expect((await owner.browser.request(owner.callbackUrl)).status).toBe(302)
      expect((await me(owner.browser, first.url)).status).toBe(200)
      const stranger = await toCallback(account(), first.url)
      await expectFailed(await stranger.browser.request(stranger.callbackUrl), 403, 'SIGNUP_DISABLED')
      expect(first.deps.accounts.users()).toHaveLength(1)
    } finally {
      await first.stop()
      removeDir(dataDir)
    }
  })
})
