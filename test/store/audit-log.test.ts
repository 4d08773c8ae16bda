// The audit log writer (src/store/audit-log.ts): concurrent appends share writes and syncs, keep
// their order and the hash chain; when writes fail in the middle of a stream of appends, exactly
// the events whose promise resolved are in the file, and the chain goes on from them. With the
// sync held by the test: nothing is acknowledged or shown before its sync, one batch is in flight
// at a time, a failed sync is cut off, compaction loses nothing appended meanwhile, and a batch a
// crash left half on disk is never read as lines. The partial readers (tail, first line,
// backwards, the export's stream) agree with reading the whole file.
import { afterAll, expect, test } from 'bun:test'
import { spawnSync } from 'node:child_process'
import { closeSync, openSync, readdirSync, readFileSync, writeFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { sealLine, verifyChain } from '../../src/modules/audit/chain'
import { writeFileAtomic } from '../../src/store/atomic-file'
import { AuditLogFile, joinAuditLines, readAuditLines, readAuditLinesBackwards, readFirstAuditLine, streamAuditLines } from '../../src/store/audit-log'
import { heldSync, turn } from '../support/held-sync'
import { removeDir, tempDir } from '../support/server'

const dir = tempDir('svc-vault-audit-writer-')
afterAll(() => {
  spawnSync('chattr', ['-i', join(dir, 'b.log')])
  removeDir(dir)
})
const START = 'a'.repeat(64)

test('concurrent appends: every one durable once resolved, in order, one intact chain', async () => {
  const path = join(dir, 'a.log')
  const log = AuditLogFile.open<{ n: number }>(path, () => START, sealLine)
  await Promise.all(Array.from({ length: 500 }, (_, n) => log.append({ n })))
  const { lines } = readAuditLines(path)
  expect(lines.map((line) => JSON.parse(line).n)).toEqual(Array.from({ length: 500 }, (_, n) => n))
  expect(verifyChain(lines, { start: START, checkpoint: null })).toMatchObject({ ok: true, lines: 500 })
  await log.close()
  // Reopened from its last line, it goes on with the chain.
  const again = AuditLogFile.open<{ n: number }>(path, () => JSON.parse(lines.at(-1)!).hash, sealLine)
  await again.append({ n: 500 })
  await again.close()
  expect(verifyChain(readAuditLines(path).lines, { start: START, checkpoint: null })).toMatchObject({ ok: true, lines: 501 })
})

test.skipIf(process.getuid?.() !== 0)('a write failure mid-stream: resolved events are in the file, rejected ones are not, the chain holds', async () => {
  const path = join(dir, 'b.log')
  const log = AuditLogFile.open<{ n: number }>(path, () => START, sealLine)
  await log.append({ n: -1 })
  const outcomes: Promise<boolean>[] = []
  let n = 0
  for (let round = 0; round < 30; round++) {
    for (let i = 0; i < 20; i++)
      outcomes.push(
        log.append({ n: n++ }).then(
          () => true,
          () => false,
        ),
      )
    // The file refuses writes for a while, in the middle of the stream.
    if (round === 10) spawnSync('chattr', ['+i', path])
    if (round === 20) spawnSync('chattr', ['-i', path])
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
  const results = await Promise.all(outcomes)
  await log.close()
  expect(results.filter((ok) => !ok).length).toBeGreaterThan(0)
  expect(results.filter((ok) => ok).length).toBeGreaterThan(0)
  const { lines } = readAuditLines(path)
  const written = lines.map((line) => JSON.parse(line).n)
  expect(written).toEqual([-1, ...results.flatMap((ok, index) => (ok ? [index] : []))])
  expect(verifyChain(lines, { start: START, checkpoint: null })).toMatchObject({ ok: true })
})

test('one batch in flight: not acknowledged, not shown before its sync; what comes meanwhile is the next batch', async () => {
  const path = join(dir, 'c.log')
  const disk = heldSync()
  const log = AuditLogFile.open<{ n: number }>(path, () => START, sealLine, disk.sync)
  const resolved: number[] = []
  const first = [0, 1, 2].map((n) => log.append({ n }).then(() => resolved.push(n)))
  await turn()
  // Written, syncing: not acknowledged, and a reader of the durable lines does not see it.
  expect(disk.held.length).toBe(1)
  expect(resolved).toEqual([])
  expect(readAuditLines(path, log.durableBytes).lines).toEqual([])
  // Three more while it syncs: they wait for it, then go together.
  const second = [3, 4, 5].map((n) => log.append({ n }).then(() => resolved.push(n)))
  await turn()
  expect(disk.held.length).toBe(1)
  disk.release()
  await Promise.all(first)
  expect(resolved).toEqual([0, 1, 2])
  expect(readAuditLines(path, log.durableBytes).lines.map((line) => JSON.parse(line).n)).toEqual([0, 1, 2])
  expect(disk.held.length).toBe(1)
  disk.release()
  await Promise.all(second)
  expect(resolved).toEqual([0, 1, 2, 3, 4, 5])
  // The file holds exactly its lines, one JSON object each.
  expect(readFileSync(path, 'utf8')).toBe(`${readAuditLines(path).lines.join('\n')}\n`)
  await log.close()
  expect(verifyChain(readAuditLines(path).lines, { start: START, checkpoint: null })).toMatchObject({ ok: true, lines: 6 })
})

test('a failed sync: its batch is refused and cut off; the chain goes on from the last durable line', async () => {
  const path = join(dir, 'd.log')
  const disk = heldSync()
  const log = AuditLogFile.open<{ n: number }>(path, () => START, sealLine, disk.sync)
  const kept = log.append({ n: 0 })
  await turn()
  disk.release()
  await kept
  const durable = log.durableBytes
  const lost = log.append({ n: 1 })
  await turn()
  disk.release(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }))
  expect(
    await lost.then(
      () => 'acknowledged',
      (error: Error) => error.message,
    ),
  ).toContain('EIO')
  expect(readFileSync(path).length).toBe(durable)
  const next = log.append({ n: 2 })
  await turn()
  disk.release()
  await next
  await log.close()
  const { lines } = readAuditLines(path)
  expect(lines.map((line) => JSON.parse(line).n)).toEqual([0, 2])
  expect(verifyChain(lines, { start: START, checkpoint: null })).toMatchObject({ ok: true, lines: 2 })
})

