// An audit log read as any tool would read it: JSON Lines, one event per line, nothing else (a
// zero byte, say, fails the test). From the data folder's file, or, for a server on the
// database store, from the database (the same lines, byte for byte): `storedAudit*` take the
// server and read wherever its logs are.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { SQL } from 'bun'
import type { AppDeps } from '../../src/app'
import { snapshotText } from '../../src/store/postgres/document'
import { PgStore } from '../../src/store/postgres/store'
import { databaseFor, ON_POSTGRES } from './postgres'

export function auditFileText(path: string): string {
  if (!existsSync(path)) return ''
  const text = readFileSync(path, 'utf8')
  if (text.includes('\0')) throw new Error(`${path}: zero bytes in an audit log`)
  return text
}

export function auditFileLines(path: string): string[] {
  return auditFileText(path).split('\n').filter(Boolean)
}

/** A server in this process (its deps say which store), or one spawned on a data folder (the suite's pass says). */
interface AuditHolder {
  deps?: Pick<AppDeps, 'store' | 'config'>
  dataDir: string
}

/** The database URL of a server on the database store (undefined: the file store). */
export function databaseOf(server: AuditHolder & { deps: Pick<AppDeps, 'store' | 'config'> }): string | undefined {
  return server.deps.store instanceof PgStore ? server.deps.config.databaseUrl : undefined
}

async function urlOf(server: AuditHolder): Promise<string | undefined> {
  if (server.deps) return databaseOf(server as AuditHolder & { deps: Pick<AppDeps, 'store' | 'config'> })
  return ON_POSTGRES ? databaseFor(server.dataDir) : undefined
}

const logId = (userId: string | null) => userId ?? 'server'

/** The lines of a vault's log (null: the server's log), wherever the server keeps them. */
export async function storedAuditLines(server: AuditHolder, userId: string | null): Promise<string[]> {
  const url = await urlOf(server)
  if (!url) return auditFileLines(userId === null ? join(server.dataDir, 'audit.log') : join(server.dataDir, 'vaults', `${userId}.audit.log`))
  // A connection of its own: the server may be stopped already (what it wrote at shutdown).
  const lines = await databaseAuditLines(url, userId)
  if (lines.some((line: string) => line.includes('\0') || line.includes('\n'))) throw new Error('a stored audit line holds a zero byte or a newline')
  return lines
}

/** The log as a file would hold it (each line with its newline). */
export async function storedAuditText(server: AuditHolder, userId: string | null): Promise<string> {
  const lines = await storedAuditLines(server, userId)
  return lines.map((line) => `${line}\n`).join('')
}

/** Replaces a log's lines in the database as an attacker with access would (its head row untouched). */
export async function writeDatabaseAuditLines(url: string, userId: string | null, lines: string[]): Promise<void> {
  const sql = new SQL(url, { max: 1 })
  try {
    await sql.begin(async (tx) => {
      await tx`DELETE FROM svc_audit_lines WHERE log_id = ${logId(userId)}`
      if (lines.length > 0) await tx`INSERT INTO svc_audit_lines ${tx(lines.map((line, index) => ({ log_id: logId(userId), seq: index + 1, line })))}`
    })
  } finally {
    await sql.close()
  }
}

/** A log's lines read from a database by its URL (a server stopped meanwhile). */
export async function databaseAuditLines(url: string, userId: string | null): Promise<string[]> {
  const sql = new SQL(url, { max: 1 })
  try {
    const rows = await sql`SELECT line FROM svc_audit_lines WHERE log_id = ${logId(userId)} ORDER BY seq`
    return rows.map((row: { line: string }) => row.line)
  } finally {
    await sql.close()
  }
}

/** The events of a vault's log (null: the server's), parsed. */
export async function storedAuditEvents(server: AuditHolder, userId: string | null): Promise<any[]> {
  return (await storedAuditLines(server, userId)).map((line) => JSON.parse(line))
}

