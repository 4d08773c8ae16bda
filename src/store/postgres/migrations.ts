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
      // Kept uncompressed: the accounts' snapshot at 50,000 accounts (some 30 MB) took four times
      // as long to write compressed, and longer to read at start (docs/scaling.md).
      await tx`ALTER TABLE svc_documents ALTER COLUMN snapshot SET STORAGE EXTERNAL`
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
  {
    name: 'shared state: counters within a window, short-lived entries',
    up: async (tx) => {
      // Throttles and the sign-up limit: one row per key (SHA-256 of purpose and key) with the
      // times (ms, the server's clock) of its events within the window.
      await tx`CREATE TABLE svc_state_windows (
        key text PRIMARY KEY,
        events bigint[] NOT NULL,
        expires_at bigint NOT NULL
      )`
      await tx`CREATE INDEX svc_state_windows_expiry ON svc_state_windows (expires_at)`
      // Counts one event under every key of `limits` (JSON [{key, max}]) when each is under its
      // max within the window, else none: the rows are locked in key order (no deadlock), checked
      // together and changed together, in one round trip. Answers each key's events and whether
      // the event was counted.
      await tx.unsafe(`CREATE FUNCTION svc_state_take(limits text, now_ms bigint, since_ms bigint, expires_ms bigint)
        RETURNS TABLE (key text, events text, counted boolean) LANGUAGE plpgsql AS $$
        #variable_conflict use_column
        DECLARE
          wanted jsonb := limits::jsonb;
          ok boolean;
        BEGIN
          INSERT INTO svc_state_windows (key, events, expires_at)
            SELECT l.key, '{}', expires_ms FROM jsonb_to_recordset(wanted) AS l(key text, max int) ORDER BY l.key
            ON CONFLICT (key) DO NOTHING;
          PERFORM 1 FROM svc_state_windows w
            WHERE w.key IN (SELECT l.key FROM jsonb_to_recordset(wanted) AS l(key text, max int)) ORDER BY w.key FOR UPDATE;
          SELECT bool_and((SELECT count(*) FROM unnest(w.events) e WHERE e > since_ms) < l.max) INTO ok
            FROM jsonb_to_recordset(wanted) AS l(key text, max int) JOIN svc_state_windows w ON w.key = l.key;
          IF ok THEN
            UPDATE svc_state_windows w SET events = ARRAY(SELECT e FROM unnest(w.events) e WHERE e > since_ms ORDER BY e) || now_ms, expires_at = expires_ms
              WHERE w.key IN (SELECT l.key FROM jsonb_to_recordset(wanted) AS l(key text, max int));
          END IF;
          RETURN QUERY SELECT w.key, array_to_string(ARRAY(SELECT e FROM unnest(w.events) e WHERE e > since_ms ORDER BY e), ','), ok
            FROM svc_state_windows w WHERE w.key IN (SELECT l.key FROM jsonb_to_recordset(wanted) AS l(key text, max int));
        END $$`)
      // Used challenges, passkey registrations, pending device sign-ins: keyed by a hash, values
      // without secrets, `version` for compare-and-set, `count` for counters.
      await tx`CREATE TABLE svc_state_entries (
        key text PRIMARY KEY,
        value text NOT NULL,
        version bigint NOT NULL,
        count bigint NOT NULL DEFAULT 0,
        expires_at bigint NOT NULL
      )`
      await tx`CREATE INDEX svc_state_entries_expiry ON svc_state_entries (expires_at)`
    },
  },
  {
    name: 'packed snapshots',
    up: async (tx) => {
      // A snapshot the store writes is kept packed (zstd of the JSON, `snapshot` then empty): the
      // accounts of 50,000 users are some 30 MB of JSON and 5 MB packed, and reading them whole at
      // start took 200-450 ms as text against 20-60 ms packed (docs/scaling.md). Packed by the
      // instance, off its event loop; the database adds no compression of its own.
      await tx`ALTER TABLE svc_documents ADD COLUMN packed bytea`
      await tx`ALTER TABLE svc_documents ALTER COLUMN packed SET STORAGE EXTERNAL`
    },
  },
  {
    name: 'audit lines without a foreign key',
    up: async (tx) => {
      // The key's check ran once per line appended: a lookup of the log's row that the same
      // statement had just locked to move its head, so a second lock on it as well: some sixth
      // of the database's CPU time on an audited reveal (docs/scaling.md). Lines are only
      // ever written by a statement that moved their log's row, and deleting a log deletes its
      // lines in the same transaction (postgres/audit-log.ts), which is what the key guarded.
      await tx`ALTER TABLE svc_audit_lines DROP CONSTRAINT IF EXISTS svc_audit_lines_log_id_fkey`
    },
  },
]

export const SCHEMA_VERSION = MIGRATIONS.length

/**
 * Applies the migrations the database lacks; returns the schema version found before.
 * `timeoutMs`: the bound of the connection's wait (a server's start gives its own, not a request's).
 */
export async function migrate(db: Database, timeoutMs?: number): Promise<number> {
  const reserved = await db.run((sql) => sql.reserve(), { timeoutMs })
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
