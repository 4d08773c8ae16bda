// `bun run mutants`: breaks each guarantee on purpose, one line at a time, and checks that the
// test which names that guarantee fails. Each break is applied to a scratch copy of the working
// tree (its tracked and new files, node_modules linked), the test file is run there, and the
// break is undone before the next one. A break whose test still passes "survived": exit 1.
//
// Each search string must occur exactly once in its file: a refactor that moves the code makes
// this script fail loudly instead of silently testing nothing. The list is documented in
// docs/security.md ("Guarantees and the tests that prove them").
//
//   bun run mutants                 every mutant
//   bun run mutants datasync fsync  only those whose name contains one of the words
import { spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { clusterMissing, ownCluster, type Cluster } from '../test/support/pg-cluster'
import { escapeRegExp, testNames } from './bun-test'

export interface Mutant {
  name: string
  /** The guarantee it breaks (docs/security.md). */
  guarantee: string
  file: string
  search: string
  replace: string
  /** The test file that names the guarantee. */
  test: string
  /**
   * The tests of that file that catch the break, by a part of their names (plain text, run with bun test -t):
   * only these run, for the break and unbroken. Unset: the whole file.
   */
  only?: string
  /**
   * Its test runs on PostgreSQL: SVC_TEST_POSTGRES (the cluster's URL) is passed through to it;
   * when it is not set, the script starts a throwaway cluster of its own for the run.
   */
  postgres?: true
}

export const MUTANTS: Mutant[] = [
  {
    name: 'reauth-fresh-proof',
    guarantee:
      'a stale session (no sign-in or re-authentication within 10 minutes) cannot make what outlives it: access keys, passkeys, device approvals, the webhook',
    file: 'src/auth/fresh-proof.ts',
    search: "if (auth.method !== 'session' || !accounts.isFreshSession(auth.sessionTokenHash)) throw reauthRequired()",
    replace: "if (auth.method !== 'session') throw reauthRequired()",
    test: 'test/account/reauth.test.ts',
  },
  {
    name: 'log-datasync',
    guarantee: 'crash safety: a vault or accounts write is answered only once its change log line is fsynced',
    file: 'src/store/change-log.ts',
    search: 'await timedSync(() => handle.datasync())',
    replace: '',
    test: 'test/robustness/durability-order.test.ts',
  },
  {
    name: 'new-log-dir-fsync',
    guarantee: 'crash safety: a new change log is durable only once its folder entry is fsynced',
    file: 'src/store/change-log.ts',
    search: 'if (!this.exists) await fsyncDir(dirname(this.path))',
    replace: '',
    test: 'test/robustness/durability-order.test.ts',
  },
  {
    name: 'temp-file-fsync',
    guarantee: 'crash safety: a rewritten file is fsynced before it is renamed into place',
    file: 'src/store/atomic-file.ts',
    search: '      await timedSync(() => handle.sync())',
    replace: '',
    test: 'test/robustness/durability-order.test.ts',
  },
  {
    name: 'rename-dir-fsync',
    guarantee: 'crash safety: the rename of a rewritten file is fsynced (its folder) before the answer',
    file: 'src/store/atomic-file.ts',
    search: '  await fsyncDir(dirname(path))',
    replace: '',
    test: 'test/robustness/durability-order.test.ts',
  },
  {
    name: 'audit-ack-before-sync',
    guarantee: 'recorded before the secret leaves: a reveal answers only once its audit line is fdatasynced',
    file: 'src/store/audit-log.ts',
    search: 'this.dataSync(fd, (error) => {',
    replace: '((_fd: number, done: (error: Error | null) => void) => done(null))(fd, (error) => {',
    test: 'test/robustness/audit-order.test.ts',
  },
  {
    name: 'audit-debris-zero-cut',
    guarantee:
      'nothing half-written is shown: every audit reader (open, first line, page backwards, export, verify) ends its log at the first zero byte a crash left',
    file: 'src/store/audit-log-reader.ts',
    search: 'const zero = bytes.indexOf(0)',
    replace: 'const zero = -1',
    test: 'test/store/audit-log.test.ts',
  },
  {
    name: 'audit-read-unsynced',
    guarantee: 'nothing half-written is shown: the audit log is read only up to its last durable line',
    file: 'src/audit/recorder.ts',
    search: 'log ? log.file.durableBytes : Infinity',
    replace: 'Infinity',
    test: 'test/audit/audit-log.test.ts',
  },
  {
    name: 'reply-before-durable',
    guarantee: 'crash safety: a write is answered only once it is on disk',
    file: 'src/store/group-commit.ts',
    search: 'return batch.promise',
    replace: 'return Promise.resolve()',
    test: 'test/robustness/durability-order.test.ts',
  },
  {
    name: 'overlapping-flushes',
    guarantee: 'no lost updates: one write of a document at a time (group commit)',
    file: 'src/store/group-commit.ts',
    search: 'if (!this.flushing) this.flush()',
    replace: 'this.flush()',
    test: 'test/robustness/concurrency.test.ts',
  },
  {
    name: 'backup-ignores-logs',
    guarantee: 'backups: a vault (and the accounts) in the bundle includes the commits still in its change log',
    file: 'src/store/backup.ts',
    search: 'readLoggedDocumentSync(join(dataDir, path), path === ACCOUNTS_FILE ? ACCOUNTS_LISTS : VAULT_LISTS)',
    replace: "readFileSync(join(dataDir, path), 'utf8')",
    test: 'test/robustness/backup.test.ts',
    only: 'a backup taken under write load restores every record acknowledged before it began',
  },
  {
    name: 'backup-without-vaults',
    guarantee: 'backups: every vault of the data folder is in the bundle',
    file: 'src/store/backup.ts',
    search: 'for (const name of names.sort())',
    replace: 'for (const name of names.slice(0, 0))',
    test: 'test/robustness/backup.test.ts',
    only: 'a backup taken under write load restores every record acknowledged before it began',
  },
  {
    name: 'open-skips-tag-check',
    guarantee: 'integrity: a sealed value opens only when its GCM tag matches the key, IV, ciphertext and AAD (the one open())',
    file: 'src/crypto/aead.ts',
    search: '    decipher.final() // throws when the tag does not match; GCM returns no further bytes',
    replace: '',
    test: 'test/platform/aead.test.ts',
  },
  {
    name: 'compare-length-only',
    guarantee: 'secrets and their hashes are compared in full, in constant time (the one constantTimeEqual)',
    file: 'src/crypto/tokens.ts',
    search: 'return left.length === right.length && timingSafeEqual(left, right)',
    replace: 'return left.length === right.length',
    test: 'test/platform/operations.test.ts',
    only: '401 without the token, with another token',
  },
  {
    name: 'aad-without-record-id',
    guarantee: 'tampering: a ciphertext is bound to its user, kind and record id',
    file: 'src/crypto/keyring.ts',
    search: ':${kind}:${recordId}`',
    replace: ':${kind}`',
    test: 'test/robustness/tampering.test.ts',
    only: 'a ciphertext copied to another record',
  },
  {
    name: 'body-depth-check',
    guarantee: 'hostile input: a deeply nested body is a 400, never a 500',
    file: 'src/http/body.ts',
    search: 'nestedDeeperThan(value, MAX_BODY_DEPTH) ? INVALID_JSON_BODY : value',
    replace: 'value',
    test: 'test/robustness/hostile-input.test.ts',
  },
  {
    name: 'failed-write-kept-in-memory',
    guarantee: 'failing disk: after a failed write the server shows only what is on disk',
    file: 'src/store/document.ts',
    search: 'const file = readDocumentSync<T>(this.path)',
    replace: 'const file = null as { data: T; length: number } | null',
    test: 'test/robustness/failing-disk.test.ts',
  },
  {
    name: 'shutdown-drops-requests',
    guarantee: 'clean shutdown: requests in flight are answered before the server exits',
    file: 'src/index.ts',
    search: 'app.server?.stop(false)',
    replace: 'app.server?.stop(true)',
    test: 'test/robustness/shutdown.test.ts',
  },
  {
    name: 'bun-export-dollar',
    guarantee: 'exact export: Bun reads back every value of format=bun ($ escaped, as Bun expands it even in single quotes)',
    file: 'src/modules/export/render.ts',
    search: "const escaped = value.replace(/\\$(?!$)|(?<=\\\\)\\$$/g, '\\\\$')",
    replace: 'const escaped = value',
    test: 'test/modules/export-readers.test.ts',
    only: 'Bun: a backslash before a last',
  },
  {
    name: 'export-refusal-skipped',
    guarantee: 'exact export: a value the format cannot carry is refused (400), never written different',
    file: 'src/modules/export/service.ts',
    search: "    assertCarried(rows, filter.format ?? 'dotenv')",
    replace: '',
    test: 'test/modules/export-readers.test.ts',
    only: 'the 22 values in each format',
  },
  {
    name: 'webhook-address-check',
    guarantee:
      'webhooks reach only public addresses: loopback, private, link-local, mapped and other internal addresses are refused in every notation unless SVC_WEBHOOK_ALLOW names them',
    file: 'src/modules/account/webhook-target.ts',
    search: '  return !isInternal(bare)',
    replace: '  return true',
    test: 'test/modules/webhook-ssrf.test.ts',
  },
  {
    name: 'hotp-counter-not-durable',
    guarantee: 'HOTP: a reveal answers only once the advanced counter is on disk (no code shown twice after kill -9)',
    file: 'src/modules/two-factor/service.ts',
    search: 'return doc.update((current, write) => {',
    replace: 'return doc.stage((current, write) => {',
    test: 'test/robustness/hotp-crash.test.ts',
  },
  {
    name: 'open-moves-head-without-checking',
    guarantee: 'audit evidence: opening a log checks that it still reaches its anchor before the anchor moves (issue 29)',
    file: 'src/audit/recorder.ts',
    search: 'const check = await checkLog(file, anchor, { verified: this.verified, mac: this.mac, serverAnchor: () => this.logStore.serverAnchor() })',
    replace: 'const check = { ok: true as const, lines: (await file.read()).lines.length }',
    test: 'test/audit/tamper-matrix.test.ts',
    only: 'delete the last line',
  },
  {
    name: 'verify-skips-missing-log',
    guarantee: 'audit evidence: audit-verify fails a log whose anchor says lines existed but whose file is gone (issue 29)',
    file: 'src/store/audit-log-reader.ts',
    search: 'if (log.missing && !anchor) continue',
    replace: 'if (log.missing) continue',
    test: 'test/audit/tamper-matrix.test.ts',
    only: 'delete the log',
  },
  {
    name: 'failed-sign-in-throttled-unrecorded',
    guarantee: 'audit: every refused sign-in (wrong password, code or passkey, refused by policy or the throttle) is recorded, by one rule for every method',
    file: 'src/auth/sign-in.ts',
    search: 'error.status < 400 || error.status >= 500',
    replace: 'error.status < 400 || error.status >= 429',
    test: 'test/audit/unauthenticated-flood.test.ts',
  },
  {
    name: 'writer-replace-unrecorded',
    guarantee:
      'crash safety: every change made through the writer reaches the change log (a record replaced in memory only is answered, then missing after a restart)',
    file: 'src/store/writer.ts',
    search: "record(['put', name, next])",
    replace: 'void next',
    test: 'test/store/document.test.ts',
  },
  {
    name: 'vault-removal-no-recheck',
    guarantee: 'a shared vault member removed while a reveal is in flight gets no value from it',
    file: 'src/auth/guard.ts',
    search: 'if (auth?.vaultId && auth.memberId) deps.vaultMount',
    replace: 'if (false && auth?.vaultId && auth.memberId) deps.vaultMount',
    test: 'test/vaults/removal.test.ts',
  },
  {
    name: 'vault-rotation-marked-unchanged',
    guarantee: "a rotation item is marked rotated only once its record's value changed",
    file: 'src/modules/vaults/rotation.ts',
    search: 'if (record && (record.valueVersion ?? 1) <= item.valueVersion)',
    replace: 'if (record && (record.valueVersion ?? 1) < item.valueVersion)',
    test: 'test/vaults/removal.test.ts',
  },
  {
    name: 'pg-update-without-version-check',
    guarantee:
      'no lost updates across instances: a commit whose version another instance wrote first is made again on the new data, never written over it (PostgreSQL store)',
    file: 'src/store/postgres/document.ts',
    search: 'VALUES (${id}, ${version}, ${json}) RETURNING version)',
    replace: 'VALUES (${id}, ${version}, ${json}) ON CONFLICT (document_id, version) DO UPDATE SET changes = EXCLUDED.changes RETURNING version)',
    test: 'test/postgres/two-instances.test.ts',
    only: 'a write that lost the race for its version',
    postgres: true,
  },
  {
    name: 'pg-revocation-not-notified',
    guarantee: 'a revocation on one instance reaches the others by NOTIFY at its commit, without a request of theirs (PostgreSQL store)',
    file: 'src/store/postgres/document.ts',
    search: 'SELECT pg_notify(${CHANNEL}, ${notice}) FROM written',
    replace: 'SELECT version FROM written',
    test: 'test/postgres/two-instances.test.ts',
    only: 'a revocation reaches an instance by notification',
    postgres: true,
  },
  {
    name: 'pg-audit-budget-per-instance',
    guarantee: 'failed sign-ins written one by one: at most 20 per log per hour across all instances on one database, the rest counted (PostgreSQL store)',
    file: 'src/audit/unauthenticated.ts',
    search: "this.sharedBudgets = deps.state?.shared ? deps.state.entries('audit-unauthenticated-budget') : null",
    replace: 'this.sharedBudgets = null',
    test: 'test/audit/two-instances.test.ts',
    only: 'failed sign-ins through two instances',
    postgres: true,
  },
  {
    name: 'pg-audit-append-over-moved-head',
    guarantee:
      'one audit chain per log across instances: an append sealed against the head an instance holds is written only if the row still holds that head, else sealed again under the row lock (PostgreSQL store)',
    file: 'src/store/postgres/audit-log.ts',
    search: 'WHERE log_id = ${this.key} AND (head, lines, bytes) = (${held}, ${lines}, ${bytes})',
    replace: 'WHERE log_id = ${this.key}',
    test: 'test/audit/two-instances.test.ts',
    only: 'two instances recording events for one vault at once',
    postgres: true,
  },
  {
    name: 'pg-audit-delete-lines-before-row',
    guarantee:
      "deleting an audit log leaves none of its lines, also those of another instance's append committing meanwhile (PostgreSQL store: no foreign key does it since migration 5)",
    file: 'src/store/postgres/audit-log.ts',
    search: '        await tx`DELETE FROM svc_audit_logs WHERE log_id = ${id}`\n        await tx`DELETE FROM svc_audit_lines WHERE log_id = ${id}`',
    replace: '        await tx`DELETE FROM svc_audit_lines WHERE log_id = ${id}`\n        await tx`DELETE FROM svc_audit_logs WHERE log_id = ${id}`',
    test: 'test/store/postgres-audit-log.test.ts',
    postgres: true,
  },
  {
    name: 'pg-refresh-shares-older-query',
    guarantee:
      'a read on one instance sees every write another acknowledged before it began, also when a refresh of the document was already under way (PostgreSQL store)',
    file: 'src/store/postgres/document.ts',
    search: 'running && running.sentAt >= arrived ? running.documents.get(document) : undefined',
    replace: 'running ? running.documents.get(document) : undefined',
    test: 'test/store/postgres-document.test.ts',
    postgres: true,
  },
  {
    name: 'pg-refresh-fresh-before-request',
    guarantee:
      'a request reads again a document whose last refresh was sent before the request began (PostgreSQL store: a write another instance acknowledged in between is seen)',
    file: 'src/store/postgres/document.ts',
    search: '    if (document.freshAsOf >= arrived) return Promise.resolve()',
    replace: '    if (document.freshAsOf > -Infinity) return Promise.resolve()',
    test: 'test/store/postgres-document.test.ts',
    only: 'a refresh that ended before a request began',
    postgres: true,
  },
  {
    name: 'pg-refresh-ends-under-own-write',
    guarantee:
      'a refresh whose document began a write of its own after the query was sent waits for that write (PostgreSQL store: a write another instance acknowledged before the request is seen)',
    file: 'src/store/postgres/document.ts',
    search: '          if (document.freshAsOf >= wave.sentAt) return waiting.resolve()',
    replace: '          return waiting.resolve()',
    test: 'test/store/postgres-document.test.ts',
    postgres: true,
  },
  {
    name: 'pg-reload-acknowledges-dropped',
    guarantee:
      'an update made while a document is read again after a conflict runs again on the new data (PostgreSQL store: never acknowledged without its write)',
    file: 'src/store/postgres/document.ts',
    search: '    this.dropStaged(new VersionConflictError(this.id))',
    replace: '    this.pending.take()',
    test: 'test/store/postgres-document.test.ts',
    postgres: true,
  },
  {
    name: 'pg-queued-behind-unanswered-wave',
    guarantee:
      'a request queued behind a refresh the database does not answer fails with it: 503 within a second of its arrival, not after a bound of its own (PostgreSQL store)',
    file: 'src/store/postgres/document.ts',
    search: '        for (const waiting of this.next?.values() ?? []) waiting.reject(error)\n        this.next = null',
    replace: '        void 0',
    test: 'test/platform/postgres-operations.test.ts',
    only: 'held by the cut',
    postgres: true,
  },
]

const ROOT = join(import.meta.dir, '..')

function run(command: string[], cwd: string, env: Record<string, string> = {}): { code: number; output: string } {
  const result = spawnSync(command[0], command.slice(1), { cwd, env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  return { code: result.status ?? 1, output: `${result.stdout ?? ''}${result.stderr ?? ''}` }
}

/** Tracked and new (not ignored) files of the working tree, as they are now. */
function scratchCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-vault-mutants-'))
  const listed = run(['git', 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], ROOT)
  if (listed.code !== 0) throw new Error(`git ls-files failed: ${listed.output}`)
  // node_modules is linked below (a symlink to it is not matched by a `node_modules/` ignore rule).
  for (const file of listed.output.split('\0').filter((name) => name && name !== 'node_modules' && !name.startsWith('node_modules/'))) {
    mkdirSync(dirname(join(dir, file)), { recursive: true })
    try {
      cpSync(join(ROOT, file), join(dir, file))
    } catch (error) {
      // A file deleted in the working tree but still tracked: not part of it.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    }
  }
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  return dir
}

function occurrences(text: string, search: string): number {
  let count = 0
  for (let at = text.indexOf(search); at >= 0; at = text.indexOf(search, at + 1)) count++
  return count
}

/** The PostgreSQL cluster's URL for the tests that need one (SVC_TEST_POSTGRES, or a throwaway one). */
let postgresUrl: string | undefined

function runTest(dir: string, test: string, postgres = false, pattern?: string) {
  // CI=true: a test that cannot run here fails instead of skipping, so a skip never counts as a kill
  // (the unbroken run below must pass first).
  const filter = pattern ? ['-t', pattern] : []
  return run(['bun', 'test', '--timeout', '60000', ...filter, test], dir, {
    CI: 'true',
    ...(postgres && postgresUrl ? { SVC_TEST_POSTGRES: postgresUrl } : {}),
  })
}

/** The -t pattern that runs the tests of every mutant of one file: all of it if one needs it whole. */
function filterFor(mutants: Mutant[]): string | undefined {
  if (mutants.some((m) => !m.only)) return undefined
  return [...new Set(mutants.map((m) => escapeRegExp(m.only!)))].join('|')
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

async function main(): Promise<number> {
  const words = process.argv.slice(2)
  const chosen = words.length ? MUTANTS.filter((m) => words.some((w) => m.name.includes(w))) : MUTANTS
  if (chosen.length === 0) {
    console.error(`no mutant matches ${words.join(' ')}; known: ${MUTANTS.map((m) => m.name).join(', ')}`)
    return 1
  }
  const started = Date.now()
  // Every search string first, so a stale one fails at once rather than after minutes.
  const stale = chosen.filter((m) => occurrences(readFileSync(join(ROOT, m.file), 'utf8'), m.search) !== 1)
  for (const m of stale) {
    const count = occurrences(readFileSync(join(ROOT, m.file), 'utf8'), m.search)
    console.error(`mutant ${m.name}: ${JSON.stringify(m.search)} occurs ${count} times in ${m.file} (must be exactly once): update scripts/mutants.ts`)
  }
  if (stale.length) return 1

  let cluster: Cluster | undefined
  if (chosen.some((m) => m.postgres)) {
    postgresUrl = process.env.SVC_TEST_POSTGRES?.trim() || undefined
    if (!postgresUrl) {
      const missing = clusterMissing()
      if (missing) {
        console.error(`the PostgreSQL mutants need SVC_TEST_POSTGRES or a cluster of their own: ${missing}`)
        return 1
      }
      cluster = await ownCluster()
      postgresUrl = cluster.url
    }
  }
  const dir = scratchCopy()
  try {
    // The unbroken code must pass each test file (the tests the mutants name), or a failure would
    // prove nothing; and each mutant's `only` must name a test that ran, or it would test nothing.
    for (const test of [...new Set(chosen.map((m) => m.test))]) {
      const t0 = Date.now()
      const ofFile = chosen.filter((m) => m.test === test)
      const clean = runTest(
        dir,
        test,
        ofFile.some((m) => m.postgres),
        filterFor(ofFile),
      )
      if (clean.code !== 0) {
        console.error(`${test} fails on the unbroken code (${seconds(Date.now() - t0)}):\n${clean.output.slice(-4000)}`)
        return 1
      }
      const passed = testNames(clean.output, ['pass'])
      const empty = ofFile.filter((m) => m.only && !passed.some((name) => name.includes(m.only!)))
      if (empty.length) {
        console.error(
          `no test of ${test} passed under the name of ${empty.map((m) => `${m.name} (${JSON.stringify(m.only)})`).join(', ')}: update scripts/mutants.ts`,
        )
        return 1
      }
      console.log(`unbroken: ${test} passes (${passed.length} test${passed.length === 1 ? '' : 's'}, ${seconds(Date.now() - t0)})`)
    }
    const survivors: Mutant[] = []
    for (const m of chosen) {
      const path = join(dir, m.file)
      const original = readFileSync(path, 'utf8')
      writeFileSync(path, original.replace(m.search, m.replace))
      const t0 = Date.now()
      const result = runTest(dir, m.test, m.postgres, filterFor([m]))
      writeFileSync(path, original)
      const killed = result.code !== 0
      console.log(`${killed ? 'caught  ' : 'SURVIVED'} ${m.name.padEnd(28)} ${m.test} (${seconds(Date.now() - t0)})`)
      // By which tests (bun marks each failing one "(fail)"; none: the file failed outside a test).
      if (killed) for (const name of testNames(result.output, ['fail'])) console.log(`           by: ${name}`)
      if (!killed) survivors.push(m)
      // MUTANTS_VERBOSE=1: why each break was caught (the failing expectations).
      else if (process.env.MUTANTS_VERBOSE)
        console.log(
          result.output
            .split('\n')
            .filter((line) => /error|expect|fail|\+ |- /i.test(line))
            .slice(0, 30)
            .join('\n'),
        )
    }
    console.log(`${chosen.length - survivors.length} of ${chosen.length} breaks caught in ${seconds(Date.now() - started)}`)
    if (survivors.length) {
      console.error(`survived (the test passes with the guarantee broken): ${survivors.map((m) => `${m.name} in ${m.file}`).join(', ')}`)
      return 1
    }
    return 0
  } finally {
    rmSync(dir, { recursive: true, force: true })
    await cluster?.remove()
  }
}

if (import.meta.main) process.exit(await main())
