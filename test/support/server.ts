// Real servers for tests: in-process (createApp + listen on loopback) or a separate process
// (bun src/index.ts), each on its own temporary data folder.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp, openVault, type AppDeps } from '../../src/app'
import { loadConfig } from '../../src/config'
import { forgetVault, watchVault } from './answer-check'
import { ACCOUNTS_FILE, Store, VAULTS_DIR } from '../../src/store/store'
import type { StoredDocument } from '../../src/store/data-store'
import { loadDocument, snapshotText } from '../../src/store/postgres/document'
import { ACCOUNTS_ID as PG_ACCOUNTS_ID, PgStore } from '../../src/store/postgres/store'
import { ACCOUNTS_LISTS, VAULT_LISTS, type VaultDocument } from '../../src/store/records'
import { onFreePort } from './ports'
import { storeEnv } from './postgres'

export const TEST_MASTER_KEY = Buffer.alloc(32, 7).toString('base64')

/**
 * argon2id's cost in this process's servers: the least it takes (8 KiB, one pass), some 0.4 ms of
 * CPU a hash here against some 200 ms at a server's (PASSWORD_COST), which was most of the suite's
 * CPU. Spawned servers (spawnServer, the built executables) hash at the real cost, and
 * test/platform/password-cost.test.ts holds that nothing but this file lowers it.
 */
export const TEST_PASSWORD_COST = { memoryCost: 8, timeCost: 1 }

/**
 * Tests register many accounts from one address: sign-up open (the default is `first`) and no
 * per-address registration limit, unless a test passes its own values.
 */
export const TEST_SIGNUP_ENV = { SVC_SIGNUP: 'open', SVC_REGISTER_LIMIT: '0' }
export const ROOT = join(import.meta.dir, '..', '..')

export function tempDir(prefix = 'svc-vault-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix))
}

export interface TestServer {
  url: string
  dataDir: string
  deps: AppDeps
  logs: string[]
  stop(): Promise<void>
}

/** The real app on a loopback port in this process (`port`: a chosen one; default random). */
export async function startTestServer(
  options: {
    env?: Record<string, string | undefined>
    dataDir?: string
    now?: () => number
    port?: number
    /**
     * On a free port that SVC_BASE_URL names, at this host ('localhost' for passkeys, whose relying
     * party cannot be an IP address); tried again on another port should that one be taken.
     */
    baseHost?: '127.0.0.1' | 'localhost'
    /** 'file': the file store also in the suite's PostgreSQL pass (a test of the files themselves). */
    store?: 'file'
    /**
     * Hash passwords at a server's real cost, not TEST_PASSWORD_COST: for the tests of requests
     * racing a check (parallel guesses, parallel sign-ups), where the hash is the time they race in.
     */
    realPasswordCost?: true
  } = {},
): Promise<TestServer> {
  const { baseHost } = options
  if (baseHost) {
    return await onFreePort((port) =>
      startTestServer({ ...options, baseHost: undefined, port, env: { SVC_BASE_URL: `http://${baseHost}:${port}`, ...options.env } }),
    )
  }
  const dataDir = options.dataDir ?? tempDir()
  const logs: string[] = []
  const config = {
    ...loadConfig({
      SVC_MASTER_KEY: TEST_MASTER_KEY,
      NODE_ENV: 'test',
      ...TEST_SIGNUP_ENV,
      ...(options.store === 'file' ? {} : await storeEnv(dataDir, options.env)),
      ...options.env,
      SVC_DATA_DIR: dataDir,
      PORT: '0',
    }),
    passwordCost: options.realPasswordCost ? undefined : TEST_PASSWORD_COST,
  }
  const deps = await openVault(config, (line) => logs.push(line), options.now)
  let app: ReturnType<typeof createApp>
  try {
    app = createApp(deps).listen({ port: options.port ?? 0, hostname: '127.0.0.1' })
  } catch (error) {
    // The chosen port was taken (ports.ts tries another): nothing of this vault stays open, and
    // a data folder made here goes (its database, if any, goes with the run's others).
    await deps.audit?.close()
    await deps.store.close()
    if (!options.dataDir) removeDir(dataDir)
    throw Object.assign(error as Error, { dataDir })
  }
  const url = `http://127.0.0.1:${app.server!.port}`
  await watchVault(url)
  return {
    url,
    dataDir,
    deps,
    logs,
    async stop() {
      forgetVault(url)
      await app.stop(true)
      await deps.audit?.close()
      await deps.store.close()
    },
  }
}

export interface SpawnedServer {
  url: string
  dataDir: string
  proc: ReturnType<typeof Bun.spawn>
  output(): string
  /** SIGTERM and wait for the exit code. */
  stop(): Promise<number>
  /** SIGKILL: a crash. */
  kill(): Promise<void>
}

/**
 * `bun src/index.ts` as its own process, the way black-box tests and users start it
 * (`entry`: dist/index.js for the bundle `bun run start` runs).
 */
