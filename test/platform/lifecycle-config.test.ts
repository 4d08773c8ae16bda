// Issue 20's settings: SVC_HISTORY_VERSIONS (default 20) and SVC_TRASH_DAYS (default 30), each
// refused with a one-line error naming it when it is not a usable number.
import { expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../../src/config'

const base = { SVC_DATA_DIR: '/tmp/svc-vault-config-test' }

test('defaults: 20 versions, 30 days', () => {
  const config = loadConfig(base)
  expect(config.historyVersions).toBe(20)
  expect(config.trashMs).toBe(30 * 86_400_000)
})

test('set values are used; decimal days are accepted', () => {
  const config = loadConfig({ ...base, SVC_HISTORY_VERSIONS: '5', SVC_TRASH_DAYS: '0.5' })
  expect(config.historyVersions).toBe(5)
  expect(config.trashMs).toBe(43_200_000)
  expect(loadConfig({ ...base, SVC_HISTORY_VERSIONS: '0' }).historyVersions).toBe(0)
})

test('bad values are refused naming the variable', () => {
  for (const [name, value] of [
    ['SVC_HISTORY_VERSIONS', '-1'],
    ['SVC_HISTORY_VERSIONS', 'ten'],
    ['SVC_HISTORY_VERSIONS', '1001'],
    ['SVC_HISTORY_VERSIONS', ' '],
    ['SVC_TRASH_DAYS', '0'],
    ['SVC_TRASH_DAYS', '-3'],
    ['SVC_TRASH_DAYS', '30d'],
    ['SVC_TRASH_DAYS', '99999'],
  ]) {
    expect(() => loadConfig({ ...base, [name]: value })).toThrow(ConfigError)
    expect(() => loadConfig({ ...base, [name]: value })).toThrow(name)
  }
})
