// The progress of long operator runs (src/cli/progress.ts): on a terminal one line redrawn in
// place (records done of total, rate, time left), at most every redrawMs; elsewhere nothing
// drawn, and one summary line at the end either way.
import { expect, test } from 'bun:test'
import { formatDuration, Progress } from '../../src/cli/progress'

function setup(isTTY: boolean) {
  let clock = 0
  const written: string[] = []
  const logged: string[] = []
  const progress = new Progress({
    label: 'migrate',
    total: 1000,
    stream: { isTTY, write: (text: string) => written.push(text) },
    log: (line) => logged.push(line),
    now: () => clock,
    redrawMs: 100,
  })
  return { progress, written, logged, tick: (ms: number) => (clock += ms) }
}

test('on a terminal: one line redrawn in place with done of total, rate and time left', () => {
  const { progress, written, logged, tick } = setup(true)
  tick(1000)
  progress.advance(250)
  expect(written).toEqual(['\r\x1b[Kmigrate: 250 of 1000 records (25%), 250 records/s, about 3.0 s left'])
  // Within the redraw interval: counted, not drawn.
  tick(50)
  progress.advance(10)
  expect(written).toHaveLength(1)
  tick(950)
  progress.advance(240)
  expect(written[1]).toBe('\r\x1b[Kmigrate: 500 of 1000 records (50%), 250 records/s, about 2.0 s left')
  // The last record is always drawn, whatever the interval.
  tick(1)
  progress.advance(500)
  expect(written[2]).toStartWith('\r\x1b[Kmigrate: 1000 of 1000 records (100%)')
  tick(999)
  const summary = progress.finish('verified')
  // The line is cleared before the summary, which goes to the log.
  expect(written.at(-1)).toBe('\r\x1b[K')
  expect(logged).toEqual(['migrate: 1000 records in 3.0 s (333 records/s); verified'])
  expect(summary).toBe(logged[0])
  // Once only.
  expect(progress.finish()).toBe('')
  expect(logged).toHaveLength(1)
})

test('not a terminal: nothing drawn, one summary line', () => {
  const { progress, written, logged, tick } = setup(false)
  for (let i = 0; i < 1000; i++) {
    tick(10)
    progress.advance()
  }
  progress.finish()
  expect(written).toEqual([])
  expect(logged).toEqual(['migrate: 1000 records in 10 s (100 records/s)'])
})

test('a failed run clears its line and prints no summary', () => {
  const { progress, written, logged, tick } = setup(true)
  tick(10)
  progress.advance(3)
  progress.abandon()
  expect(written.at(-1)).toBe('\r\x1b[K')
  expect(progress.finish()).toBe('')
  expect(logged).toEqual([])
})

test('the live rate counts from when the total became known (not the reading before it)', () => {
  let clock = 0
  const written: string[] = []
  const progress = new Progress({ label: 'migrate', total: 0, stream: { isTTY: true, write: (t: string) => written.push(t) }, log: () => {}, now: () => clock })
  clock = 60_000
  progress.setTotal(100)
  clock = 61_000
  progress.advance(50)
  expect(written.at(-1)).toBe('\r\x1b[Kmigrate: 50 of 100 records (50%), 50.0 records/s, about 1.0 s left')
})

test('the total grows when more is found; durations read as a person reads them', () => {
  const { progress, tick } = setup(false)
  progress.setTotal(10)
  tick(1000)
  progress.advance(15)
  expect(progress.line()).toBe('migrate: 15 of 15 records (100%), 15.0 records/s, about 0.0 s left')
  expect(formatDuration(42_400)).toBe('42 s')
  expect(formatDuration(245_000)).toBe('4 min 05 s')
  expect(formatDuration(7_260_000)).toBe('2 h 01 min')
})
