// Every operation of the OpenAPI document, called once, leaves exactly the events it should in its
// user's audit log (issue 17): one per action, none for reads that show no secret. A new
// operation without a case here fails the test, so it cannot join the API unaudited by accident.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Client, sessionCookie, signUp, uniqueEmail, PASSWORD } from '../support/client'
import { Browser, freePort, startTestProvider, type TestProvider } from '../support/oidc-provider'
import { startTestServer, removeDir, type TestServer } from '../support/server'

const CALLBACK = '/api/auth/oidc/callback'
let provider: TestProvider
let server: TestServer
let base: string

beforeAll(async () => {
  const port = await freePort()
  base = `http://127.0.0.1:${port}`
  provider = await startTestProvider({ redirectUris: [`${base}${CALLBACK}`] })
  server = await startTestServer({
    port,
    env: { SVC_OIDC_ISSUER: provider.issuer, SVC_OIDC_CLIENT_ID: provider.clientId, SVC_OIDC_CLIENT_SECRET: provider.clientSecret, SVC_BASE_URL: base },
  })
})
afterAll(async () => {
  await server?.stop()
  await provider?.stop()
  if (server) removeDir(server.dataDir)
})

function actionsIn(userId: string | null): string[] {
  const path = userId ? join(server.dataDir, 'vaults', `${userId}.audit.log`) : join(server.dataDir, 'audit.log')
  if (!existsSync(path)) return []
  return readFileSync(path, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line).action)
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
  run: () => Promise<{ status: number }>
  status: number
}

test('every operation in the OpenAPI document leaves exactly its events', async () => {
  const doc = (await (await fetch(`${base}/api/openapi`)).json()) as { paths: Record<string, Record<string, { operationId: string }>> }
  const alice = await signUp(base)
  const key = await alice.keyClient(['categories:read', 'categories:write', 'entries:read', 'entries:write', 'entries:reveal', '2fa:read', '2fa:write', '2fa:reveal', 'stats:read', 'export:read', 'ai:extract', 'envs:read', 'envs:write', 'envs:reveal', 'audit:read'])
  const ids: Record<string, string> = {}
  const email = uniqueEmail('walk')
  let registered: (Client & { user: any }) | null = null
  let oidcUser = ''
  let oidcBrowser: Browser | null = null
  let linkBrowser: Browser | null = null
  const me = () => alice.user.id as string

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
    login: { user: () => registered!.user.id, expected: ['auth.login'], status: 200, run: () => alice.anonymous().post('/api/auth/login', { email, password: PASSWORD }) },
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
    listAccessKeys: { user: me, expected: [], status: 200, run: () => new Client(base, { cookie: linkBrowser!.cookie(base, 'svc_session')! }).get('/api/access-keys') },
    createAccessKey: {
      user: me,
      expected: ['access_key.create'],
      status: 201,
      run: async () => {
        const answer = await new Client(base, { cookie: linkBrowser!.cookie(base, 'svc_session')! }).post('/api/access-keys', { name: 'walk', scopes: ['stats:read'] })
        ids.key = answer.body.id
        return answer
      },
    },
    revokeAccessKey: { user: me, expected: ['access_key.revoke'], status: 204, run: () => new Client(base, { cookie: linkBrowser!.cookie(base, 'svc_session')! }).delete(`/api/access-keys/${ids.key}`) },
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
    importConfig: { user: me, expected: ['ai.import'], status: 200, run: () => key.post('/api/ai/import', { text: 'RESEND_API_KEY=re_walk\n', apply: true, name: 'walk' }) },
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
    getOpenApiDocument: { user: me, expected: [], status: 200, run: () => alice.anonymous().get('/api/openapi') },
  }

  const operations = Object.values(doc.paths).flatMap((methods) => Object.values(methods).map((operation) => operation.operationId))
  // Every documented operation has a case, and every case a documented operation.
  expect(operations.filter((id) => !(id in cases)).sort()).toEqual([])
  expect(Object.keys(cases).filter((id) => !operations.includes(id))).toEqual([])

  for (const [operationId, item] of Object.entries(cases)) {
    const before = item.expected.length === 0 || item.user() ? actionsIn(item.user()).length : 0
    const serverBefore = actionsIn(null).length
    const answer = await item.run()
    expect({ operationId, status: answer.status }).toEqual({ operationId, status: item.status })
    const added = actionsIn(item.user()).slice(before)
    expect({ operationId, events: added }).toEqual({ operationId, events: item.expected })
    expect({ operationId, serverEvents: actionsIn(null).length - serverBefore }).toEqual({ operationId, serverEvents: 0 })
  }

  // The sign-in methods are named.
  const oidcEvents = readFileSync(join(server.dataDir, 'vaults', `${oidcUser}.audit.log`), 'utf8')
  expect(JSON.parse(oidcEvents.trim().split('\n')[0]).details.method).toBe('oidc')
  // A failed OIDC callback (no transaction) goes to the server's log.
  const failed = await new Browser().request(`${base}${CALLBACK}?code=x&state=y`)
  expect(failed.status).toBe(400)
  expect(actionsIn(null).at(-1)).toBe('auth.login_failed')
  // An export names its filters and how many values it sent; an extract the variable names.
  const events = (await alice.get('/api/audit?limit=500')).body.items
  expect(events.find((e: any) => e.action === 'export.read').details).toEqual({ filters: { environment: 'production', name: null, format: 'dotenv' }, count: 1, entries: 1 })
  expect(events.find((e: any) => e.action === 'ai.extract').details.names).toEqual(['OPENAI_API_KEY'])
}, 60_000)
