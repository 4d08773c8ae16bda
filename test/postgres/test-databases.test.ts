// The databases a test run makes: dropped after it on a cluster of one's own (SVC_TEST_POSTGRES
// given), so that they do not pile up run after run; left to scripts/test.sh's throwaway cluster,
// which goes whole (SVC_TEST_POSTGRES_THROWAWAY=1), since each drop waits for a checkpoint.
import { afterAll, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { join } from 'node:path'
import { writeFileSync } from 'node:fs'
import { missingPostgres, TEST_POSTGRES } from '../support/postgres'
import { testNeeding } from '../support/requirements'
import { removeDir, tempDir } from '../support/server'

const ROOT = join(import.meta.dir, '..', '..')
const dir = tempDir('svc-vault-test-databases-')
afterAll(() => removeDir(dir))

/** Runs a test file that makes a database (as the suites' helpers do) and prints its name. */
function runMaking(throwaway: boolean): string {
  const file = join(dir, `makes-${throwaway ? 'kept' : 'dropped'}.test.ts`)
  writeFileSync(
    file,
    `import { test } from 'bun:test'
import { freshDatabase } from ${JSON.stringify(join(ROOT, 'test', 'support', 'postgres.ts'))}
test('makes a database', async () => console.log('made', new URL(await freshDatabase()).pathname.slice(1)))
`,
  )
  const env: Record<string, string | undefined> = { ...process.env, SVC_TEST_POSTGRES_THROWAWAY: throwaway ? '1' : undefined, SVC_TEST_STORE: undefined }
  const run = Bun.spawnSync(['bun', 'test', file], { cwd: ROOT, env: env as Record<string, string>, stdout: 'pipe', stderr: 'pipe' })
  const out = run.stdout.toString() + run.stderr.toString()
  expect(run.exitCode, out).toBe(0)
  return /made (svc_t_[0-9a-f]+)/.exec(out)![1]
}

testNeeding(missingPostgres)(
  "a run drops the databases it made on a cluster of one's own, and leaves them to a throwaway one",
  async () => {
    const admin = new SQL(TEST_POSTGRES!, { max: 1 })
    const exists = async (name: string) => (await admin`SELECT count(*)::int AS n FROM pg_database WHERE datname = ${name}`)[0].n === 1
    try {
      expect(await exists(runMaking(false))).toBe(false)
      const kept = runMaking(true)
      expect(await exists(kept)).toBe(true)
      await admin.unsafe(`DROP DATABASE ${kept} WITH (FORCE)`)
    } finally {
      await admin.close()
    }
  },
  60_000,
)
