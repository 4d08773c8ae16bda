// src/store/postgres/audit-log.ts (issue 34): the lines of a batch travel as one text split in the
// statement, so a line must come back byte for byte whatever its event holds; and with no foreign
// key from the lines to their log (migration 5), deleting a log must still take every line of it,
// also those of an append that was committing as the delete began.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import { sealLine } from '../../src/audit/chain'
import { PgAuditLogStore } from '../../src/store/postgres/audit-log'
import { PgStore } from '../../src/store/postgres/store'
import { freshDatabase, missingPostgres } from '../support/postgres'
import { describeNeeding } from '../support/requirements'

describeNeeding(missingPostgres)('PostgreSQL audit logs', () => {
  let store: PgStore
  let logs: PgAuditLogStore
  beforeAll(async () => {
    store = await PgStore.open(await freshDatabase(), { createKeyCheck: () => 'check' })
    logs = new PgAuditLogStore(store.db)
  })
  afterAll(async () => {
    await store?.close()
  })

  const open = (id: string) => logs.open<object>(id, { headOf: (_, anchor) => anchor.head ?? anchor.start, seal: (event, prev) => sealLine(event, prev) })
  const linesOf = async (id: string) =>
    (await store.db.run((sql) => sql`SELECT line FROM svc_audit_lines WHERE log_id = ${id} ORDER BY seq`)).map((row: { line: string }) => row.line)

  test('lines come back byte for byte, whatever the events hold (quotes, backslashes, escapes, any Unicode)', async () => {
    const id = crypto.randomUUID()
    const log = await open(id)
    const awkward = ['\n', '\\n', "E'\\n'", '"\'\\', '\r\t\u2028\u2029', '', 'é 🔑 ✓', '\\\\n\n\\']
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom(...awkward)), { minLength: 1, maxLength: 12 }), async (notes) => {
        await Promise.all(notes.map((note) => log.append({ action: 'test', note })))
        const { lines } = await log.read()
        expect(await linesOf(id)).toEqual(lines)
        expect(lines.slice(-notes.length).map((line) => JSON.parse(line).note)).toEqual(notes)
      }),
      { numRuns: 25 },
    )
  })

  test('deleting a log takes all its lines, also those of an append committing meanwhile (another instance)', async () => {
    const id = crypto.randomUUID()
    const log = await open(id)
    await log.append({ action: 'first' })
    // Another instance's append, under way: the row moved and a line written, not yet committed.
    const other = await store.db.sql.reserve()
    try {
      await other`BEGIN`
      await other`UPDATE svc_audit_logs SET lines = lines + 1 WHERE log_id = ${id}`
      await other`INSERT INTO svc_audit_lines (log_id, seq, line) VALUES (${id}, 1000, '{"action":"meanwhile"}')`
      const deleted = logs.delete(id)
      // The delete waits for that append (it holds the row) ... (seen from outside that
      // transaction: within one, the activity view keeps the figures it first read)
      for (let waiting = false; !waiting; ) {
        const [row] = await store.db
          .sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'DELETE FROM svc_audit_%'`
        waiting = row.n > 0
        if (!waiting) await Bun.sleep(5)
      }
      // ... and once it commits, its line goes with the rest.
      await other`COMMIT`
      await deleted
    } finally {
      other.release()
    }
    expect(await linesOf(id)).toEqual([])
    expect(await store.db.run((sql) => sql`SELECT log_id FROM svc_audit_logs WHERE log_id = ${id}`)).toHaveLength(0)
  })

  test('a line holding a newline is refused whole, never stored as two lines', async () => {
    const id = crypto.randomUUID()
    const log = await logs.open<object>(id, {
      headOf: (_, anchor) => anchor.head ?? anchor.start,
      seal: (event, prev) => {
        const sealed = sealLine(event, prev)
        return { ...sealed, text: sealed.text.replace('"action"', '"action"\n') }
      },
    })
    expect(log.append({ action: 'split' })).rejects.toThrow('newline')
    await log.settle()
    expect(await linesOf(id)).toEqual([])
  })

  test('an append after the delete writes nothing: no line without its log', async () => {
    const id = crypto.randomUUID()
    const log = await open(id)
    await log.append({ action: 'first' })
    await logs.delete(id)
    await log.append({ action: 'late' }).catch(() => {})
    expect(await linesOf(id)).toEqual([])
  })
})
