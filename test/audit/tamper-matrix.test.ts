// The tamper matrix (issue 29): every kind of tamper, each on a fresh copy of a real log, checked
// by `audit-verify` (and the example verifier in docs/) before and after a server was started on
// the copy and one sign-in made. Each is reported, never "chain intact", and the server, opening
// the log, keeps the old anchor and records a chain.broken event. The rows docs/audit.md says only
// the keyed chain or an outside copy catches are tested as exactly that.
//
// On the file store in both passes of the suite: these tampers are with a data folder's bytes (a
// line cut inside, a deleted file, the anchor in the vault file) and the example verifier and
// rotate-master-key read a folder. The same attacks on the database's rows: postgres-tamper.test.ts.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { cpSync, existsSync, readFileSync, rmSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { readLoggedDocumentSync } from '../../src/store/document'
import { VAULT_LISTS } from '../../src/store/records'
import { auditFileLines } from '../support/audit-file'
import { post } from '../account/support'
import { PASSWORD, signUp } from '../support/client'
import { removeDir, ROOT, startTestServer, tempDir, TEST_MASTER_KEY } from '../support/server'

const WITH_KEY = { ...process.env, SVC_MASTER_KEY: TEST_MASTER_KEY }
const WITHOUT_KEY = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('SVC_MASTER_KEY'))) as Record<string, string>

let golden: string
let userId: string
let email: string
/** Copies kept outside the data folder while the log was intact: its head and an export. */
let head: string
let exportFile: string
const dirs: string[] = []

beforeAll(async () => {
  golden = tempDir('svc-vault-tamper-golden-')
  dirs.push(golden)
  const server = await startTestServer({ dataDir: golden, store: 'file' })
  const user = await signUp(server.url)
  userId = user.user.id
  email = user.email
  for (let i = 0; i < 32; i++) expect((await user.post('/api/categories', { name: `c${i}`, keyType: 'group' })).status).toBe(201)
  head = (await user.get('/api/audit?limit=1')).body.head
  exportFile = join(tempDir('svc-vault-tamper-export-'), 'audit.log')
  dirs.push(join(exportFile, '..'))
  writeFileSync(exportFile, (await user.get('/api/audit/export')).text)
  await server.stop()
})
afterAll(() => dirs.forEach(removeDir))

