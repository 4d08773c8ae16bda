// Every operation of the OpenAPI document, called once, leaves exactly the events it should in its
// user's audit log (issue 17): one per action, none for reads that show no secret. A new
// operation without a case here fails the test, so it cannot join the API unaudited by accident.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { storedAuditLines, storedAuditText } from '../support/audit-file'
import { PgStore } from '../../src/store/postgres/store'
import { Client, sessionCookie, signUp, uniqueEmail, PASSWORD } from '../support/client'
import { Browser, startOidcVault, startTestProvider, VAULT_CALLBACK as CALLBACK, type TestProvider } from '../support/oidc-provider'
import { removeDir, type TestServer } from '../support/server'
import { enableTwoFactor, oathtool, post } from '../account/support'
import { SoftPasskey } from './soft-passkey'
import { SCOPES } from '../../src/auth/scopes'

const METRICS_TOKEN = 'walk-metrics-token-0123456789'
const NEW_PASSWORD = 'another horse battery'
let provider: TestProvider
let server: TestServer
let base: string

beforeAll(async () => {
  provider = await startTestProvider()
  server = await startOidcVault(provider, { env: { SVC_METRICS_TOKEN: METRICS_TOKEN } })
  base = server.url
})
afterAll(async () => {
  await server?.stop()
  await provider?.stop()
  if (server) removeDir(server.dataDir)
})

/** A log's actions, wherever the server keeps it (the data folder, or the database). */
async function actionsIn(userId: string | null): Promise<string[]> {
  return (await storedAuditLines(server, userId)).map((line) => JSON.parse(line).action)
}

/** Whether a vault's log exists: its file, or its row. */
async function logExists(userId: string): Promise<boolean> {
  if (server.deps.store instanceof PgStore) {
    const rows = await server.deps.store.db.run((sql) => sql`SELECT 1 FROM svc_audit_logs WHERE log_id = ${userId}`)
    return rows.length > 0
  }
  return existsSync(join(server.dataDir, 'vaults', `${userId}.audit.log`))
}

/** Walks the provider's pages up to its redirect back to the vault's callback. */
async function passProvider(browser: Browser, authorizationUrl: string, login: string): Promise<URL> {
  let step = await browser.follow(authorizationUrl, `${base}${CALLBACK}`)
  for (let pages = 0; !step.stopped && pages < 4; pages++) {
    const html = await step.response.text()
    const prompt = /name="prompt" value="([a-z]+)"/.exec(html)?.[1]
    if (prompt === 'login') step = await browser.follow(step.url, `${base}${CALLBACK}`, { form: { prompt, login, password: 'any' } })
    else if (prompt === 'consent') step = await browser.follow(step.url, `${base}${CALLBACK}`, { form: { prompt } })
    else throw new Error(`unexpected provider page ${step.response.status}`)
  }
  return step.url
}

interface Case {
  /** Whose log to look at (null: the server's). */
  user: () => string | null
  expected: string[]
  /** What the server's log gains (default: nothing). */
  serverExpected?: string[]
  /** Made before the logs are read: what the operation needs, whatever events that leaves. */
  setup?: () => Promise<void>
  run: () => Promise<{ status: number }>
  status: number
}

