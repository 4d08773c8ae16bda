// The schema, as numbered migrations the server applies at start, one at a time and each in its
// own transaction, under an advisory lock (instances starting together wait for each other). A
// database whose schema is newer than this server knows is refused: an older server would write
// what the newer one no longer reads.
import { StoreUnavailableError } from '../errors'
import type { Database, Sql } from './database'

/** The advisory lock key of migrations ('svc-vault' as a number). */
const MIGRATION_LOCK = 0x5356_4356

export class SchemaTooNewError extends Error {}

/** MIGRATIONS[n - 1] brings the schema from version n - 1 to n. Never change one that shipped: add the next. */
export const MIGRATIONS: readonly { name: string; up: (tx: Sql) => Promise<unknown> }[] = [
  {
    name: 'documents and their changes',
    up: async (tx) => {
      // A document: the accounts, or one vault. `snapshot` is its JSON (sealed values and hashes
      // only) as of `snapshot_version`; the changes after it are rows of svc_changes.
      await tx`CREATE TABLE svc_documents (
        id text PRIMARY KEY,
        kind text NOT NULL CHECK (kind IN ('accounts', 'vault')),
        snapshot text NOT NULL,
        snapshot_version bigint NOT NULL,
        deleted boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now()
      )`
      // One row per commit; the key (document, version) is the version check of a write.
      await tx`CREATE TABLE svc_changes (
        document_id text NOT NULL REFERENCES svc_documents (id) ON DELETE CASCADE,
        version bigint NOT NULL,
        changes text NOT NULL,
        written_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (document_id, version)
      )`
    },
  },
  {
    name: 'audit logs',
    up: async (tx) => {
      // One row per log (a vault's, or 'server'): the head the next line chains from and, with it,
      // the anchor (docs/audit.md), so that an append locks the row (FOR UPDATE), seals its lines
      // against that head and moves it in one transaction: instances appending at once make one chain.
      await tx`CREATE TABLE svc_audit_logs (
        log_id text PRIMARY KEY,
        head text NOT NULL,
        lines bigint NOT NULL DEFAULT 0,
        bytes bigint NOT NULL DEFAULT 0,
        anchor jsonb NOT NULL
      )`
      // The lines, byte for byte the file store's (without the newline), in chain order.
      await tx`CREATE TABLE svc_audit_lines (
        log_id text NOT NULL REFERENCES svc_audit_logs (log_id) ON DELETE CASCADE,
        seq bigint NOT NULL,
        line text NOT NULL,
        PRIMARY KEY (log_id, seq)
      )`
    },
  },
  // 3: shared state (reserved for the "state" part of issue 34).
]

export const SCHEMA_VERSION = MIGRATIONS.length

/** Applies the migrations the database lacks; returns the schema version found before. */
export async function migrate(db: Database): Promise<number> {
  const reserved = await db.run((sql) => sql.reserve())
  try {
    await reserved`SELECT pg_advisory_lock(${MIGRATION_LOCK})`
    try {
      await reserved`CREATE TABLE IF NOT EXISTS svc_schema (version integer NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`
      const [row] = await reserved`SELECT coalesce(max(version), 0)::int AS version FROM svc_schema`
      const found = Number(row.version)
      if (found > SCHEMA_VERSION) {
        throw new SchemaTooNewError(
          `the database's schema is version ${found}, newer than this svc-vault knows (${SCHEMA_VERSION}): run the newer svc-vault, or restore a backup taken before the upgrade`,
        )
      }
      for (let version = found + 1; version <= SCHEMA_VERSION; version++) {
        await reserved.begin(async (tx) => {
          await MIGRATIONS[version - 1].up(tx)
          await tx`INSERT INTO svc_schema (version) VALUES (${version})`
        })
      }
      return found
    } finally {
      await reserved`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`.catch(() => {})
    }
  } catch (error) {
    if (error instanceof SchemaTooNewError) throw error
    if (error instanceof StoreUnavailableError) throw error
    throw new StoreUnavailableError(`could not bring the database's schema up to date: ${(error as Error).message}`)
  } finally {
    reserved.release()
  }
}
