// The tamper matrix (tamper-matrix.test.ts) on the database store: someone with write access to
// the database edits, removes, reorders or re-hashes a vault's audit lines (rows of
// svc_audit_lines), each on a fresh copy of a real log. audit-verify, reading the database, names
// each; a server started on the copy, at one sign-in, records a chain.broken event saying the same,
// and the log still fails verification afterwards.
import { afterAll, beforeAll, expect } from 'bun:test'
import { SQL } from 'bun'
import { databaseAuditLines, writeDatabaseAuditLines } from '../support/audit-file'
import { post } from '../account/support'
import { PASSWORD, signUp } from '../support/client'
import { copyDatabase, freshDatabase, TEST_POSTGRES } from '../support/postgres'
import { testNeeding } from '../support/requirements'
import { removeDir, ROOT, startTestServer, TEST_MASTER_KEY } from '../support/server'

const needsPostgres = testNeeding(TEST_POSTGRES ? null : 'no PostgreSQL cluster (SVC_TEST_POSTGRES; scripts/test.sh starts one)')

let golden: string
let userId: string
let email: string
let head: string
const dirs: string[] = []

beforeAll(async () => {
  if (!TEST_POSTGRES) return
  golden = await freshDatabase()
  const server = await startTestServer({ env: { SVC_DATABASE_URL: golden } })
  dirs.push(server.dataDir)
  const user = await signUp(server.url)
  userId = user.user.id
  email = user.email
  for (let i = 0; i < 32; i++) expect((await user.post('/api/categories', { name: `c${i}`, keyType: 'group' })).status).toBe(201)
  head = (await user.get('/api/audit?limit=1')).body.head
  await server.stop()
})
afterAll(() => dirs.forEach(removeDir))

function verify(url: string, args: string[] = []): { code: number; output: string } {
  const run = Bun.spawnSync(['bun', 'src/cli/audit-verify.ts', ...args], {
    cwd: ROOT,
    stdout: 'pipe',
    stderr: 'pipe',
    env: { ...process.env, SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_DATABASE_URL: url, SVC_DATABASE_URL_FILE: undefined },
  })
  return { code: run.exitCode, output: run.stdout.toString() + run.stderr.toString() }
}

const sha256 = (text: string) => new Bun.CryptoHasher('sha256').update(text).digest('hex')

/** What someone who knows the format but not the key does: re-chains lines from `from` with plain SHA-256. */
function rehash(lines: string[], from: number): string[] {
  let prev = JSON.parse(lines[from - 1]).hash
  return lines.map((line, index) => {
    if (index < from) return line
    const { hash: _hash, ...event } = JSON.parse(line)
    event.prev = prev
    const body = JSON.stringify(event)
    prev = sha256(body)
    return `${body.slice(0, -1)},"hash":"${prev}"}`
  })
}

/** Deletes the vault's log row and its lines (its anchor copy in the vault's document stays). */
async function deleteLogRow(url: string): Promise<void> {
  const sql = new SQL(url, { max: 1 })
  try {
    await sql`DELETE FROM svc_audit_logs WHERE log_id = ${userId}`
    await sql`DELETE FROM svc_audit_lines WHERE log_id = ${userId}`
  } finally {
    await sql.close()
  }
}