test('every operation in the OpenAPI document leaves exactly its events', async () => {
  const doc = (await (await fetch(`${base}/api/openapi`)).json()) as { paths: Record<string, Record<string, { operationId: string }>> }
  const alice = await signUp(base)
  const key = await alice.keyClient([...SCOPES])
  const ids: Record<string, string> = {}
  let invitee: Awaited<ReturnType<typeof signUp>> | undefined
  let walkMember: Awaited<ReturnType<typeof signUp>> | undefined
  const email = uniqueEmail('walk')
  let registered: (Client & { user: any }) | null = null
  let oidcUser = ''
  let oidcBrowser: Browser | null = null
  let linkBrowser: Browser | null = null
  const me = () => alice.user.id as string
  // The session that goes on after linking single sign-on (linking ended alice's other sessions).
  const session = () => new Client(base, { cookie: linkBrowser!.cookie(base, 'svc_session')! })
  const carolEmail = uniqueEmail('account')
  let carol: (Client & { user: any }) | null = null
  const carolId = () => carol?.user.id ?? null
  let recoveryCodes: string[] = []
  let passkey: SoftPasskey | null = null

  const cases: Record<string, Case> = {
    getSignInMethods: { user: me, expected: [], status: 200, run: () => alice.anonymous().get('/api/auth/providers') },
    register: {
      user: () => registered?.user.id ?? null,
      expected: ['auth.register'],
      status: 201,
      run: async () => {
        registered = await signUp(base, email)
        return { status: 201 }
      },
    },
    login: {
      user: () => registered!.user.id,
      expected: ['auth.login'],
      status: 200,
      run: () => alice.anonymous().post('/api/auth/login', { email, password: PASSWORD }),
    },
    getCurrentUser: { user: me, expected: [], status: 200, run: () => key.get('/api/auth/me') },
    logout: { user: () => registered!.user.id, expected: ['auth.logout'], status: 204, run: () => registered!.post('/api/auth/logout') },
    startOidcSignIn: {
      user: me,
      expected: [],
      status: 302,
      run: async () => {
        oidcBrowser = new Browser()
        const response = await oidcBrowser.request(`${base}/api/auth/oidc`)
        ids.authorizationUrl = response.headers.get('location')!
        return response
      },
    },
    completeOidcSignIn: {
      user: () => oidcUser,
      expected: ['auth.login'],
      status: 302,
      run: async () => {
        const sub = `walk-${Date.now()}`
        provider.accounts.set(sub, { email: uniqueEmail('oidc'), email_verified: true, name: 'Walker' })
        const callback = await passProvider(oidcBrowser!, ids.authorizationUrl, sub)
        const response = await oidcBrowser!.request(callback)
        const who = await (await oidcBrowser!.request(`${base}/api/auth/me`)).json()
        oidcUser = (who as any).user.id
        return response
      },
    },
    getOidcLink: { user: me, expected: [], status: 200, run: () => alice.get('/api/auth/oidc/link') },
    linkOidcIdentity: {
      user: me,
      expected: [],
      status: 302,
      run: async () => {
        linkBrowser = new Browser()
        linkBrowser.cookies.push({ name: 'svc_session', value: alice.credentials.cookie!, origin: base, path: '/' } as any)
        const response = await linkBrowser.request(`${base}/api/auth/oidc/link`, { method: 'POST' })
        const sub = `link-${Date.now()}`
        provider.accounts.set(sub, { email: uniqueEmail('link'), email_verified: true, name: 'Linker' })
        ids.linkCallback = (await passProvider(linkBrowser, response.headers.get('location')!, sub)).href
        return response
      },
    },
    unlinkOidcIdentity: {
      user: me,
      // The link's callback (auth.oidc_link), then the unlink.
      expected: ['auth.oidc_link', 'auth.oidc_unlink'],
      status: 204,
      run: async () => {
        expect((await linkBrowser!.request(ids.linkCallback)).status).toBe(302)
        // Linking ended the other sessions; the browser's session goes on.
        const cookie = linkBrowser!.cookie(base, 'svc_session')!
        return new Client(base, { cookie }).delete('/api/auth/oidc/link')
      },
    },
    listAccessKeys: {
      user: me,
      expected: [],
      status: 200,
      run: () => new Client(base, { cookie: linkBrowser!.cookie(base, 'svc_session')! }).get('/api/access-keys'),
    },
    createAccessKey: {
      user: me,
      expected: ['access_key.create'],
      status: 201,
      run: async () => {
        const answer = await new Client(base, { cookie: linkBrowser!.cookie(base, 'svc_session')! }).post('/api/access-keys', {
          name: 'walk',
          scopes: ['stats:read'],
        })
        ids.key = answer.body.id
        return answer
      },
    },
    revokeAccessKey: {
      user: me,
      expected: ['access_key.revoke'],
      status: 204,
      run: () => new Client(base, { cookie: linkBrowser!.cookie(base, 'svc_session')! }).delete(`/api/access-keys/${ids.key}`),
    },
    createCategory: {
      user: me,
      expected: ['category.create'],
      status: 201,
      run: async () => {
        const answer = await key.post('/api/categories', { name: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' })
        ids.category = answer.body.id
        return answer
      },
    },
    listCategories: { user: me, expected: [], status: 200, run: () => key.get('/api/categories') },
    getCategory: { user: me, expected: [], status: 200, run: () => key.get(`/api/categories/${ids.category}`) },
    updateCategory: { user: me, expected: ['category.update'], status: 200, run: () => key.put(`/api/categories/${ids.category}`, { description: 'model' }) },
    createEntry: {
      user: me,
      expected: ['entry.create'],
      status: 201,
      run: async () => {
        const answer = await key.post('/api/entries', { categoryId: ids.category, name: 'blog', value: 'sk-walk', environment: 'production' })
        ids.entry = answer.body.id
        return answer
      },
    },
    listEntries: { user: me, expected: [], status: 200, run: () => key.get('/api/entries') },
    getEntry: { user: me, expected: [], status: 200, run: () => key.get(`/api/entries/${ids.entry}`) },
    updateEntry: { user: me, expected: ['entry.update'], status: 200, run: () => key.put(`/api/entries/${ids.entry}`, { notes: 'rotated' }) },
    revealEntry: { user: me, expected: ['entry.reveal'], status: 200, run: () => key.post(`/api/entries/${ids.entry}/reveal`) },
    exportEnv: { user: me, expected: ['export.read'], status: 200, run: () => key.get('/api/export?environment=production') },
    extractEnv: { user: me, expected: ['ai.extract'], status: 200, run: () => key.post('/api/ai/extract', { prompt: 'a blog using OpenAI in production' }) },
    importConfig: {
      user: me,
      expected: ['ai.import'],
      status: 200,
      run: () => key.post('/api/ai/import', { text: 'RESEND_API_KEY=re_walk\n', apply: true, name: 'walk' }),
    },
    getStats: { user: me, expected: [], status: 200, run: () => key.get('/api/stats') },
    deleteEntry: { user: me, expected: ['entry.delete'], status: 204, run: () => key.delete(`/api/entries/${ids.entry}`) },
    deleteCategory: { user: me, expected: ['category.delete'], status: 204, run: () => key.delete(`/api/categories/${ids.category}`) },
    createTwoFactorToken: {
      user: me,
      expected: ['twofa.create'],
      status: 201,
      run: async () => {
        const answer = await key.post('/api/2fa', { service: 'GitHub', accountName: 'me', secret: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP' })
        ids.token = answer.body.id
        return answer
      },
    },
    listTwoFactorTokens: { user: me, expected: [], status: 200, run: () => key.get('/api/2fa') },
    getTwoFactorToken: { user: me, expected: [], status: 200, run: () => key.get(`/api/2fa/${ids.token}`) },
    updateTwoFactorToken: { user: me, expected: ['twofa.update'], status: 200, run: () => key.put(`/api/2fa/${ids.token}`, { notes: 'phone' }) },
    revealTwoFactorCode: { user: me, expected: ['twofa.reveal'], status: 200, run: () => key.post(`/api/2fa/${ids.token}/reveal`) },
    // Issue 35: a preview writes nothing (no event); an applied import is one event.
    importTwoFactorTokens: {
      user: me,
      expected: ['twofa.import'],
      status: 200,
      run: async () => {
        const content = 'otpauth://totp/Walk:me?secret=KRSXG5CTMVRXEZLUKRSXG5CT&issuer=Walk\n'
        expect((await key.post('/api/2fa/import', { content })).status).toBe(200)
        return key.post('/api/2fa/import', { content, apply: true })
      },
    },
    exportTwoFactorTokens: {
      user: me,
      expected: ['twofa.export'],
      status: 200,
      run: () => alice.post('/api/2fa/export', { format: 'otpauth', password: PASSWORD }),
    },
    deleteTwoFactorToken: { user: me, expected: ['twofa.delete'], status: 204, run: () => key.delete(`/api/2fa/${ids.token}`) },
    createEnvProject: {
      user: me,
      expected: ['envproject.create'],
      status: 201,
      run: async () => {
        const answer = await key.post('/api/envs', { name: 'walk' })
        ids.project = answer.body.data.id
        return answer
      },
    },
    listEnvProjects: { user: me, expected: [], status: 200, run: () => key.get('/api/envs') },
    getEnvProject: { user: me, expected: [], status: 200, run: () => key.get(`/api/envs/${ids.project}`) },
    updateEnvProject: { user: me, expected: ['envproject.update'], status: 200, run: () => key.put(`/api/envs/${ids.project}`, { description: 'walked' }) },
    saveEnvFile: {
      user: me,
      // Created, then replaced.
      expected: ['envfile.create', 'envfile.update'],
      status: 200,
      run: async () => {
        const created = await key.post(`/api/envs/${ids.project}/files`, { fileType: 'env', content: 'A=1\n' })
        expect(created.status).toBe(201)
        ids.file = created.body.data.id
        return key.post(`/api/envs/${ids.project}/files`, { fileType: 'env', content: 'A=2\n' })
      },
    },
    revealEnvFile: { user: me, expected: ['envfile.read'], status: 200, run: () => key.post(`/api/envs/${ids.project}/files/${ids.file}/reveal`) },
    deleteEnvFile: { user: me, expected: ['envfile.delete'], status: 204, run: () => key.delete(`/api/envs/${ids.project}/files/${ids.file}`) },
    deleteEnvProject: { user: me, expected: ['envproject.delete'], status: 204, run: () => key.delete(`/api/envs/${ids.project}`) },
    listAuditEvents: { user: me, expected: [], status: 200, run: () => key.get('/api/audit') },
    exportAuditLog: { user: me, expected: [], status: 200, run: () => key.get('/api/audit/export') },
    // Version history (issue 20): a reveal of a previous value is a read of a secret.
    listEntryVersions: {
      user: me,
      expected: [],
      status: 200,
      setup: async () => {
        const category = await key.post('/api/categories', { name: 'Versions', keyType: 'simple', envVarName: 'VERSIONED_KEY' })
        const entry = await key.post('/api/entries', { categoryId: category.body.id, name: 'versioned', value: 'sk-first' })
        ids.versioned = entry.body.id
        expect((await key.put(`/api/entries/${ids.versioned}`, { value: 'sk-second' })).status).toBe(200)
      },
      run: () => key.get(`/api/entries/${ids.versioned}/versions`),
    },
    revealEntryVersion: { user: me, expected: ['entry.version_reveal'], status: 200, run: () => key.post(`/api/entries/${ids.versioned}/versions/1/reveal`) },
    restoreEntryVersion: {
      user: me,
      expected: ['entry.version_restore'],
      status: 200,
      run: () => key.post(`/api/entries/${ids.versioned}/versions/1/restore`),
    },
    listTwoFactorTokenVersions: {
      user: me,
      expected: [],
      status: 200,
      setup: async () => {
        const token = await key.post('/api/2fa', { service: 'Versions', accountName: 'me', secret: 'JBSWY3DPEHPK3PXP' })
        ids.versionedToken = token.body.id
        expect((await key.put(`/api/2fa/${ids.versionedToken}`, { secret: 'KRSXG5CTMVRXEZLUKRSXG5CT' })).status).toBe(200)
      },
      run: () => key.get(`/api/2fa/${ids.versionedToken}/versions`),
    },
    revealTwoFactorTokenVersion: {
      user: me,
      expected: ['twofa.version_reveal'],
      status: 200,
      run: () => key.post(`/api/2fa/${ids.versionedToken}/versions/1/reveal`),
    },
    restoreTwoFactorTokenVersion: {
      user: me,
      expected: ['twofa.version_restore'],
      status: 200,
      run: () => key.post(`/api/2fa/${ids.versionedToken}/versions/1/restore`),
    },
    listEnvFileVersions: {
      user: me,
      expected: [],
      status: 200,
      setup: async () => {
        const project = await key.post('/api/envs', { name: 'versions' })
        ids.versionedProject = project.body.data.id
        const file = await key.post(`/api/envs/${ids.versionedProject}/files`, { fileType: 'env', content: 'B=1\n' })
        ids.versionedFile = file.body.data.id
        expect((await key.post(`/api/envs/${ids.versionedProject}/files`, { fileType: 'env', content: 'B=2\n' })).status).toBe(200)
      },
      run: () => key.get(`/api/envs/${ids.versionedProject}/files/${ids.versionedFile}/versions`),
    },
    revealEnvFileVersion: {
      user: me,
      expected: ['envfile.version_reveal'],
      status: 200,
      run: () => key.post(`/api/envs/${ids.versionedProject}/files/${ids.versionedFile}/versions/1/reveal`),
    },
    restoreEnvFileVersion: {
      user: me,
      expected: ['envfile.version_restore'],
      status: 200,
      run: () => key.post(`/api/envs/${ids.versionedProject}/files/${ids.versionedFile}/versions/1/restore`),
    },
    // The trash: what the walk deleted above.
    listTrash: {
      user: me,
      expected: [],
      status: 200,
      run: async () => {
        const answer = await key.get('/api/trash')
        const of = (kind: string) => answer.body.find((item: any) => item.kind === kind)?.id
        ids.trashedToken = of('twoFactor')
        ids.trashedFile = of('envFile') ?? of('envProject')
        return answer
      },
    },
    restoreTrashItem: { user: me, expected: ['trash.restore'], status: 200, run: () => key.post(`/api/trash/${ids.trashedToken}/restore`) },
    purgeTrashItem: { user: me, expected: ['trash.purge'], status: 204, run: () => session().delete(`/api/trash/${ids.trashedFile}`) },
    emptyTrash: { user: me, expected: ['trash.purge'], status: 204, run: () => session().delete('/api/trash') },
    getNotificationSettings: { user: me, expected: [], status: 200, run: () => session().get('/api/account/notifications') },
    updateNotificationSettings: {
      user: me,
      expected: ['notifications.update'],
      status: 200,
      run: () => session().put('/api/account/notifications', { webhookUrl: null }),
    },
    // Device sign-in (svc login): the key it hands out is recorded in the approving user's log.
    startDeviceLogin: {
      user: me,
      expected: [],
      status: 200,
      run: async () => {
        const answer = await alice.anonymous().post('/api/auth/device', { deviceName: 'walk-box' })
        ids.deviceCode = answer.body.deviceCode
        ids.userCode = answer.body.userCode
        return answer
      },
    },
    getDeviceLogin: { user: me, expected: [], status: 200, run: () => session().get(`/api/auth/device/${ids.userCode}`) },
    approveDeviceLogin: { user: me, expected: ['device_login.approve'], status: 200, run: () => session().post(`/api/auth/device/${ids.userCode}/approve`) },
    pollDeviceLogin: {
      user: me,
      expected: ['access_key.create'],
      status: 200,
      run: async () => {
        const answer = await alice.anonymous().post('/api/auth/device/token', { deviceCode: ids.deviceCode })
        ids.deviceKey = answer.body.key
        return answer
      },
    },
    getCurrentAccessKey: { user: me, expected: [], status: 200, run: () => alice.withKey(ids.deviceKey).get('/api/auth/key') },
    revokeCurrentAccessKey: { user: me, expected: ['access_key.revoke'], status: 204, run: () => alice.withKey(ids.deviceKey).delete('/api/auth/key') },
    denyDeviceLogin: {
      user: me,
      expected: ['device_login.deny'],
      status: 200,
      setup: async () => {
        ids.deniedCode = (await alice.anonymous().post('/api/auth/device', { deviceName: 'denied-box' })).body.userCode
      },
      run: () => session().post(`/api/auth/device/${ids.deniedCode}/deny`),
    },
    getHealth: { user: me, expected: [], status: 200, run: () => alice.anonymous().get('/healthz') },
    getReadiness: { user: me, expected: [], status: 200, run: () => alice.anonymous().get('/readyz') },
    getMetrics: { user: me, expected: [], status: 200, run: () => alice.anonymous().get('/metrics', { authorization: `Bearer ${METRICS_TOKEN}` }) },
    // The account (issue 16), on an account of its own: it is deleted at the end.
    listSessions: {
      user: carolId,
      expected: [],
      status: 200,
      setup: async () => {
        carol = await signUp(base, carolEmail)
      },
      run: () => carol!.get('/api/account/sessions'),
    },
    listRecentAdditions: { user: carolId, expected: [], status: 200, run: () => carol!.get('/api/account/recent-additions') },
    setupAccountTwoFactor: {
      user: carolId,
      expected: [],
      status: 200,
      run: async () => {
        const answer = await carol!.post('/api/account/2fa/setup', { password: PASSWORD })
        ids.twoFactorSecret = answer.body.secret
        return answer
      },
    },
    enableAccountTwoFactor: {
      user: carolId,
      expected: ['auth.twofa_change'],
      status: 200,
      run: async () => {
        const answer = await carol!.post('/api/account/2fa/enable', { code: oathtool(ids.twoFactorSecret, Date.now()) })
        recoveryCodes = answer.body.recoveryCodes
        return answer
      },
    },
    completeTwoFactorLogin: {
      user: carolId,
      expected: ['auth.login'],
      status: 200,
      setup: async () => {
        const first = await post(base, '/api/auth/login', { email: carolEmail, password: PASSWORD })
        expect(first.body).toEqual({ twoFactorRequired: true })
        ids.challenge = first.cookies.svc_2fa
      },
      run: async () => {
        const answer = await post(base, '/api/auth/login/2fa', { recoveryCode: recoveryCodes[0] }, { svc_2fa: ids.challenge })
        ids.secondSession = answer.cookies.svc_session
        return answer
      },
    },
    regenerateRecoveryCodes: {
      user: carolId,
      expected: ['auth.twofa_change'],
      status: 200,
      run: async () => {
        const answer = await carol!.post('/api/account/2fa/recovery-codes', { password: PASSWORD, recoveryCode: recoveryCodes[1] })
        recoveryCodes = answer.body.recoveryCodes
        return answer
      },
    },
    disableAccountTwoFactor: {
      user: carolId,
      expected: ['auth.twofa_change'],
      status: 204,
      run: () => carol!.post('/api/account/2fa/disable', { password: PASSWORD, recoveryCode: recoveryCodes[0] }),
    },
    endSession: {
      user: carolId,
      expected: ['auth.session_end'],
      status: 204,
      run: async () => {
        const other = new Client(base, { cookie: ids.secondSession })
        const id = (await other.get('/api/account/sessions')).body.find((s: any) => s.current).id
        return carol!.delete(`/api/account/sessions/${id}`)
      },
    },
    endOtherSessions: {
      user: carolId,
      expected: ['auth.session_end'],
      status: 204,
      setup: async () => {
        expect((await post(base, '/api/auth/login', { email: carolEmail, password: PASSWORD })).status).toBe(200)
      },
      run: () => carol!.post('/api/account/sessions/revoke-others'),
    },
    passkeyRegistrationOptions: {
      user: carolId,
      expected: [],
      status: 200,
      run: async () => {
        const answer = await carol!.post('/api/account/passkeys/options')
        passkey = new SoftPasskey(base)
        ids.registration = JSON.stringify(passkey.register(answer.body))
        return answer
      },
    },
    registerPasskey: {
      user: carolId,
      expected: ['passkey.create'],
      status: 201,
      run: async () => {
        const answer = await carol!.post('/api/account/passkeys', { name: 'walk key', response: JSON.parse(ids.registration) })
        ids.passkey = answer.body.id
        return answer
      },
    },
    listPasskeys: { user: carolId, expected: [], status: 200, run: () => carol!.get('/api/account/passkeys') },
    passkeySignInOptions: {
      user: carolId,
      expected: [],
      status: 200,
      run: async () => {
        const answer = await post(base, '/api/auth/passkey/options', {})
        ids.passkeyChallenge = answer.cookies.svc_passkey
        ids.assertion = JSON.stringify(passkey!.signIn(answer.body))
        return answer
      },
    },
    passkeySignIn: {
      user: carolId,
      expected: ['auth.login'],
      status: 200,
      run: () => post(base, '/api/auth/passkey/login', { response: JSON.parse(ids.assertion) }, { svc_passkey: ids.passkeyChallenge }),
    },
    // Re-authentication (issue 36), with the passkey: the options leave nothing, the proof its event.
    getReauthStatus: { user: carolId, expected: [], status: 200, run: () => carol!.get('/api/auth/reauth') },
    reauthPasskeyOptions: {
      user: carolId,
      expected: [],
      status: 200,
      run: async () => {
        const answer = await post(base, '/api/auth/reauth/options', {}, { svc_session: carol!.credentials.cookie! })
        ids.reauthChallenge = answer.cookies.svc_reauth
        ids.reauthAssertion = JSON.stringify(passkey!.signIn(answer.body))
        return answer
      },
    },
    reauthenticate: {
      user: carolId,
      expected: ['auth.reauth'],
      status: 200,
      run: () =>
        post(
          base,
          '/api/auth/reauth',
          { passkey: JSON.parse(ids.reauthAssertion) },
          { svc_session: carol!.credentials.cookie!, svc_reauth: ids.reauthChallenge },
        ),
    },
    deletePasskey: {
      user: carolId,
      expected: ['passkey.delete'],
      status: 204,
      setup: async () => {
        // The two-step (with a recovery code: issue 32 names it apart) and passkey sign-ins are named so; the 2FA changes say which.
        const events = (await storedAuditLines(server, carolId())).map((line) => JSON.parse(line))
        expect(events.filter((e) => e.action === 'auth.login').map((e) => e.details.method)).toEqual(['recovery_code', 'password', 'passkey'])
        expect(events.filter((e) => e.action === 'auth.twofa_change').map((e) => e.details.change)).toEqual(['enabled', 'recovery_codes', 'disabled'])
      },
      run: () => carol!.delete(`/api/account/passkeys/${ids.passkey}`),
    },
    changePassword: {
      user: carolId,
      expected: ['auth.password_change'],
      status: 204,
      run: () => carol!.post('/api/account/password', { currentPassword: PASSWORD, newPassword: NEW_PASSWORD }),
    },
    deleteAccount: {
      // The account's own log goes with it: the deletion is in the server's log.
      user: () => ids.carol,
      expected: [],
      serverExpected: ['account.delete'],
      status: 204,
      setup: async () => {
        ids.carol = carol!.user.id
        expect(await logExists(ids.carol)).toBe(true)
      },
      run: async () => {
        const answer = await carol!.request('DELETE', '/api/account', { password: NEW_PASSWORD })
        expect(await logExists(ids.carol)).toBe(false)
        return answer
      },
    },
    getOpenApiDocument: { user: me, expected: [], status: 200, run: () => alice.anonymous().get('/api/openapi') },
    // Shared vaults (issue 33): the vault's own events are in its own log.
    listVaults: { user: me, expected: [], status: 200, run: () => session().get('/api/vaults') },
    createVault: {
      user: () => ids.vault ?? null,
      expected: ['vault.create'],
      status: 201,
      run: async () => {
        const answer = await session().post('/api/vaults', { name: 'walk' })
        ids.vault = answer.body.id
        return answer
      },
    },
    getVault: { user: () => ids.vault, expected: [], status: 200, run: () => session().get(`/api/vaults/${ids.vault}`) },
    updateVault: {
      user: () => ids.vault,
      expected: ['vault.rename'],
      status: 200,
      run: () => session().request('PATCH', `/api/vaults/${ids.vault}`, { name: 'walked' }),
    },
    listVaultMembers: { user: () => ids.vault, expected: [], status: 200, run: () => session().get(`/api/vaults/${ids.vault}/members`) },
    updateVaultMember: {
      user: () => ids.vault,
      expected: ['member.role_change'],
      status: 200,
      setup: async () => {
        walkMember = await signUp(base)
        ids.member = walkMember.user.id
        await server.deps.sharedVaults.addMember(ids.vault, ids.member, 'viewer', me())
      },
      run: () => session().request('PATCH', `/api/vaults/${ids.vault}/members/${ids.member}`, { role: 'editor' }),
    },
    removeVaultMember: {
      user: () => ids.vault,
      expected: ['member.remove'],
      status: 204,
      setup: async () => {
        // A secret the member reads: on the rotation list once they are removed.
        const vault = `/api/vaults/${ids.vault}`
        const category = await session().post(`${vault}/categories`, { name: 'Walk', keyType: 'simple', envVarName: 'WALK_KEY' })
        ids.vaultEntry = (await session().post(`${vault}/entries`, { categoryId: category.body.id, name: 'walk', value: 'sk-walk' })).body.id
        expect((await walkMember!.post(`${vault}/entries/${ids.vaultEntry}/reveal`)).status).toBe(200)
      },
      run: () => session().delete(`/api/vaults/${ids.vault}/members/${ids.member}`),
    },
    // Invites: made, revoked, accepted and declined in the vault's log.
    createVaultInvite: {
      user: () => ids.vault,
      expected: ['invite.create'],
      status: 201,
      run: async () => {
        const answer = await session().post(`/api/vaults/${ids.vault}/invites`, { role: 'viewer' })
        ids.inviteToken = answer.body.token
        return answer
      },
    },
    listVaultInvites: { user: () => ids.vault, expected: [], status: 200, run: () => session().get(`/api/vaults/${ids.vault}/invites`) },
    revokeVaultInvite: {
      user: () => ids.vault,
      expected: ['invite.revoke'],
      status: 204,
      setup: async () => {
        ids.revokedInvite = (await session().post(`/api/vaults/${ids.vault}/invites`, { role: 'viewer' })).body.id
      },
      run: () => session().delete(`/api/vaults/${ids.vault}/invites/${ids.revokedInvite}`),
    },
    acceptInviteLink: {
      user: () => ids.vault,
      expected: ['invite.accept'],
      status: 200,
      run: async () => (await signUp(base)).post('/api/invites/accept', { token: ids.inviteToken }),
    },
    listInvites: { user: me, expected: [], status: 200, run: () => session().get('/api/invites') },
    acceptInvite: {
      user: () => ids.vault,
      expected: ['invite.accept'],
      status: 200,
      setup: async () => {
        invitee = await signUp(base)
        ids.mailInvite = (await session().post(`/api/vaults/${ids.vault}/invites`, { role: 'editor', email: invitee.email })).body.id
      },
      run: () => invitee!.post(`/api/invites/${ids.mailInvite}/accept`),
    },
    declineInvite: {
      user: () => ids.vault,
      expected: ['invite.decline'],
      status: 204,
      setup: async () => {
        invitee = await signUp(base)
        ids.mailInvite = (await session().post(`/api/vaults/${ids.vault}/invites`, { role: 'editor', email: invitee.email })).body.id
      },
      run: () => invitee!.delete(`/api/invites/${ids.mailInvite}`),
    },
    moveVaultProject: {
      // In the vault's log and in the member's own (checked in run).
      user: () => ids.vault,
      expected: ['project.move'],
      status: 200,
      setup: async () => {
        const category = await session().post('/api/categories', { name: 'Walk move', keyType: 'simple', envVarName: 'WALK_MOVE' })
        expect((await session().post('/api/entries', { categoryId: category.body.id, name: 'walk-project', value: 'sk-walk-move' })).status).toBe(201)
      },
      run: async () => {
        const before = (await actionsIn(me())).length
        const answer = await session().post(`/api/vaults/${ids.vault}/move`, { direction: 'in', project: 'walk-project' })
        expect((await actionsIn(me())).slice(before)).toEqual(['project.move'])
        return answer
      },
    },
    listVaultRotation: { user: () => ids.vault, expected: [], status: 200, run: () => session().get(`/api/vaults/${ids.vault}/rotation`) },
    markVaultRotated: {
      user: () => ids.vault,
      expected: ['rotation.mark'],
      status: 200,
      setup: async () => {
        expect((await session().put(`/api/vaults/${ids.vault}/entries/${ids.vaultEntry}`, { value: 'sk-walk-2' })).status).toBe(200)
      },
      run: () => session().post(`/api/vaults/${ids.vault}/rotation/entry/${ids.vaultEntry}/rotated`),
    },
    deleteVault: { user: me, expected: ['vault.delete'], status: 204, run: () => session().delete(`/api/vaults/${ids.vault}`) },
  }

  // A shared vault's copy of a resource operation (x-required-role) leaves its personal twin's events, in the vault's log: test/vaults/audit.test.ts.
  const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.values(methods)
      .filter(
        (operation) =>
          !(
            path.startsWith('/api/vaults/{vaultId}/') &&
            (operation as { 'x-required-role'?: string })['x-required-role'] &&
            !path.includes('/members') &&
            !path.includes('/invites') &&
            !path.endsWith('/move') &&
            !path.includes('/rotation')
          ),
      )
      .map((operation) => operation.operationId),
  )
  // Every documented operation has a case, and every case a documented operation.
  expect(operations.filter((id) => !(id in cases)).sort()).toEqual([])
  expect(Object.keys(cases).filter((id) => !operations.includes(id))).toEqual([])

  for (const [operationId, item] of Object.entries(cases)) {
    await item.setup?.()
    const before = item.expected.length === 0 || item.user() ? (await actionsIn(item.user())).length : 0
    const serverBefore = (await actionsIn(null)).length
    const answer = await item.run()
    expect({ operationId, status: answer.status }).toEqual({ operationId, status: item.status })
    const added = (await actionsIn(item.user())).slice(before)
    expect({ operationId, events: added }).toEqual({ operationId, events: item.expected })
    expect({ operationId, serverEvents: (await actionsIn(null)).slice(serverBefore) }).toEqual({ operationId, serverEvents: item.serverExpected ?? [] })
  }

  // The sign-in methods are named; the device sign-in's key names its device; the deletion its account.
  const serverEvents = (await storedAuditLines(server, null)).map((line) => JSON.parse(line))
  const deletion = serverEvents.find((e) => e.action === 'account.delete')
  expect([deletion.outcome, deletion.actor.type, deletion.records]).toEqual(['ok', 'session', [{ kind: 'user', id: ids.carol, name: null }]])
  const walked = (await key.get('/api/audit?limit=500')).body.items
  const deviceKey = walked.find((e: any) => e.action === 'access_key.create' && e.actor.type === 'device-login')
  expect([deviceKey.actor.name, deviceKey.records[0].name, deviceKey.details.via]).toEqual(['walk-box', 'svc on walk-box', 'device_login'])
  expect(walked.find((e: any) => e.action === 'access_key.revoke' && e.actor.type === 'access-key').records[0].id).toBe(deviceKey.records[0].id)
  // A key that may see a trashed entry but not restore it: refused, and recorded as scope.denied.
  const category = await key.post('/api/categories', { name: 'Denied', keyType: 'simple', envVarName: 'DENIED_KEY' })
  const doomed = await key.post('/api/entries', { categoryId: category.body.id, name: 'doomed', value: 'sk-doomed' })
  expect((await key.delete(`/api/entries/${doomed.body.id}`)).status).toBe(204)
  const reader = await session().keyClient(['entries:read'])
  const trashed = (await reader.get('/api/trash')).body.find((item: any) => item.recordId === doomed.body.id)
  const refused = await reader.post(`/api/trash/${trashed.id}/restore`)
  expect([refused.status, refused.body.code]).toEqual([403, 'AUTH_SCOPE_REQUIRED'])
  const denied = JSON.parse((await storedAuditLines(server, me())).at(-1)!)
  expect([denied.action, denied.outcome, denied.details.required]).toEqual(['scope.denied', 'denied', 'entries:write'])
  // A wrong second-step code after the right password: a failed sign-in in the account's log.
  const daveEmail = uniqueEmail('dave')
  const dave = await signUp(base, daveEmail)
  await enableTwoFactor(dave, Date.now())
  const challenge = (await post(base, '/api/auth/login', { email: daveEmail, password: PASSWORD })).cookies.svc_2fa
  const wrong = await post(base, '/api/auth/login/2fa', { code: '12345678' }, { svc_2fa: challenge })
  expect([wrong.status, wrong.body.code]).toEqual([401, 'INVALID_TWO_FACTOR_CODE'])
  const failedStep = JSON.parse((await storedAuditLines(server, dave.user.id)).at(-1)!)
  expect([failedStep.action, failedStep.outcome, failedStep.details]).toEqual(['auth.login_failed', 'failed', { method: '2fa', reason: 'invalid_code' }])
  // A passkey nobody registered: a failed sign-in in the server's log.
  const options = await post(base, '/api/auth/passkey/options', {})
  const stranger = new SoftPasskey(base).signIn(options.body)
  expect((await post(base, '/api/auth/passkey/login', { response: stranger }, { svc_passkey: options.cookies.svc_passkey })).status).toBe(401)
  const strangerEvent = JSON.parse((await storedAuditLines(server, null)).at(-1)!)
  expect([strangerEvent.action, strangerEvent.outcome, strangerEvent.details.method]).toEqual(['auth.login_failed', 'failed', 'passkey'])
  const oidcEvents = await storedAuditText(server, oidcUser)
  expect(JSON.parse(oidcEvents.trim().split('\n')[0]).details.method).toBe('oidc')
  // A failed OIDC callback (no transaction) goes to the server's log.
  const failed = await new Browser().request(`${base}${CALLBACK}?code=x&state=y`)
  expect(failed.status).toBe(400)
  expect((await actionsIn(null)).at(-1)).toBe('auth.login_failed')
  // An export names its filters and how many values it sent; an extract the variable names.
  const events = (await alice.get('/api/audit?limit=500')).body.items
  expect(events.find((e: any) => e.action === 'export.read').details).toEqual({
    filters: { environment: 'production', name: null, format: 'dotenv' },
    count: 1,
    entries: 1,
  })
  expect(events.find((e: any) => e.action === 'ai.extract').details.names).toEqual(['OPENAI_API_KEY'])
}, 60_000)
