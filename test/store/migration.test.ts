// Upgrading a document in place: a migration's result is written back when the document opens
// (its change log folded in), before any request; read-only tools (backup) never write it.
import { afterAll, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Document } from '../../src/store/document'
import { removeDir, tempDir } from '../support/server'

interface Doc {
  readonly version: number
  readonly items: readonly { readonly id: string; readonly name: string; readonly label?: string }[]
}

const dirs: string[] = []
afterAll(() => dirs.forEach(removeDir))

async function versionOneWithLog(): Promise<string> {
  const dir = tempDir('svc-vault-migration-')
  dirs.push(dir)
  const path = join(dir, 'doc.json')
  const doc = await Document.open<Doc>(path, { create: () => ({ version: 1, items: [] }), loggedLists: ['items'] })
  await doc.update((_, write) => write.items.push({ id: 'a', name: 'first' }))
  expect(existsSync(`${path}.log`)).toBe(true)
  return path
}

const toVersionTwo = (data: Doc): Doc =>
  data.version === 1 ? { version: 2, items: data.items.map((item) => ({ ...item, label: item.name.toUpperCase() })) } : data

test('a migrated document is written in its new format at once, its change log folded in', async () => {
  const path = await versionOneWithLog()
  const doc = await Document.open<Doc>(path, {
    create: () => ({ version: 2, items: [] }),
    loggedLists: ['items'],
    migrate: toVersionTwo,
    persistMigration: true,
  })
  expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ version: 2, items: [{ id: 'a', name: 'first', label: 'FIRST' }] })
  expect(existsSync(`${path}.log`)).toBe(false)
  // Later commits log against the migrated state.
  await doc.update((_, write) => write.items.push({ id: 'b', name: 'second', label: 'SECOND' }))
  const reopened = await Document.open<Doc>(path, {
    create: () => ({ version: 2, items: [] }),
    loggedLists: ['items'],
    migrate: toVersionTwo,
    persistMigration: true,
  })
  expect(reopened.data.items.map((item) => item.label)).toEqual(['FIRST', 'SECOND'])
})

test('without persistMigration (read-only tools) the file is left as it was', async () => {
  const path = await versionOneWithLog()
  const before = readFileSync(path, 'utf8')
  const doc = await Document.open<Doc>(path, { create: () => ({ version: 2, items: [] }), loggedLists: ['items'], migrate: toVersionTwo })
  expect(doc.data.version).toBe(2)
  expect(readFileSync(path, 'utf8')).toBe(before)
  expect(existsSync(`${path}.log`)).toBe(true)
})
