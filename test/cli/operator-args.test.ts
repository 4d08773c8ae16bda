// The operator commands read `--name value` and `--name=value` alike (src/cli/args.ts: migrate,
// audit-verify, backup, restore); an option without its value is an unexpected argument.
import { expect, test } from 'bun:test'
import { resolve } from 'node:path'
import { Args } from '../../src/cli/args'
import { parseMigrateArgs } from '../../src/cli/migrate'

test('--name value and --name=value alike; a value may hold "=" and start with "-"; a lone --name is no option', () => {
  const seen: (string | undefined)[][] = []
  const args = new Args(['--data-dir', '/a', '--data-dir=/b=c', 'file', '--expect-last', '-x', '--data-dir'])
  for (let arg = args.next(); arg !== undefined; arg = args.next()) {
    const value = args.value('--data-dir') ?? args.value('--expect-last')
    seen.push([arg, value])
  }
  expect(seen).toEqual([
    ['--data-dir', '/a'],
    ['--data-dir=/b=c', '/b=c'],
    ['file', undefined],
    ['--expect-last', '-x'],
    ['--data-dir', undefined],
  ])
})

test('migrate: --to and --to-dir in both forms; one target; anything else named', () => {
  expect(parseMigrateArgs(['--to', 'postgres://db.example/vault'])).toEqual({ to: 'postgres', url: 'postgres://db.example/vault' })
  expect(parseMigrateArgs(['--to=postgres://db.example/vault'])).toEqual({ to: 'postgres', url: 'postgres://db.example/vault' })
  expect(parseMigrateArgs(['--to-dir', 'copy'])).toEqual({ to: 'dir', dir: resolve('copy') })
  expect(parseMigrateArgs(['--to-dir=copy'])).toEqual({ to: 'dir', dir: resolve('copy') })
  expect(parseMigrateArgs(['--help'])).toBeNull()
  expect(() => parseMigrateArgs(['--to'])).toThrow(/unexpected argument --to/)
  expect(() => parseMigrateArgs(['--to-dir', 'a', '--to=postgres://db.example/vault'])).toThrow(/give one target/)
  expect(() => parseMigrateArgs(['--too', 'x'])).toThrow(/unexpected argument --too/)
})
