import { describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'

describe('config', () => {
  test('answers are checked against their schemas under test and on request, not in production', () => {
    expect(loadConfig({ NODE_ENV: 'test' }).checkResponses).toBe(true)
    expect(loadConfig({ NODE_ENV: 'production' }).checkResponses).toBe(false)
    expect(loadConfig({}).checkResponses).toBe(false)
    expect(loadConfig({ NODE_ENV: 'production', SVC_CHECK_RESPONSES: '1' }).checkResponses).toBe(true)
  })

  test('SVC_OPEN_VAULTS (default 1000) and SVC_VAULT_IDLE (default 10 minutes); bad values are one-line errors', () => {
    expect(loadConfig({}).maxOpenVaults).toBe(1000)
    expect(loadConfig({}).vaultIdleMs).toBe(10 * 60_000)
    expect(loadConfig({ SVC_OPEN_VAULTS: '50' }).maxOpenVaults).toBe(50)
    expect(loadConfig({ SVC_VAULT_IDLE: '30s' }).vaultIdleMs).toBe(30_000)
    expect(loadConfig({ SVC_VAULT_IDLE: '2h' }).vaultIdleMs).toBe(2 * 3_600_000)
    for (const bad of ['0', '-1', 'many', '1.5', '']) expect(() => loadConfig({ SVC_OPEN_VAULTS: bad })).toThrow(/SVC_OPEN_VAULTS/)
    for (const bad of ['soon', '0s', '', '10y']) expect(() => loadConfig({ SVC_VAULT_IDLE: bad })).toThrow(/SVC_VAULT_IDLE/)
  })

  test('a duration without its unit is refused with one line naming the variable (issue 32)', () => {
    for (const name of ['SVC_SESSION_TTL', 'SVC_VAULT_IDLE', 'SVC_AI_TIMEOUT', 'SVC_BODY_TIMEOUT', 'SVC_AUDIT_RETENTION']) {
      expect(() => loadConfig({ [name]: '5' })).toThrow(new RegExp(`^${name} must be a duration with its unit .*got "5"$`))
    }
    expect(loadConfig({ SVC_SESSION_TTL: '5d' }).sessionTtlMs).toBe(5 * 86_400_000)
    expect(loadConfig({ SVC_SESSION_TTL: '90s' }).sessionTtlMs).toBe(90_000)
  })
})