function verify(dataDir: string, args: string[] = [], env: Record<string, string | undefined> = WITH_KEY): { code: number; output: string } {
  const run = Bun.spawnSync(['bun', 'src/cli/audit-verify.ts', '--data-dir', dataDir, ...args], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe', env })
  return { code: run.exitCode, output: run.stdout.toString() + run.stderr.toString() }
}

/** The example verifier of docs/ on the user's log, given its anchor as the docs say to find it. */
function example(dataDir: string, env: Record<string, string | undefined> = WITH_KEY): number {
  const anchorFile = join(dataDir, 'anchor-for-example.json')
  writeFileSync(anchorFile, JSON.stringify(vaultDoc(dataDir).auditChain))
  const keyedSince = JSON.parse(readFileSync(join(dataDir, 'audit.chain.json'), 'utf8')).keyedSince ?? ''
  const run = Bun.spawnSync(['bun', 'docs/examples/verify-audit-log.mjs', logOf(dataDir), anchorFile, keyedSince], {
    cwd: ROOT,
    stdout: 'pipe',
    stderr: 'pipe',
    env,
  })
  rmSync(anchorFile)
  return run.exitCode
}

const logOf = (dataDir: string) => join(dataDir, 'vaults', `${userId}.audit.log`)
const docPath = (dataDir: string) => join(dataDir, 'vaults', `${userId}.json`)
const vaultDoc = (dataDir: string) => JSON.parse(readLoggedDocumentSync(docPath(dataDir), VAULT_LISTS)!)
const sha256 = (text: string) => new Bun.CryptoHasher('sha256').update(text).digest('hex')
const write = (dataDir: string, lines: string[]) => writeFileSync(logOf(dataDir), lines.map((line) => `${line}\n`).join(''))

/** What someone who knows the format but not the key does: re-chains lines from `from` with plain SHA-256. */
function rehash(lines: string[], from: number, prev0: string | null, keepKeyedField: boolean): string[] {
  let prev = from > 0 ? JSON.parse(lines[from - 1]).hash : prev0
  return lines.map((line, index) => {
    if (index < from) return line
    const { hash: _hash, ...event } = JSON.parse(line)
    event.prev = prev
    if (!keepKeyedField) delete event.chain
    const body = JSON.stringify(event)
    prev = sha256(body)
    return `${body.slice(0, -1)},"hash":"${prev}"}`
  })
}

/** Replaces the vault's anchor (the vault file, its change log folded in). */
function writeAnchor(dataDir: string, change: (anchor: any) => any): void {
  const doc = vaultDoc(dataDir)
  doc.auditChain = change(doc.auditChain)
  writeFileSync(docPath(dataDir), JSON.stringify(doc))
  if (existsSync(`${docPath(dataDir)}.log`)) unlinkSync(`${docPath(dataDir)}.log`)
}

interface Case {
  name: string
  tamper: (dataDir: string, lines: string[]) => void
  /** What audit-verify says about the log. */
  expected: RegExp
}

const CASES: Case[] = [
  {
    name: 'edit a field mid-log',
    tamper: (d, l) =>
      write(
        d,
        l.map((x, i) => (i === 15 ? x.replace('"c14"', '"c99"') : x)),
      ),
    expected: /line 16 was edited/,
  },
  {
    name: 're-space a line',
    tamper: (d, l) =>
      write(
        d,
        l.map((x, i) => (i === 10 ? x.replace('"action":', '"action": ') : x)),
      ),
    expected: /line 11 was edited/,
  },
  {
    name: 'delete the first line',
    tamper: (d, l) => write(d, l.slice(1)),
    expected: /line 1 does not follow the chain's start: the lines before it were removed/,
  },
  {
    name: 'delete a middle line',
    tamper: (d, l) =>
      write(
        d,
        l.filter((_, i) => i !== 16),
      ),
    expected: /line 17 does not follow line 16: a line between them was removed/,
  },
  {
    name: 'delete the last line',
    tamper: (d, l) => write(d, l.slice(0, -1)),
    expected: /lines were removed from the end: the file has 32 whole line\(s\), its anchor records 33 \(1 missing\)/,
  },
  { name: 'swap two lines', tamper: (d, l) => write(d, [...l.slice(0, 20), l[21], l[20], ...l.slice(22)]), expected: /line 21 is out of order/ },
  { name: 'replay a line', tamper: (d, l) => write(d, [...l.slice(0, 25), l[5], ...l.slice(25)]), expected: /line 26 is out of order \(it follows line 5\)/ },
  {
    name: 'cut inside the last line',
    tamper: (d) => truncateSync(logOf(d), readFileSync(logOf(d)).length - 40),
    expected: /the last line was cut: line 33 has only \d+ byte\(s\)/,
  },
  { name: 'drop the last line cleanly', tamper: (d, l) => write(d, l.slice(0, -1)), expected: /\(1 missing\)/ },
  { name: 'drop the last 3 lines cleanly', tamper: (d, l) => write(d, l.slice(0, -3)), expected: /lines were removed from the end: .* \(3 missing\)/ },
  { name: 'drop the last 10 lines cleanly', tamper: (d, l) => write(d, l.slice(0, -10)), expected: /lines were removed from the end: .* \(10 missing\)/ },
  { name: 'empty the log', tamper: (d) => writeFileSync(logOf(d), ''), expected: /the log is empty: all 33 line\(s\) its anchor records were removed/ },
  { name: 'delete the log', tamper: (d) => unlinkSync(logOf(d)), expected: /the log file is missing \(removed\), though its anchor records 33 line\(s\)/ },
  {
    name: 'change a line and re-hash everything after it',
    tamper: (d, l) =>
      write(
        d,
        rehash(
          l.map((x, i) => (i === 12 ? x.replace('"c11"', '"c77"') : x)),
          12,
          null,
          true,
        ),
      ),
    expected: /line 13 was edited: rewritten without the audit key/,
  },
  {
    name: 'insert a forged line and re-hash the rest',
    tamper: (d, l) => write(d, rehash([...l.slice(0, 8), l[8].replace('"c7"', '"forged"'), ...l.slice(8)], 8, null, true)),
    expected: /line 9 was edited: rewritten without the audit key/,
  },
  {
    name: 'rewrite a log and its anchor with plain SHA-256',
    tamper: (d, l) => {
      const start = sha256('attacker')
      const forged = rehash(l, 0, start, false)
      write(d, forged)
      writeAnchor(d, () => ({
        start,
        checkpoint: null,
        head: JSON.parse(forged.at(-1)!).hash,
        lines: forged.length,
        bytes: Buffer.byteLength(forged.join('\n') + '\n'),
      }))
    },
    expected: /line 1 is not keyed, though its time is after keying began .*: rewritten without the audit key/,
  },
]

describe('the tamper matrix', () => {
  test('the real log verifies before any tamper (built-in and example verifier), keyed', () => {
    const ok = verify(golden)
    expect(ok.code).toBe(0)
    expect(ok.output).toContain(`ok   vaults/${userId}.audit.log: 33 event(s), chain intact (keyed)`)
    expect(example(golden)).toBe(0)
    expect(verify(golden, ['--expect-last', head, '--from-export', exportFile]).code).toBe(0)
  })

  for (const c of CASES) {
    test(c.name, async () => {
      const dataDir = tempDir('svc-vault-tamper-')
      dirs.push(dataDir)
      cpSync(golden, dataDir, { recursive: true })
      c.tamper(dataDir, auditFileLines(logOf(dataDir)))
      const lineOfLog = (output: string) => output.split('\n').find((line) => line.includes(`vaults/${userId}.audit.log`)) ?? ''

      const before = verify(dataDir)
      expect(before.code).toBe(1)
      expect(lineOfLog(before.output)).toMatch(/^FAIL /)
      expect(lineOfLog(before.output)).toMatch(c.expected)
      expect(before.output).not.toContain(`${userId}.audit.log: 33 event(s), chain intact`)
      expect(example(dataDir)).toBe(1)
      const anchorBefore = vaultDoc(dataDir).auditChain

      // A server started on it, one sign-in.
      const server = await startTestServer({ dataDir, store: 'file' })
      try {
        expect((await post(server.url, '/api/auth/login', { email, password: PASSWORD })).status).toBe(200)
        await server.deps.audit.settle()
        const events = auditFileLines(logOf(dataDir)).map((line) => JSON.parse(line))
        const broken = events.filter((event) => event.action === 'chain.broken')
        expect(broken.length).toBe(1)
        expect(broken[0].details.message).toMatch(c.expected)
        expect(events.at(-1).action).toBe('auth.login')
        expect(server.deps.audit.chainBroken).toBe(1)
        expect(server.logs.some((line) => line.startsWith('error: the audit log of') && line.includes(userId))).toBe(true)
      } finally {
        await server.stop()
      }
      // The anchor was not moved.
      expect(vaultDoc(dataDir).auditChain).toMatchObject({ head: anchorBefore.head, lines: anchorBefore.lines })

      const after = verify(dataDir)
      expect(after.code).toBe(1)
      expect(lineOfLog(after.output)).toMatch(/^FAIL /)
      expect(example(dataDir)).toBe(1)
    })
  }
})

describe('who catches what (docs/audit.md, "Threat model")', () => {
  const copy = () => {
    const dataDir = tempDir('svc-vault-tamper-')
    dirs.push(dataDir)
    cpSync(golden, dataDir, { recursive: true })
    return dataDir
  }
  const signIn = async (url: string) =>
    (
      await fetch(`${url}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: PASSWORD }),
      })
    ).status

  test('only the keyed chain: a tail re-hashed with SHA-256 and the anchor rewritten to match passes without the master key, fails with it', async () => {
    const dataDir = copy()
    const forged = rehash(
      auditFileLines(logOf(dataDir)).map((x, i) => (i === 20 ? x.replace('"c19"', '"c66"') : x)),
      20,
      null,
      true,
    )
    write(dataDir, forged)
    writeAnchor(dataDir, (anchor) => ({ ...anchor, head: JSON.parse(forged.at(-1)!).hash }))
    const blind = verify(dataDir, [], WITHOUT_KEY)
    expect(blind.code).toBe(0)
    expect(blind.output).toContain('keyed lines NOT checked: no master key')
    expect(example(dataDir, WITHOUT_KEY)).toBe(0)
    expect(verify(dataDir).output).toMatch(/FAIL .*line 21 was edited: rewritten without the audit key/)
    expect(example(dataDir)).toBe(1)
    const server = await startTestServer({ dataDir, store: 'file' })
    expect(await signIn(server.url)).toBe(200)
    expect(server.deps.audit.chainBroken).toBe(1)
    await server.stop()
  })

  test("only an outside copy: the log, its anchor and the folder's keying time all rewritten unkeyed pass every check inside the folder", async () => {
    const dataDir = copy()
    const start = sha256('attacker')
    const forged = rehash(auditFileLines(logOf(dataDir)), 0, start, false)
    write(dataDir, forged)
    writeAnchor(dataDir, () => ({
      start,
      checkpoint: null,
      head: JSON.parse(forged.at(-1)!).hash,
      lines: forged.length,
      bytes: Buffer.byteLength(forged.join('\n') + '\n'),
    }))
    const serverAnchor = JSON.parse(readFileSync(join(dataDir, 'audit.chain.json'), 'utf8'))
    delete serverAnchor.keyedSince
    writeFileSync(join(dataDir, 'audit.chain.json'), JSON.stringify(serverAnchor))
    expect(verify(dataDir).code).toBe(0)
    expect(example(dataDir)).toBe(0)
    const expectLast = verify(dataDir, ['--expect-last', head])
    expect(expectLast.code).toBe(1)
    expect(expectLast.output).toMatch(/FAIL --expect-last .*no log holds this line any more/)
    const fromExport = verify(dataDir, ['--from-export', exportFile])
    expect(fromExport.code).toBe(1)
    expect(fromExport.output).toMatch(/FAIL --from-export .*no log holds any of its 33 line\(s\)/)
  })

  test('no restart needed: lines cut while the log was closed (its vault idle) are caught when it is opened again', async () => {
    const dataDir = copy()
    const server = await startTestServer({ dataDir, store: 'file' })
    try {
      expect(await signIn(server.url)).toBe(200)
      server.deps.audit.closeUserLog(userId)
      await server.deps.audit.settle()
      write(dataDir, auditFileLines(logOf(dataDir)).slice(0, -3))
      expect(verify(dataDir).output).toMatch(/lines were removed from the end: .* \(3 missing\)/)
      expect(await signIn(server.url)).toBe(200)
      await server.deps.audit.settle()
      const broken = auditFileLines(logOf(dataDir))
        .map((line) => JSON.parse(line))
        .filter((event) => event.action === 'chain.broken')
      expect(broken.map((event) => event.details.message)).toEqual([expect.stringMatching(/\(3 missing\)/)])
      expect(verify(dataDir).code).toBe(1)
      const metrics = server.deps.metrics.render({ openVaults: 0, version: 'x', auditFailures: 0, auditChainBroken: server.deps.audit.chainBroken })
      expect(metrics).toContain('svc_vault_audit_chain_broken_total 1')
      const page = await (
        await fetch(`${server.url}/api/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email, password: PASSWORD }),
        })
      ).headers.getSetCookie()
      const cookie = page.find((line) => line.startsWith('svc_session='))!.split(';')[0]
      const audit = await (await fetch(`${server.url}/api/audit?limit=1`, { headers: { cookie } })).json()
      expect(audit.chainBroken).toMatchObject({ problem: 'removed' })
      expect(audit.head).toMatch(/^[0-9a-f]{64}$/)
    } finally {
      await server.stop()
    }
  })

  test("a log cut to nothing while the server runs, in a user's first run, fails once the server closed it (the anchor comes from its memory); at shutdown each head goes to the server's log", async () => {
    const dataDir = tempDir('svc-vault-tamper-')
    dirs.push(dataDir)
    const server = await startTestServer({ dataDir, store: 'file' })
    let user: Awaited<ReturnType<typeof signUp>>
    try {
      user = await signUp(server.url)
      for (let i = 0; i < 3; i++) await user.post('/api/categories', { name: `r${i}`, keyType: 'group' })
      await server.deps.audit.settle()
      writeFileSync(join(dataDir, 'vaults', `${user.user.id}.audit.log`), '')
      expect((await user.post('/api/categories', { name: 'after the cut', keyType: 'group' })).status).toBe(201)
    } finally {
      await server.stop()
    }
    const anchor = JSON.parse(readLoggedDocumentSync(join(dataDir, 'vaults', `${user!.user.id}.json`), VAULT_LISTS)!).auditChain
    expect(anchor).toMatchObject({ lines: 5 })
    expect(verify(dataDir).output).toMatch(/FAIL vaults\/.*the log is empty: all 5 line\(s\)/)
    const headLine = server.logs.find((line) => line.startsWith(`info: audit head ${user!.user.id} `))
    expect(headLine).toMatch(/^info: audit head [0-9a-f-]{36} [0-9a-f]{64} lines=5$/)
    expect(headLine!.split(' ')[4]).toBe(anchor.head)
  })

  test('old logs keep verifying: an unkeyed log of an earlier release is continued keyed, and the first keyed line is where keying begins', async () => {
    const dataDir = copy()
    // What a release before keying left: plain SHA-256 lines, an anchor with start, checkpoint and head only.
    const start = vaultDoc(dataDir).auditChain.start
    const old = rehash(auditFileLines(logOf(dataDir)), 0, start, false).map((line) => {
      const { hash: _hash, ...event } = JSON.parse(line)
      event.time = new Date(Date.parse(event.time) - 86_400_000).toISOString()
      return event
    })
    // Times a day earlier (before keying began): the chain is made again over them.
    const lines: string[] = []
    let prev = start
    for (const event of old) {
      const body = JSON.stringify({ ...event, prev })
      prev = sha256(body)
      lines.push(`${body.slice(0, -1)},"hash":"${prev}"}`)
    }
    write(dataDir, lines)
    writeAnchor(dataDir, () => ({ start, checkpoint: null, head: prev }))
    const serverAnchor = JSON.parse(readFileSync(join(dataDir, 'audit.chain.json'), 'utf8'))
    delete serverAnchor.keyedSince
    writeFileSync(join(dataDir, 'audit.chain.json'), JSON.stringify(serverAnchor))
    expect(verify(dataDir).output).toContain(`ok   vaults/${userId}.audit.log: 33 event(s), chain intact (unkeyed)`)
    expect(example(dataDir)).toBe(0)

    const server = await startTestServer({ dataDir, store: 'file' })
    expect(await signIn(server.url)).toBe(200)
    expect(server.deps.audit.chainBroken).toBe(0)
    await server.stop()
    const events = auditFileLines(logOf(dataDir)).map((line) => JSON.parse(line))
    expect(events.length).toBe(34)
    expect(events.slice(0, 33).every((event) => event.chain === undefined)).toBe(true)
    expect(events[33]).toMatchObject({ action: 'auth.login', chain: 'hmac-sha256', prev })
    expect(vaultDoc(dataDir).auditChain).toMatchObject({ lines: 34, head: events[33].hash, keyedSince: expect.any(String) })
    expect(verify(dataDir).output).toContain(`ok   vaults/${userId}.audit.log: 34 event(s), chain intact (keyed)`)
    expect(example(dataDir)).toBe(0)
    // An unkeyed line after the first keyed one was not written by the server.
    write(dataDir, [...auditFileLines(logOf(dataDir)), rehash([...lines, lines[0]], 33, null, false)[33]])
    expect(verify(dataDir).output).toMatch(/line 35 is not keyed, though keying began at line 34/)
    expect(example(dataDir)).toBe(1)
  })
})