export async function spawnServer(
  /** `store: 'file'`: on the file store in the PostgreSQL pass too (a test of the data folder's own files). */
  options: { env?: Record<string, string | undefined>; dataDir?: string; entry?: string; command?: string[]; cwd?: string; store?: 'file' } = {},
): Promise<SpawnedServer> {
  const dataDir = options.dataDir ?? tempDir()
  let output = ''
  // A variable given as undefined is left out (e.g. SVC_SIGNUP: undefined to start with the default).
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH!,
    HOME: process.env.HOME ?? '/tmp',
    SVC_MASTER_KEY: TEST_MASTER_KEY,
    PORT: '0',
    ...TEST_SIGNUP_ENV,
    ...(options.store === 'file' ? {} : await storeEnv(dataDir, options.env)),
    ...options.env,
    SVC_DATA_DIR: dataDir,
  }
  for (const [name, value] of Object.entries(env)) if (value === undefined) delete env[name]
  // `command`: another program to run, such as the built executable (dist/svc-vault) from `cwd`.
  const proc = Bun.spawn(options.command ?? ['bun', options.entry ?? 'src/index.ts'], {
    cwd: options.cwd ?? ROOT,
    env: env as Record<string, string>,
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) output += decoder.decode(chunk)
  }
  void collect(proc.stdout as ReadableStream<Uint8Array>)
  void collect(proc.stderr as ReadableStream<Uint8Array>)
  const started = Date.now()
  let url = ''
  while (!url) {
    const match = /listening on (http:\/\/\S+)/.exec(output)
    if (match) url = match[1]
    else if (proc.exitCode !== null) throw new Error(`server exited with ${proc.exitCode}: ${output}`)
    else if (Date.now() - started > 15_000) throw new Error(`server did not start: ${output}`)
    else await Bun.sleep(10)
  }
  await watchVault(url)
  return {
    url,
    dataDir,
    proc,
    output: () => output,
    async stop() {
      forgetVault(url)
      proc.kill('SIGTERM')
      return await proc.exited
    },
    async kill() {
      forgetVault(url)
      proc.kill('SIGKILL')
      await proc.exited
    },
  }
}

/** Runs `bun src/index.ts` to its exit (for start-up failures): exit code and output. */
export async function runServerToExit(env: Record<string, string>, timeoutMs = 10_000): Promise<{ code: number; output: string }> {
  const proc = Bun.spawn(['bun', 'src/index.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', PORT: '0', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs)
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  clearTimeout(timer)
  return { code, output: out + err }
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true })
}

/** The file store of a server started on one (tests that read the data folder's files). */
export function fileStore(server: { deps: AppDeps }): Store {
  if (!(server.deps.store instanceof Store)) throw new Error('this test reads the data folder: it needs the file store')
  return server.deps.store
}

/** The user's vault document as the server holds it (opened if it is not), on either store. */
export async function storedVault(server: { deps: AppDeps }, userId: string): Promise<StoredDocument<VaultDocument>> {
  return (await server.deps.vaults.open(userId)).doc
}

/**
 * What the store keeps durably for a document (a user's id: the vault; ACCOUNTS: the accounts),
 * read afresh, not from the server's memory: on the file store the file after a fold, on
 * PostgreSQL the snapshot and changes in the database. `text`: every stored byte of it, to search
 * for a plaintext; `data`: the document they make.
 */
export async function durableDocument<T = VaultDocument>(server: { deps: AppDeps; dataDir: string }, id: string): Promise<{ text: string; data: T }> {
  const store = server.deps.store
  if (store instanceof PgStore) {
    const rows = await store.db.run(
      (sql) => sql`SELECT snapshot AS text, packed FROM svc_documents WHERE id = ${id}
        UNION ALL SELECT changes, NULL FROM svc_changes WHERE document_id = ${id}`,
    )
    const loaded = await loadDocument(store.db, id, id === ACCOUNTS ? ACCOUNTS_LISTS : VAULT_LISTS)
    if (!loaded || loaded.deleted) throw new Error(`no document ${id} in the database`)
    // A packed snapshot unpacked: a plaintext in it must be found, not hidden by the packing.
    const texts = await Promise.all(rows.map((row: { text: string; packed: Uint8Array | null }) => snapshotText(row)))
    return { text: texts.join('\n'), data: loaded.data as T }
  }
  const files = fileStore(server as { deps: AppDeps })
  const document = id === ACCOUNTS ? files.accounts : files.openedVault(id)
  await document?.fold()
  const text = readFileSync(id === ACCOUNTS ? join(server.dataDir, ACCOUNTS_FILE) : join(server.dataDir, VAULTS_DIR, `${id}.json`), 'utf8')
  return { text, data: JSON.parse(text) as T }
}
/** durableDocument's id of the accounts document. */
export const ACCOUNTS = PG_ACCOUNTS_ID