test('compaction waits for the batch in flight and keeps what is appended meanwhile', async () => {
  const path = join(dir, 'e.log')
  const disk = heldSync()
  const log = AuditLogFile.open<{ n: number }>(path, () => START, sealLine, disk.sync)
  const appended = [0, 1, 2].map((n) => log.append({ n }))
  await turn()
  let dropped = null as number | null
  // Drops the first line, as a retention would.
  const compacting = log.dropBefore(
    (line) => JSON.parse(line).n !== 0,
    async (line) => void (dropped = JSON.parse(line).n),
  )
  const during = log.append({ n: 3 })
  await turn()
  expect(dropped).toBeNull()
  disk.release()
  await Promise.all(appended)
  await compacting
  expect(dropped).toBe(0)
  await turn()
  disk.release()
  await during
  await log.close()
  const { lines } = readAuditLines(path)
  expect(lines.map((line) => JSON.parse(line).n)).toEqual([1, 2, 3])
  expect(verifyChain(lines, { start: START, checkpoint: JSON.parse(lines[0]).prev })).toMatchObject({ ok: true, lines: 3 })
})

test('a crash leaves a batch half on disk after zero bytes: readers and the next open stop at the first zero byte', async () => {
  const path = join(dir, 'f.log')
  const log = AuditLogFile.open<{ n: number }>(path, () => START, sealLine)
  await log.append({ n: 0 })
  await log.append({ n: 1 })
  const durable = log.durableBytes
  // What a crash can leave on a filesystem that extends a file before its data lands: a batch of
  // which only a later block reached the disk (zeros, then the end of a line).
  const fd = openSync(path, 'r+')
  writeSync(fd, Buffer.from('{"n":3,"torn":true}\n'), 0, 20, durable + 5000)
  closeSync(fd)
  expect(readAuditLines(path).lines.map((line) => JSON.parse(line).n)).toEqual([0, 1])
  const { lines } = readAuditLines(path)
  const again = AuditLogFile.open<{ n: number }>(path, () => JSON.parse(lines.at(-1)!).hash, sealLine)
  expect(readFileSync(path).length).toBe(durable)
  await again.append({ n: 2 })
  await again.close()
  expect(readAuditLines(path).lines.map((line) => JSON.parse(line).n)).toEqual([0, 1, 2])
  expect(verifyChain(readAuditLines(path).lines, { start: START, checkpoint: null })).toMatchObject({ ok: true, lines: 3 })
})

