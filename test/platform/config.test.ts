import { describe, expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../../src/config'
import { SETTINGS } from '../../src/settings'

function configError(env: Record<string, string>): string {
  try {
    loadConfig(env)
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    return (error as Error).message
  }
  throw new Error(`no ConfigError for ${JSON.stringify(env)}`)
}

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

  test('every setting with a blank value is a one-line error naming it (SVC_MASTER_KEY= from a compose file included)', () => {
    expect(Object.keys(SETTINGS).length).toBeGreaterThan(25)
    for (const name of Object.keys(SETTINGS)) {
      for (const blank of ['', ' ', '\t\n']) {
        const message = configError({ [name]: blank })
        expect(message).toStartWith(`${name} is set but blank`)
        expect(message.split('\n')).toHaveLength(1)
      }
    }
    expect(configError({ SVC_MASTER_KEY: '' })).toBe('SVC_MASTER_KEY is set but blank; set a value or unset the variable (it has no default)')
    expect(configError({ PORT: '' })).toBe('PORT is set but blank; set a value or unset the variable (the default is 3000)')
  })

  test('a duration needs its unit: SVC_SESSION_TTL=5 is refused in one line, as is every duration setting given a bare number', () => {
    for (const name of ['SVC_SESSION_TTL', 'SVC_AI_TIMEOUT', 'SVC_BODY_TIMEOUT', 'SVC_VAULT_IDLE', 'SVC_AUDIT_RETENTION']) {
      for (const bare of ['5', '600', '86400']) {
        const message = configError({ [name]: bare })
        expect(message).toStartWith(`${name} must be a duration`)
        expect(message).toContain('with its unit')
        expect(message.split('\n')).toHaveLength(1)
      }
    }
    expect(loadConfig({ SVC_SESSION_TTL: '5m' }).sessionTtlMs).toBe(300_000)
    expect(loadConfig({ SVC_SESSION_TTL: '2 w' }).sessionTtlMs).toBe(14 * 86_400_000)
    expect(loadConfig({}).sessionTtlMs).toBe(7 * 86_400_000)
  })

  test('each unset setting is its default; values are trimmed', () => {
    const config = loadConfig({})
    expect(config).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      masterKey: undefined,
      baseUrl: 'http://localhost:3000',
      origin: 'http://localhost:3000',
      secureCookies: false,
      signup: 'first',
      oidc: undefined,
      ai: { apiKey: undefined, baseUrl: undefined, model: 'claude-haiku-5-5', timeoutMs: 20_000 },
      trustProxy: null,
      trustProxyHeader: 'auto',
      webhookAllow: null,
      registerLimit: 10,
      allowedHosts: ['localhost:3000'],
      sessionCookie: 'svc_session',
      baseUrlConfigured: false,
      baseUrlExplicit: false,
      logFormat: 'text',
      metricsToken: undefined,
      bodyTimeoutMs: 10_000,
      historyVersions: 20,
      trashMs: 30 * 86_400_000,
      audit: { enabled: true, retentionMs: 365 * 86_400_000 },
      vaultIdleMs: 600_000,
      maxOpenVaults: 1000,
      diskFloorBytes: 256 * 1024 ** 2,
    })
    const set = loadConfig({
      SVC_BASE_URL: ' https://vault.example.com/ ',
      SVC_OIDC_ISSUER: ' https://id.example.com ',
      SVC_OIDC_CLIENT_ID: ' vault ',
      SVC_OIDC_CLIENT_SECRET: ' s3cret ',
      ANTHROPIC_API_KEY: ' sk-ant-x ',
      SVC_CHECK_RESPONSES: '0',
      NODE_ENV: 'test',
    })
    expect(set).toMatchObject({
      baseUrl: 'https://vault.example.com',
      secureCookies: true,
      sessionCookie: '__Host-svc_session',
      allowedHosts: ['vault.example.com'],
      baseUrlConfigured: true,
      baseUrlExplicit: true,
      oidc: { issuer: 'https://id.example.com', clientId: 'vault', clientSecret: 's3cret', name: 'Single sign-on' },
      ai: { apiKey: 'sk-ant-x' },
      checkResponses: false,
    })
    expect(configError({ SVC_CHECK_RESPONSES: 'yes' })).toStartWith('SVC_CHECK_RESPONSES must be "1" or "0"')
    expect(configError({ SVC_OIDC_CLIENT_ID: 'vault' })).toBe('SVC_OIDC_ISSUER must be set when SVC_OIDC_CLIENT_ID is set')
    // A list of nothing is as blank as a blank value.
    expect(configError({ SVC_TRUST_PROXY: ' , ' })).toStartWith('SVC_TRUST_PROXY must be a comma list')
    expect(configError({ SVC_WEBHOOK_ALLOW: ',' })).toStartWith('SVC_WEBHOOK_ALLOW must be a comma list')
    expect(configError({ ANTHROPIC_BASE_URL: 'api.example.com' })).toStartWith('ANTHROPIC_BASE_URL must be an http:// or https:// URL')
  })
})
