// The least-privilege role of docs/postgres.md, made by deploy/postgres-roles.sql (the file
// compose.postgres.yaml runs) with psql: the server starts as it (its migrations create the
// tables in the role's own schema), serves, and the role can do nothing else: no table in
// `public`, no database, no role. Needs SVC_TEST_POSTGRES and psql; skipped without, except under CI.
import { afterAll, describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { join } from 'node:path'
import { signUp } from '../support/client'
import { freshDatabase, TEST_POSTGRES } from '../support/postgres'
import { removeDir, ROOT, startTestServer } from '../support/server'

const CI = process.env.CI === 'true'
const psql = Bun.which('psql')
const ready = TEST_POSTGRES !== undefined && psql !== null
if (CI && !ready) throw new Error('SVC_TEST_POSTGRES and psql are needed under CI (scripts/test.sh starts a cluster)')
const suite = ready ? describe : describe.skip

const role = `svc_vault_t_${crypto.randomUUID().slice(0, 8)}`
let database = ''
afterAll(async () => {
  if (!ready || !database) return
  const admin = new SQL(TEST_POSTGRES!, { max: 1 })
  try {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${new URL(database).pathname.slice(1)} WITH (FORCE)`)
    await admin.unsafe(`DROP ROLE IF EXISTS ${role}`)
  } finally {
    await admin.close()
  }
})

const asRole = (url: string) => {
  const parsed = new URL(url)
  parsed.username = role
  return parsed.toString()
}

suite(`deploy/postgres-roles.sql${ready ? '' : ' (skipped: SVC_TEST_POSTGRES or psql missing)'}`, () => {
  test('the server runs as the role it makes, its tables in the role’s schema; the role may do nothing else', async () => {
    database = await freshDatabase()
    const name = new URL(database).pathname.slice(1)
    const made = Bun.spawnSync(
      [
        psql!,
        '-X',
        '-q',
        '-v',
        'ON_ERROR_STOP=1',
        '-v',
        `role=${role}`,
        '-v',
        'password=unused-with-trust',
        '-v',
        `dbname=${name}`,
        '-f',
        join(ROOT, 'deploy', 'postgres-roles.sql'),
        database,
      ],
      { stdout: 'pipe', stderr: 'pipe' },
    )
    expect({
      code: made.exitCode,
      error: made.stderr
        .toString()
        .replace(/^.*NOTICE.*$/gm, '')
        .trim(),
    }).toEqual({ code: 0, error: '' })

    const server = await startTestServer({ env: { SVC_DATABASE_URL: asRole(database) } })
    try {
      const user = await signUp(server.url)
      expect((await user.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })).status).toBe(201)
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200)
    } finally {
      await server.stop()
      removeDir(server.dataDir)
    }

    const admin = new SQL(database, { max: 1 })
    const limited = new SQL(asRole(database), { max: 1 })
    try {
      const tables = await admin`SELECT table_schema AS schema, table_name AS name FROM information_schema.tables WHERE table_name LIKE 'svc_%'`
      expect(tables.length).toBeGreaterThan(0)
      for (const table of tables) expect(table.schema).toBe(role)
      const [attributes] = await admin`SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication FROM pg_roles WHERE rolname = ${role}`
      expect(attributes).toEqual({ rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolreplication: false })
      const refused = async (statement: string) =>
        limited.unsafe(statement).then(
          () => 'allowed',
          (error: { errno?: string }) => error.errno,
        )
      // 42501: insufficient privilege.
      expect(await refused('CREATE TABLE public.svc_elsewhere (id int)')).toBe('42501')
      expect(await refused(`CREATE DATABASE ${role}_other`)).toBe('42501')
      expect(await refused(`CREATE ROLE ${role}_other`)).toBe('42501')
    } finally {
      await limited.close()
      await admin.close()
    }
  })
})
