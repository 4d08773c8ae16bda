// A document with a change log (vaults): commits append their changes beside the file, a reopened
// document holds exactly what was committed, a torn last line (a crash mid-append) is dropped,
// damage is refused, and the log folds into the file without a crash window losing anything.
import { afterAll, describe, expect, test } from 'bun:test'
import { appendFileSync, existsSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { indexById, recordsWithKey } from '../../src/store/by-id'
import { ChangeLog } from '../../src/store/change-log'
import { CorruptDocumentError, Document, readLoggedDocumentSync } from '../../src/store/document'
import { removeDir, tempDir } from '../support/server'

interface Item {
  readonly id: string
  readonly name: string
  readonly tags: readonly string[]
}
interface TestDocument {
  readonly version: number
  readonly label: string
  readonly items: readonly Item[]
  readonly others: readonly Item[]
}

const LISTS = ['items', 'others'] as const
const dirs: string[] = []
afterAll(() => dirs.forEach(removeDir))

function newPath(): string {
  const dir = tempDir('svc-vault-document-')
  dirs.push(dir)
  return join(dir, 'doc.json')
}

const open = (path: string) => Document.open<TestDocument>(path, { create: () => ({ version: 1, label: 'new', items: [], others: [] }), loggedLists: LISTS })

const item = (name: string): Item => ({ id: crypto.randomUUID(), name, tags: [name] })
/** What a reader after a restart would find. */
const plain = (data: TestDocument) => JSON.parse(JSON.stringify(data))

describe('document with a change log', () => {
  test('commits go to the log, not the file, and a reopened document holds all of them', async () => {
    const path = newPath()
    const doc = await open(path)
    const fileBefore = readFileSync(path, 'utf8')
    const [a, b, c] = [item('a'), item('b'), item('c')]
    await doc.update((_, write) => write.items.push(a, b, c))
    await doc.update((_, write) => {
      write.items.replace({ ...b, name: 'b2', tags: ['x'] })
      write.items.removeWhere((i) => i.id === a.id)
      write.others.push(item('other'))
      write.set('label', 'renamed')
    })
    expect(readFileSync(path, 'utf8')).toBe(fileBefore)
    expect(existsSync(`${path}.log`)).toBe(true)

    const reopened = await open(path)
    expect(plain(reopened.data)).toEqual(plain(doc.data))
    expect(reopened.data.items.map((i) => i.name)).toEqual(['b2', 'c'])
    expect(reopened.data.label).toBe('renamed')
  })

  test('every change made through the writer is in the log: a reopened document holds each one', async () => {
    const path = newPath()
    const doc = await open(path)
    const [a, b, c, d] = [item('a'), item('b'), item('c'), item('d')]
    await doc.update((_, write) => write.items.push(a, b, c, d))
    await doc.update((_, write) => write.items.replace({ ...a, name: 'a2' }))
    await doc.update((_, write) =>
      write.items.replaceMany([
        { ...b, name: 'b2' },
        { ...c, name: 'c2' },
      ]),
    )
    await doc.update((_, write) => write.items.remove(d.id))
    await doc.update((_, write) => write.items.removeWhere((i) => i.name === 'c2'))
    await doc.update((_, write) => write.set('label', 'set'))
    expect(readFileSync(path, 'utf8')).not.toContain('a2')
    const reopened = await open(path)
    expect(reopened.data.items.map((i) => i.name)).toEqual(['a2', 'b2'])
    expect(reopened.data.label).toBe('set')
    expect(plain(reopened.data)).toEqual(plain(doc.data))
  })

  test('a committed record cannot be changed in place (it would never reach the log)', async () => {
    const doc = await open(newPath())
    await doc.update((_, write) => write.items.push(item('frozen')))
    expect(() => {
      // @ts-expect-error the types forbid it too (readonly.typecheck.ts)
      doc.data.items[0].name = 'changed'
    }).toThrow(TypeError)
    // @ts-expect-error as above
    expect(() => doc.data.items[0].tags.push('more')).toThrow(TypeError)
  })

  test('a torn last line is dropped and later commits follow the good ones', async () => {
    const path = newPath()
    const doc = await open(path)
    await doc.update((_, write) => write.items.push(item('kept')))
    const good = statSync(`${path}.log`).size
    await doc.update((_, write) => write.items.push(item('torn')))
    // A crash in the middle of the second append: half of its line reached the disk.
    truncateSync(`${path}.log`, good + Math.floor((statSync(`${path}.log`).size - good) / 2))

    const reopened = await open(path)
    expect(reopened.data.items.map((i) => i.name)).toEqual(['kept'])
    expect(statSync(`${path}.log`).size).toBe(good)
    await reopened.update((_, write) => write.items.push(item('after')))
    expect((await open(path)).data.items.map((i) => i.name)).toEqual(['kept', 'after'])
  })

  test('a line of zeros at the end (a crash on some file systems) is dropped too', async () => {
    const path = newPath()
    const doc = await open(path)
    await doc.update((_, write) => write.items.push(item('kept')))
    appendFileSync(`${path}.log`, Buffer.alloc(300))
    expect((await open(path)).data.items.map((i) => i.name)).toEqual(['kept'])
  })

  test('a damaged line with good lines after it is refused, not skipped', async () => {
    const path = newPath()
    const doc = await open(path)
    await doc.update((_, write) => write.items.push(item('first')))
    await doc.update((_, write) => write.items.push(item('second')))
    const log = readFileSync(`${path}.log`)
    log[20] = log[20] === 0x61 ? 0x62 : 0x61
    writeFileSync(`${path}.log`, log)
    await expect(open(path)).rejects.toBeInstanceOf(CorruptDocumentError)
  })

  test('the log folds into the file once it is as long as the file, and on a clean stop', async () => {
    const path = newPath()
    const doc = await open(path)
    // Past 64 KiB of log: the file is rewritten and the log removed.
    for (let i = 0; i < 120; i++) await doc.update((_, write) => write.items.push({ ...item(`n${i}`), tags: ['x'.repeat(600)] }))
    expect(JSON.parse(readFileSync(path, 'utf8')).items.length).toBeGreaterThan(90)
    expect(statSync(`${path}.log`, { throwIfNoEntry: false })?.size ?? 0).toBeLessThan(64 * 1024)

    await doc.update((_, write) => write.items.push(item('last')))
    await doc.fold()
    expect(existsSync(`${path}.log`)).toBe(false)
    expect(JSON.parse(readFileSync(path, 'utf8')).items.length).toBe(121)
  })

  test('a crash between rewriting the file and removing the log loses nothing', async () => {
    const path = newPath()
    const doc = await open(path)
    const a = item('a')
    await doc.update((_, write) => write.items.push(a, item('b')))
    await doc.update((_, write) => write.items.replace({ ...a, name: 'a2' }))
    // The fold's own commit changes `a` again: the log must hold that too, or replaying it over
    // the new file would bring back a2.
    doc.stage((_, write) => {
      write.items.replace({ ...a, name: 'a3' })
      write.set('label', 'folded')
    })
    // The crash: the file is rewritten, the log never removed.
    const clear = ChangeLog.prototype.clear
    ChangeLog.prototype.clear = async () => {}
    try {
      await doc.fold()
    } finally {
      ChangeLog.prototype.clear = clear
    }
    expect(JSON.parse(readFileSync(path, 'utf8')).items[0].name).toBe('a3')
    expect(existsSync(`${path}.log`)).toBe(true)

    const reopened = await open(path)
    expect(plain(reopened.data)).toEqual(plain(doc.data))
    expect(reopened.data.items.map((i) => i.name)).toEqual(['a3', 'b'])
  })

  test('a backup read sees the file with its log applied', async () => {
    const path = newPath()
    const doc = await open(path)
    await doc.update((_, write) => write.items.push(item('logged')))
    expect(JSON.parse(readFileSync(path, 'utf8')).items).toEqual([])
    expect(JSON.parse(readLoggedDocumentSync(path, LISTS)!)).toEqual(plain(doc.data))
  })

  test('random commits, reopened at random points, always read back as committed', async () => {
    const path = newPath()
    let doc = await open(path)
    let seed = 12345
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed % n
    }
    for (let step = 0; step < 400; step++) {
      await doc.update((data, write) => {
        for (let change = random(4); change >= 0; change--) {
          const list = random(2) === 0 ? 'items' : 'others'
          const records = data[list]
          const pick = random(6)
          if (pick <= 1 || records.length === 0) write[list].push(item(`s${step}`))
          else if (pick === 5) write[list].remove(records[random(records.length)].id)
          else if (pick === 2) {
            const target = records[random(records.length)]
            write[list].replace({ ...target, name: `r${step}`, tags: [] })
          } else if (pick === 3) {
            const gone = records[random(records.length)].id
            write[list].removeWhere((r) => r.id === gone)
          } else write.set('label', `l${step}`)
        }
      })
      if (random(25) === 0) {
        expect(plain((await open(path)).data)).toEqual(plain(doc.data))
        if (random(2) === 0) {
          await doc.fold()
          doc = await open(path)
        }
      }
    }
    expect(plain((await open(path)).data)).toEqual(plain(doc.data))
  })

  test('a commit logs only what changed: one pushed record into a long list is one put', async () => {
    const path = newPath()
    const doc = await open(path)
    await doc.update((_, write) => {
      for (let i = 0; i < 5000; i++) write.items.push(item(`i${i}`))
    })
    await doc.fold()
    const logLines = () => (existsSync(`${path}.log`) ? readFileSync(`${path}.log`, 'utf8').trim().split('\n') : [])
    const lastBatch = () => JSON.parse(logLines().at(-1)!.slice(9))
    await doc.update((_, write) => write.items.push(item('one more')))
    expect(lastBatch()).toEqual([['put', 'items', plain(doc.data).items.at(-1)]])
    const target = doc.data.items[10]
    await doc.update((_, write) => write.items.replace({ ...target, name: 'replaced' }))
    expect(lastBatch()).toEqual([['put', 'items', plain(doc.data).items[10]]])
    const gone = doc.data.items[20]
    await doc.update((_, write) => write.items.remove(gone.id))
    expect(lastBatch()).toEqual([['del', 'items', gone.id]])
    const first = doc.data.items[0].id
    await doc.update((data, write) => {
      const pushed = item('pushed then replaced')
      write.items.push(pushed)
      write.items.replace({ ...pushed, name: 'replaced before commit' })
      write.items.remove(data.items[0].id)
    })
    const batch = lastBatch()
    expect(batch).toHaveLength(2)
    expect(batch).toContainEqual(['del', 'items', first])
    expect(batch).toContainEqual(['put', 'items', plain(doc.data).items.at(-1)])
    expect(plain((await open(path)).data)).toEqual(plain(doc.data))
  })

  test('the id index follows pushes, replacements and removals without a rebuild', async () => {
    const doc = await open(newPath())
    await doc.update((_, write) => {
      for (let i = 0; i < 100; i++) write.items.push(item(`i${i}`))
    })
    const index = indexById(doc.data.items)
    const added = item('added')
    await doc.update((_, write) => write.items.push(added))
    // The same object, caught up: a reveal after a write does not pay for the whole list.
    expect(indexById(doc.data.items)).toBe(index)
    expect(index[added.id]).toBe(added)
    const next = { ...added, name: 'next' }
    await doc.update((_, write) => write.items.replace(next))
    expect(indexById(doc.data.items)[added.id]).toBe(next)
    await doc.update((_, write) => write.items.remove(next.id))
    expect(indexById(doc.data.items)).toBe(index)
    expect(index[added.id]).toBeUndefined()
    expect(Object.keys(index)).toHaveLength(100)
  })

  test('a grouping by a derived key follows pushes, replacements and removals (uniqueness checks without a scan)', async () => {
    const doc = await open(newPath())
    const byName = (name: string) => recordsWithKey(doc.data.items, 'name', (i: Item) => i.name, name).map((i) => i.id)
    const [a, b] = [item('same'), item('other')]
    await doc.update((_, write) => write.items.push(a, b))
    expect(byName('same')).toEqual([a.id])
    const c = item('same')
    await doc.update((_, write) => write.items.push(c))
    expect(byName('same')).toEqual([a.id, c.id])
    await doc.update((_, write) => write.items.replace({ ...b, name: 'same' }))
    expect(byName('same').sort()).toEqual([a.id, b.id, c.id].sort())
    expect(byName('other')).toEqual([])
    await doc.update((_, write) => write.items.remove(a.id))
    expect(byName('same').sort()).toEqual([b.id, c.id].sort())
    await doc.update((_, write) => {
      write.items.removeWhere((i) => i.id === c.id)
    })
    expect(byName('same')).toEqual([b.id])
  })

  test('replaceMany replaces many in one pass and logs each as a put', async () => {
    const path = newPath()
    const doc = await open(path)
    await doc.update((_, write) => {
      for (let i = 0; i < 20; i++) write.items.push(item(`i${i}`))
    })
    const targets = [doc.data.items[3], doc.data.items[17]]
    await doc.update((_, write) => write.items.replaceMany(targets.map((t) => ({ ...t, name: `${t.name}!` }))))
    expect(doc.data.items[3].name).toBe('i3!')
    expect(indexById(doc.data.items)[targets[1].id]!.name).toBe('i17!')
    expect(plain((await open(path)).data)).toEqual(plain(doc.data))
  })
})
