// Seeds a fresh data folder through the service's own code: openVault() and createApp() in this
// process, driven through app.handle() with the public API, so every record is written, sealed
// and group-committed exactly as a running server would. Accounts of the many-users set come from
// Accounts.createUser with one shared argon2 hash (1,000 argon2 hashes would take minutes).
import { createApp, openVault } from '../src/app'
import { SCOPES } from '../src/auth/scopes'
import { loadConfig } from '../src/config'
import type { Availability, BaselineFixture, SeededVault, SeedSizes } from './fixture'

type App = ReturnType<typeof createApp>

interface Answer {
  status: number
  body: any
}

class RouteMissing extends Error {}

/** Calls the in-process app like an HTTP client would. */
class InProcessClient {
  constructor(
    private readonly app: App,
    private readonly auth: { cookie?: string; key?: string },
  ) {}

  async call(method: string, path: string, body?: unknown): Promise<Answer> {
    const headers: Record<string, string> = {}
    if (this.auth.cookie) headers.cookie = `svc_session=${this.auth.cookie}`
    if (this.auth.key) headers.authorization = `Bearer ${this.auth.key}`
    if (body !== undefined) headers['content-type'] = 'application/json'
    const response = await this.app.handle(
      new Request(`http://127.0.0.1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }),
    )
    const text = await response.text()
    let parsed: any = text
    if ((response.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text)
    return { status: response.status, body: parsed }
  }

  /** The answer when it has the expected status; RouteMissing when the endpoint does not exist yet. */
  async expect(status: number | number[], method: string, path: string, body?: unknown): Promise<any> {
    const answer = await this.call(method, path, body)
    if ((Array.isArray(status) ? status : [status]).includes(answer.status)) return answer.body
    if (answer.status === 404 && answer.body?.code === 'NOT_FOUND') throw new RouteMissing(`${method} ${path}`)
    throw new Error(`seed: ${method} ${path} answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`)
  }
}

/** Runs `work` over `items` with at most `limit` in flight (concurrent writes share a commit). */
export async function pool<T, R>(items: T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length)
  let next = 0
  const lane = async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await work(items[index], index)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane))
  return results
}

const ENVIRONMENTS = ['development', 'staging', 'production'] as const
const GROUP_FIELDS = ['HOST', 'USER', 'PASSWORD']
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'

const randomText = (bytes: number) => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString('base64url')
const randomBase32 = (chars: number) => Array.from(crypto.getRandomValues(new Uint8Array(chars)), (b) => BASE32[b % 32]).join('')

function simpleValue(index: number): string {
  // Mostly plain tokens; some need quoting in the export.
  return index % 10 === 0 ? `sk live ${randomText(24)} "quoted"` : `sk_${randomText(30)}`
}

function groupValue(): string {
  return JSON.stringify({ HOST: `db-${randomText(4)}.internal`, USER: 'app', PASSWORD: randomText(24) })
}

/** `env`: more settings, such as SVC_DATABASE_URL to seed a PostgreSQL database (`--store postgres`). */
async function openSeedingApp(dataDir: string, masterKey: string, env: Record<string, string> = {}) {
  const config = loadConfig({
    SVC_MASTER_KEY: masterKey,
    SVC_DATA_DIR: dataDir,
    PORT: '0',
    HOST: '127.0.0.1',
    SVC_SIGNUP: 'open',
    SVC_REGISTER_LIMIT: '0',
    ...env,
  })
  const logs: string[] = []
  const deps = await openVault(config, (line) => logs.push(line))
  return { deps, app: createApp(deps), logs }
}

/** Runs a module's part of the seed; a module whose routes are not there yet is noted and skipped. */
async function optional(notes: string[], what: string, work: () => Promise<void>): Promise<boolean> {
  try {
    await work()
    return true
  } catch (error) {
    if (!(error instanceof RouteMissing)) throw error
    notes.push(`${what}: endpoint ${error.message} does not exist yet; not seeded`)
    return false
  }
}

/** The main data set: one user with categories, entries, two-factor tokens and env projects. */
export async function seedMainVault(dataDir: string, masterKey: string, sizes: SeedSizes, env: Record<string, string> = {}): Promise<SeededVault> {
  const started = performance.now()
  const { deps, app } = await openSeedingApp(dataDir, masterKey, env)
  const notes: string[] = []
  try {
    const email = 'bench@example.test'
    const registered = await app.handle(
      new Request('http://127.0.0.1/api/auth/register', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: 'bench password 1234', name: 'Bench' }),
      }),
    )
    if (registered.status !== 201) throw new Error(`seed: register answered ${registered.status} ${await registered.text()}`)
    const userId = ((await registered.json()) as { user: { id: string } }).user.id
    const cookie = /svc_session=([^;]+)/.exec(registered.headers.getSetCookie().join('\n'))?.[1]
    const session = new InProcessClient(app, { cookie })
    const created = await session.expect(201, 'POST', '/api/access-keys', { name: 'bench', scopes: [...SCOPES] })
    const key = created.key as string
    const client = new InProcessClient(app, { key })

    const categories = await pool(
      Array.from({ length: sizes.categories }, (_, i) => i),
      16,
      (i) =>
        client.expect(
          201,
          'POST',
          '/api/categories',
          i % 2 === 0
            ? { name: `Service ${String(i).padStart(3, '0')}`, keyType: 'simple', envVarName: `SERVICE_${i}_API_KEY`, icon: 'key' }
            : { name: `Database ${String(i).padStart(3, '0')}`, keyType: 'group', fieldDefinitions: GROUP_FIELDS, description: 'a database' },
        ),
    )

    const secrets: Record<string, string> = {}
    const entryIds: string[] = []
    const available: Availability = { entries: false, twoFactor: false, envs: false }
    available.entries = await optional(notes, 'entries', async () => {
      await pool(
        Array.from({ length: sizes.entries }, (_, i) => i),
        32,
        async (i) => {
          const category = categories[i % categories.length]
          const value = category.keyType === 'simple' ? simpleValue(i) : groupValue()
          const entry = await client.expect(201, 'POST', '/api/entries', {
            categoryId: category.id,
            name: `project-${String(i % 250).padStart(3, '0')}`,
            value,
            environment: ENVIRONMENTS[i % 3],
            ...(i % 4 === 0 ? { notes: `rotated ${i}` } : {}),
          })
          secrets[entry.id] = value
          entryIds.push(entry.id)
        },
      )
    })

    const twoFactor: BaselineFixture['twoFactor'] = []
    available.twoFactor = await optional(notes, '2fa', async () => {
      await pool(
        Array.from({ length: sizes.twoFactor }, (_, i) => i),
        16,
        async (i) => {
          const secret = randomBase32(32)
          const input = { service: `Service ${i}`, accountName: `bench+${i}@example.test`, secret }
          const token = await client.expect(201, 'POST', '/api/2fa', input)
          twoFactor.push({ id: token.id, service: input.service, accountName: input.accountName, secret })
        },
      )
    })

    let envFiles = 0
    available.envs = await optional(notes, 'envs', async () => {
      const fileTypes = ['env', 'env.local', 'env.production', 'env.development'].slice(0, sizes.filesPerProject)
      await pool(
        Array.from({ length: sizes.envProjects }, (_, i) => i),
        8,
        async (i) => {
          const project = await client.expect(201, 'POST', '/api/envs', { name: `app-${i}`, description: `bench project ${i}` })
          const projectId = project.data?.id ?? project.id
          for (const fileType of fileTypes) {
            const content = Array.from({ length: 12 }, (_, line) => `VAR_${line}=${randomText(16)}`).join('\n')
            await client.expect([200, 201], 'POST', `/api/envs/${projectId}/files`, { fileType, content })
            envFiles++
          }
        },
      )
    })

    // A shared vault beside the personal one, seeded alike (same sizes, same kinds of values), for
    // the side-by-side reveal (vault.entries.reveal).
    let vault: SeededVault['vault']
    if (available.entries) {
      await optional(notes, 'shared vault', async () => {
        const created = await session.expect(201, 'POST', '/api/vaults', { name: 'bench shared' })
        const base = `/api/vaults/${created.id}`
        const bound = await session.expect(201, 'POST', '/api/access-keys', { name: 'bench vault', scopes: [...SCOPES], vaultId: created.id })
        const inVault = new InProcessClient(app, { key: bound.key as string })
        const vaultCategories = await pool(
          Array.from({ length: sizes.categories }, (_, i) => i),
          16,
          (i) =>
            inVault.expect(
              201,
              'POST',
              `${base}/categories`,
              i % 2 === 0
                ? { name: `Service ${String(i).padStart(3, '0')}`, keyType: 'simple', envVarName: `SERVICE_${i}_API_KEY`, icon: 'key' }
                : { name: `Database ${String(i).padStart(3, '0')}`, keyType: 'group', fieldDefinitions: GROUP_FIELDS, description: 'a database' },
            ),
        )
        const vaultEntryIds: string[] = []
        await pool(
          Array.from({ length: sizes.entries }, (_, i) => i),
          32,
          async (i) => {
            const category = vaultCategories[i % vaultCategories.length]
            const entry = await inVault.expect(201, 'POST', `${base}/entries`, {
              categoryId: category.id,
              name: `project-${String(i % 250).padStart(3, '0')}`,
              value: category.keyType === 'simple' ? simpleValue(i) : groupValue(),
              environment: ENVIRONMENTS[i % 3],
              ...(i % 4 === 0 ? { notes: `rotated ${i}` } : {}),
            })
            vaultEntryIds.push(entry.id)
          },
        )
        vault = { id: created.id, key: bound.key as string, entryIds: vaultEntryIds }
      })
    }

    // The same list the service answers, so the baseline serializes the very same records.
    const entries = available.entries ? ((await client.expect(200, 'GET', '/api/entries')) as Record<string, unknown>[]) : []
    const writeCategory = categories.find((c) => c.keyType === 'simple') ?? categories[0]
    return {
      dataDir,
      key,
      userId,
      entryIds,
      twoFactorIds: twoFactor.map((t) => t.id),
      writeCategoryId: writeCategory.id,
      counts: {
        users: 1,
        categories: categories.length,
        entries: entryIds.length,
        twoFactor: twoFactor.length,
        envProjects: available.envs ? sizes.envProjects : 0,
        envFiles,
      },
      available,
      notes,
      baseline: {
        token: key,
        categories: categories.map((c) => ({
          id: c.id,
          name: c.name,
          keyType: c.keyType,
          envVarName: c.envVarName ?? null,
          fieldDefinitions: c.fieldDefinitions ?? null,
        })),
        entries,
        secrets,
        twoFactor,
      },
      seedSeconds: (performance.now() - started) / 1000,
      ...(vault ? { vault } : {}),
    }
  } finally {
    await deps.store.close()
  }
}

export interface SeededUsers {
  dataDir: string
  users: number
  /** Access key and category of one user in the middle, whose writes are measured. */
  key: string
  categoryId: string
  available: boolean
  seedSeconds: number
}

/** The many-users data set: `users` accounts, each with one simple category and some entries. */
export async function seedManyUsers(dataDir: string, masterKey: string, users: number, entriesPerUser: number): Promise<SeededUsers> {
  const started = performance.now()
  const { deps, app } = await openSeedingApp(dataDir, masterKey)
  try {
    const passwordHash = await Bun.password.hash('bench password 1234', 'argon2id')
    const measured = Math.floor(users / 2)
    let key = ''
    let categoryId = ''
    let available = true
    await pool(
      Array.from({ length: users }, (_, i) => i),
      16,
      async (i) => {
        const signedIn = await deps.accounts.createUser({ email: `user-${i}@example.test`, name: null, passwordHash, identities: [] })
        const client = new InProcessClient(app, { cookie: signedIn.token })
        const category = await client.expect(201, 'POST', '/api/categories', { name: 'API', keyType: 'simple', envVarName: 'API_KEY' })
        if (available) {
          try {
            await Promise.all(
              Array.from({ length: entriesPerUser }, (_, n) =>
                client.expect(201, 'POST', '/api/entries', {
                  categoryId: category.id,
                  name: `project-${n}`,
                  value: simpleValue(n + 1),
                  environment: ENVIRONMENTS[n % 3],
                }),
              ),
            )
          } catch (error) {
            if (!(error instanceof RouteMissing)) throw error
            available = false
          }
        }
        if (i === measured) {
          key = (await client.expect(201, 'POST', '/api/access-keys', { name: 'bench', scopes: [...SCOPES] })).key
          categoryId = category.id
        }
      },
    )
    return { dataDir, users, key, categoryId, available, seedSeconds: (performance.now() - started) / 1000 }
  } finally {
    await deps.store.close()
  }
}

/**
 * Accounts only (start-up at many users: the accounts document is what a start reads; vaults
 * open on first use): `users` accounts with a session each, one of them with a category and an
 * access key the start-up probe uses.
 */
export async function seedAccounts(dataDir: string, masterKey: string, users: number, env: Record<string, string> = {}): Promise<SeededUsers> {
  const started = performance.now()
  const { deps, app } = await openSeedingApp(dataDir, masterKey, env)
  try {
    const passwordHash = await Bun.password.hash('bench password 1234', 'argon2id')
    const measured = Math.floor(users / 2)
    let key = ''
    let categoryId = ''
    await pool(
      Array.from({ length: users }, (_, i) => i),
      64,
      async (i) => {
        const signedIn = await deps.accounts.createUser({ email: `user-${i}@example.test`, name: null, passwordHash, identities: [] })
        if (i !== measured) return
        const client = new InProcessClient(app, { cookie: signedIn.token })
        categoryId = (await client.expect(201, 'POST', '/api/categories', { name: 'API', keyType: 'simple', envVarName: 'API_KEY' })).id
        key = (await client.expect(201, 'POST', '/api/access-keys', { name: 'bench', scopes: [...SCOPES] })).key
      },
    )
    return { dataDir, users, key, categoryId, available: true, seedSeconds: (performance.now() - started) / 1000 }
  } finally {
    await deps.store.close()
  }
}