const CASES: { name: string; tamper: (lines: string[]) => string[]; expected: RegExp; instead?: (url: string) => Promise<void> }[] = [
  { name: 'edit a field mid-log', tamper: (l) => l.map((x, i) => (i === 15 ? x.replace('"c14"', '"c99"') : x)), expected: /line 16 was edited/ },
  { name: 'delete the first line', tamper: (l) => l.slice(1), expected: /line 1 does not follow the chain's start: the lines before it were removed/ },
  { name: 'delete a middle line', tamper: (l) => l.filter((_, i) => i !== 16), expected: /line 17 does not follow line 16: a line between them was removed/ },
  {
    name: 'delete the last line',
    tamper: (l) => l.slice(0, -1),
    expected: /lines were removed from the end: the file has 32 whole line\(s\), its anchor records 33 \(1 missing\)/,
  },
  { name: 'drop the last 10 lines', tamper: (l) => l.slice(0, -10), expected: /lines were removed from the end: .* \(10 missing\)/ },
  { name: 'swap two lines', tamper: (l) => [...l.slice(0, 20), l[21], l[20], ...l.slice(22)], expected: /line 21 is out of order/ },
  { name: 'replay a line', tamper: (l) => [...l.slice(0, 25), l[5], ...l.slice(25)], expected: /line 26 is out of order \(it follows line 5\)/ },
  { name: 'empty the log', tamper: () => [], expected: /the log is empty: all 33 line\(s\) its anchor records were removed/ },
  {
    name: "delete the log's row with its lines",
    tamper: (l) => l,
    instead: deleteLogRow,
    expected: /the log file is missing \(removed\), though its anchor records 33 line\(s\)/,
  },
  {
    name: 'change a line and re-hash everything after it',
    tamper: (l) =>
      rehash(
        l.map((x, i) => (i === 12 ? x.replace('"c11"', '"c77"') : x)),
        12,
      ),
    expected: /line 13 was edited: rewritten without the audit key/,
  },
]

needsPostgres('the real log verifies from the database, keyed, and matches the head the API gave', () => {
  const ok = verify(golden, ['--expect-last', head])
  expect(ok.output).toContain(`ok   vaults/${userId}.audit.log: 33 event(s), chain intact (keyed)`)
  expect(ok.code).toBe(0)
})

for (const c of CASES) {
  needsPostgres(
    c.name,
    async () => {
      const url = await copyDatabase(golden)
      if (c.instead) await c.instead(url)
      else await writeDatabaseAuditLines(url, userId, c.tamper(await databaseAuditLines(url, userId)))
      const lineOfLog = (output: string) => output.split('\n').find((line) => line.includes(`vaults/${userId}.audit.log`)) ?? ''
      const before = verify(url)
      expect(before.code).toBe(1)
      expect(lineOfLog(before.output)).toMatch(/^FAIL /)
      expect(lineOfLog(before.output)).toMatch(c.expected)

      const server = await startTestServer({ env: { SVC_DATABASE_URL: url } })
      dirs.push(server.dataDir)
      try {
        expect((await post(server.url, '/api/auth/login', { email, password: PASSWORD })).status).toBe(200)
        await server.deps.audit.settle()
        const events = (await databaseAuditLines(url, userId)).map((line) => JSON.parse(line))
        const broken = events.filter((event) => event.action === 'chain.broken')
        expect(broken.length).toBe(1)
        expect(broken[0].details.message).toMatch(c.expected)
        expect(events.at(-1).action).toBe('auth.login')
        expect(server.deps.audit.chainBroken).toBe(1)
      } finally {
        await server.stop()
      }
      const after = verify(url)
      expect(after.code).toBe(1)
      expect(lineOfLog(after.output)).toMatch(/^FAIL /)
    },
    60_000,
  )
}

needsPostgres('only an outside copy: a log and its anchor row rewritten unkeyed, the keying time removed, fail --expect-last', async () => {
  const url = await copyDatabase(golden)
  const lines = await databaseAuditLines(url, userId)
  const start = sha256('attacker')
  let prev = start
  const forged = lines.map((line) => {
    const { hash: _hash, chain: _chain, key: _key, ...event } = JSON.parse(line)
    const body = JSON.stringify({ ...event, prev })
    prev = sha256(body)
    return `${body.slice(0, -1)},"hash":"${prev}"}`
  })
  await writeDatabaseAuditLines(url, userId, forged)
  const sql = new SQL(url, { max: 1 })
  try {
    await sql`UPDATE svc_audit_logs SET head = ${prev}, anchor = ${JSON.stringify({ start, checkpoint: null })}::text::jsonb WHERE log_id = ${userId}`
    await sql`UPDATE svc_audit_logs SET anchor = anchor - 'keyedSince' WHERE log_id = 'server'`
  } finally {
    await sql.close()
  }
  expect(verify(url).code).toBe(0)
  const expectLast = verify(url, ['--expect-last', head])
  expect(expectLast.code).toBe(1)
  expect(expectLast.output).toMatch(/FAIL --expect-last .*no log holds this line any more/)
})
