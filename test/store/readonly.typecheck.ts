// A type test, checked by `bun run typecheck` (tsc; CI runs it in .ci/run), never run: stored
// data is readonly to its callers, so an in-place write, which the change log would never see
// (acknowledged, then missing after a restart), fails to compile. Each `@ts-expect-error` fails
// tsc in turn if the line under it ever compiles. The only way to change stored data is the
// writer that `update` hands over (src/store/writer.ts).
import type { StoredDocument } from '../../src/store/data-store'
import type { AccountsDocument, EntryRecord, VaultDocument } from '../../src/store/records'

declare const vault: StoredDocument<VaultDocument>
declare const accounts: StoredDocument<AccountsDocument>
declare const entry: EntryRecord

export function inPlaceWritesDoNotCompile(): void {
  const entries = vault.data.entries
  // @ts-expect-error a stored list cannot be assigned into
  entries[0] = entry
  // @ts-expect-error nor spliced
  entries.splice(0, 1)
  // @ts-expect-error nor pushed to
  entries.push(entry)
  // @ts-expect-error nor sorted in place
  entries.sort()
  // @ts-expect-error a stored list cannot be swapped for another
  vault.data.entries = []
  // @ts-expect-error a stored record's field cannot be set
  entries[0].name = 'renamed'
  // @ts-expect-error nor a list inside a record changed
  accounts.data.users[0].identities.push({ issuer: 'x', subject: 'y' })
  // @ts-expect-error nor a top-level field set
  accounts.data.keyCheck = 'x'

  void vault.update((data, write) => {
    // @ts-expect-error not through the data handed to update either
    data.entries.push(entry)
    // The writer is the way: it records each change for the change log.
    write.entries.push(entry)
    write.entries.replace({ ...entry, name: 'renamed' })
    write.entries.remove(entry.id)
    write.entries.removeWhere((candidate) => candidate.categoryId === entry.categoryId)
    write.set('auditChain', { start: 'x', checkpoint: null })
    // @ts-expect-error a list is changed record by record, never set whole
    write.set('entries', [])
  })
}