describe('a master key rotation', () => {
  test('lines keyed before it still verify (the old audit key is kept sealed), lines after it are keyed under the new key', async () => {
    const dataDir = tempDir('svc-vault-tamper-')
    dirs.push(dataDir)
    cpSync(golden, dataDir, { recursive: true })
    const newKey = Buffer.alloc(32, 9).toString('base64')
    const rotate = Bun.spawnSync(['bun', 'src/cli/rotate-master-key.ts'], {
      cwd: ROOT,
      stdout: 'pipe',
      stderr: 'pipe',
      env: { ...WITHOUT_KEY, SVC_DATA_DIR: dataDir, SVC_MASTER_KEY: TEST_MASTER_KEY, SVC_NEW_MASTER_KEY: newKey },
    })
    expect(rotate.exitCode).toBe(0)
    const withNewKey = { ...WITHOUT_KEY, SVC_MASTER_KEY: newKey }
    expect(verify(dataDir, [], withNewKey).output).toContain(`ok   vaults/${userId}.audit.log: 33 event(s), chain intact (keyed)`)
    const server = await startTestServer({ dataDir, store: 'file', env: { SVC_MASTER_KEY: newKey } })
    try {
      const login = await fetch(`${server.url}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: PASSWORD }),
      })
      expect(login.status).toBe(200)
      expect(server.deps.audit.chainBroken).toBe(0)
    } finally {
      await server.stop()
    }
    const events = auditFileLines(logOf(dataDir)).map((line) => JSON.parse(line))
    expect(events.length).toBe(34)
    expect(events[33].key).not.toBe(events[0].key)
    expect(verify(dataDir, [], withNewKey).output).toContain(`ok   vaults/${userId}.audit.log: 34 event(s), chain intact (keyed)`)
    // The old master key alone no longer checks the new lines: they name a key it does not know.
    expect(verify(dataDir).output).toMatch(/FAIL .*line 34 is keyed under a key this master key does not know/)
    // A line edited before the rotation is still caught.
    write(
      dataDir,
      auditFileLines(logOf(dataDir)).map((x, i) => (i === 3 ? x.replace('"c2"', '"c22"') : x)),
    )
    expect(verify(dataDir, [], withNewKey).output).toMatch(/FAIL .*line 4 was edited/)
  })
})