/** Whether a vault's log exists: its file, or its row. */
export async function storedAuditLogExists(server: AuditHolder, userId: string): Promise<boolean> {
  const url = await urlOf(server)
  if (!url) return existsSync(join(server.dataDir, 'vaults', `${userId}.audit.log`))
  const sql = new SQL(url, { max: 1 })
  try {
    return (await sql`SELECT 1 FROM svc_audit_logs WHERE log_id = ${userId}`).length > 0
  } finally {
    await sql.close()
  }
}

/** A vault's chain anchor: in its document on the file store, in the log's row on the database. */
export async function storedAuditAnchor(
  server: AuditHolder & { deps: Pick<AppDeps, 'store' | 'config'> },
  userId: string,
): Promise<{ start: string; checkpoint: string | null } & Record<string, unknown>> {
  const store = server.deps.store
  if (!(store instanceof PgStore)) return (await store.vault(userId, () => ({}) as never)).data.auditChain as never
  const [row] = await store.db.run((sql) => sql`SELECT anchor::text AS anchor, head, lines FROM svc_audit_logs WHERE log_id = ${userId}`)
  return { ...JSON.parse(row.anchor), head: row.head, lines: Number(row.lines) }
}

/** Runs audit-verify on a server's logs (its data folder, or its database). */
export function verifyAudit(
  server: AuditHolder & { deps: Pick<AppDeps, 'store' | 'config'> },
  options: { dataDir?: string; args?: string[]; env?: Record<string, string | undefined> } = {},
): { code: number; output: string } {
  const url = databaseOf(server)
  const run = Bun.spawnSync(['bun', 'src/cli/audit-verify.ts', '--data-dir', options.dataDir ?? server.dataDir, ...(options.args ?? [])], {
    cwd: join(import.meta.dir, '..', '..'),
    stdout: 'pipe',
    stderr: 'pipe',
    env: { ...process.env, ...options.env, ...(url ? { SVC_DATABASE_URL: url, SVC_DATABASE_URL_FILE: undefined } : {}) },
  })
  return { code: run.exitCode, output: run.stdout.toString() + run.stderr.toString() }
}

/** Rewrites a vault's log as an attacker would: its file, or its rows (the anchor left as it is). */
export async function rewriteStoredAuditLines(server: AuditHolder, userId: string, change: (lines: string[]) => string[]): Promise<void> {
  const url = await urlOf(server)
  const lines = change(await storedAuditLines(server, userId))
  if (url) return writeDatabaseAuditLines(url, userId, lines)
  writeFileSync(join(server.dataDir, 'vaults', `${userId}.audit.log`), lines.map((line) => `${line}\n`).join(''))
}

/**
 * Everything the server stored, as text, for a canary search: each file of its data folder, or,
 * on the database, every document, change, audit line and anchor row.
 */
export async function storedTexts(server: AuditHolder): Promise<{ where: string; text: string }[]> {
  const url = await urlOf(server)
  if (!url) {
    const found: { where: string; text: string }[] = []
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name)
        if (statSync(path).isDirectory()) walk(path)
        else found.push({ where: path, text: readFileSync(path, 'utf8') })
      }
    }
    walk(server.dataDir)
    return found
  }
  const sql = new SQL(url, { max: 1 })
  try {
    // Documents, changes, audit logs, and the shared state (throttle windows, used challenges, pending device sign-ins).
    const rows = await sql`
      SELECT 'svc_documents ' || id AS where, snapshot AS text, packed FROM svc_documents
      UNION ALL SELECT 'svc_changes ' || document_id || ' ' || version, changes, NULL FROM svc_changes
      UNION ALL SELECT 'svc_audit_lines ' || log_id || ' ' || seq, line, NULL FROM svc_audit_lines
      UNION ALL SELECT 'svc_audit_logs ' || log_id, anchor::text, NULL FROM svc_audit_logs
      UNION ALL SELECT 'svc_state_entries ' || key, key || ' ' || value, NULL FROM svc_state_entries
      UNION ALL SELECT 'svc_state_windows ' || key, key, NULL FROM svc_state_windows`
    // A packed snapshot unpacked: a plaintext in it must be found, not hidden by the packing.
    return Promise.all(
      rows.map(async (row: { where: string; text: string; packed: Uint8Array | null }) => ({ where: row.where, text: await snapshotText(row) })),
    )
  } finally {
    await sql.close()
  }
}