test('opening (a tail read), the first-line read, the backwards read (a page of recent events) and the export stream agree with reading the whole file', async () => {
  const path = join(dir, 'g.log')
  const line = (n: number, pad = 0) => JSON.stringify({ n, pad: 'x'.repeat(pad) })
  const cases: [string, Buffer][] = [
    ['empty', Buffer.alloc(0)],
    ['one line', Buffer.from(`${line(1)}\n`)],
    ['a torn line only', Buffer.from('{"n":1')],
    ['many lines past 64 KiB', Buffer.from(`${Array.from({ length: 3000 }, (_, n) => line(n)).join('\n')}\n`)],
    ['a last line longer than 64 KiB', Buffer.from(`${line(1)}\n${line(2, 200_000)}\n`)],
    ['a torn tail', Buffer.from(`${Array.from({ length: 3000 }, (_, n) => line(n)).join('\n')}\n{"n":"torn`)],
    [
      'zeros past 64 KiB, then a fragment',
      Buffer.concat([Buffer.from(`${Array.from({ length: 3000 }, (_, n) => line(n)).join('\n')}\n`), Buffer.alloc(300_000), Buffer.from('tail of a line"}\n')]),
    ],
  ]
  for (const [name, bytes] of cases) {
    writeFileSync(path, bytes)
    const whole = readAuditLines(path)
    expect({ name, first: readFirstAuditLine(path) }).toEqual({ name, first: whole.lines[0] ?? null })
    // Backwards (a page of the newest events), the same lines in reverse, also up to a limit.
    expect({ name, lines: await Array.fromAsync(readAuditLinesBackwards(path)) }).toEqual({ name, lines: [...whole.lines].reverse() })
    const half = readAuditLines(path, Math.floor(whole.bytes / 2))
    expect({ name, lines: await Array.fromAsync(readAuditLinesBackwards(path, half.bytes)) }).toEqual({ name, lines: [...half.lines].reverse() })
    // The export's stream, oldest first: the same lines, also up to a limit and filtered.
    const streamed = (limit?: number, keep?: (line: string) => boolean) => new Response(streamAuditLines(path, limit, keep)).text()
    expect({ name, text: await streamed() }).toEqual({ name, text: joinAuditLines(whole.lines) })
    expect({ name, text: await streamed(Math.floor(whole.bytes / 2)) }).toEqual({ name, text: joinAuditLines(half.lines) })
    const even = (line: string) => line.length % 2 === 0
    expect({ name, text: await streamed(undefined, even) }).toEqual({ name, text: joinAuditLines(whole.lines.filter(even)) })
    // Opening it reads the tail: the same end and last line (and cuts what follows them).
    let last: string | null | undefined
    const log = AuditLogFile.open<{ n: number }>(path, (line) => ((last = line), START), sealLine)
    expect({ name, bytes: log.durableBytes, last }).toEqual({ name, bytes: whole.bytes, last: whole.lines.at(-1) ?? null })
    expect({ name, size: readFileSync(path).length }).toEqual({ name, size: whole.bytes })
  }
})

test('the export stream reads a chunk when asked, a compaction replacing the file meanwhile does not change it, and a cancel closes the file', async () => {
  const path = join(dir, 'h.log')
  const text = `${Array.from({ length: 5000 }, (_, n) => JSON.stringify({ n, pad: 'x'.repeat(40) })).join('\n')}\n`
  writeFileSync(path, text)
  const reader = streamAuditLines(path).getReader()
  const first = await reader.read()
  // One chunk of whole lines, not the file.
  expect(first.value!.length).toBeLessThanOrEqual(64 * 1024)
  expect(first.value!.length).toBeLessThan(text.length)
  await writeFileAtomic(path, `${JSON.stringify({ compacted: true })}\n`)
  const parts = [Buffer.from(first.value!)]
  for (let next = await reader.read(); !next.done; next = await reader.read()) parts.push(Buffer.from(next.value))
  expect(Buffer.concat(parts).toString('utf8')).toBe(text)
  // A client that goes away: the file is closed.
  const openFiles = () => readdirSync('/proc/self/fd').length
  const before = openFiles()
  const left = streamAuditLines(path).getReader()
  expect(openFiles()).toBe(before + 1)
  await left.read()
  await left.cancel()
  expect(openFiles()).toBe(before)
})

test('compaction reads lines only up to the first one kept and copies the rest byte for byte', async () => {
  const path = join(dir, 'i.log')
  const log = AuditLogFile.open<{ n: number; pad: string }>(path, () => START, sealLine)
  // Past several 64 KiB chunks, with a line longer than a chunk among the dropped ones.
  await Promise.all(Array.from({ length: 4000 }, (_, n) => log.append({ n, pad: 'x'.repeat(n === 1500 ? 100_000 : 40) })))
  const before = readFileSync(path)
  const whole = readAuditLines(path).lines
  const seen: number[] = []
  let dropped = ''
  await log.dropBefore(
    (line) => (seen.push(JSON.parse(line).n), JSON.parse(line).n >= 2500),
    async (line) => void (dropped = line),
  )
  expect(seen.length).toBe(2501)
  expect(dropped).toBe(whole[2499])
  expect(readFileSync(path).equals(before.subarray(before.indexOf(whole[2500])))).toBe(true)
  // Appends chain on from the last line, as before.
  await log.append({ n: 4000, pad: '' })
  await log.close()
  const lines = readAuditLines(path).lines
  expect(verifyChain(lines, { start: START, checkpoint: JSON.parse(dropped).hash })).toMatchObject({ ok: true, lines: 1501 })
  // Nothing to drop: the file is left alone.
  const again = AuditLogFile.open<{ n: number; pad: string }>(path, (line) => JSON.parse(line!).hash, sealLine)
  const kept = readFileSync(path)
  await again.dropBefore(
    () => true,
    async () => {
      throw new Error('nothing is dropped')
    },
  )
  expect(readFileSync(path).equals(kept)).toBe(true)
  await again.close()
})

test('the backwards read lets the event loop turn between chunks: a search far back holds up nobody', async () => {
  const path = join(dir, 'j.log')
  writeFileSync(path, `${Array.from({ length: 20_000 }, (_, n) => JSON.stringify({ n, pad: 'x'.repeat(40) })).join('\n')}\n`)
  let turns = 0
  let reading = true
  const ticker = (async () => {
    while (reading) {
      await turn()
      turns++
    }
  })()
  let lines = 0
  for await (const _ of readAuditLinesBackwards(path)) lines++
  reading = false
  await ticker
  expect(lines).toBe(20_000)
  // About 1.2 MB: 19 chunks of 64 KiB, each read in the thread pool while the loop turns. Read at
  // once (no thread pool) the loop would not turn before the end. Not one turn per chunk: on a
  // loaded machine several reads may finish before the loop comes round (3 seen, under load).
  expect(turns).toBeGreaterThanOrEqual(2)
})
