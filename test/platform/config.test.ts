import { describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'

describe('config', () => {
  test('answers are checked against their schemas under test and on request, not in production', () => {
    expect(loadConfig({ NODE_ENV: 'test' }).checkResponses).toBe(true)
    expect(loadConfig({ NODE_ENV: 'production' }).checkResponses).toBe(false)
    expect(loadConfig({}).checkResponses).toBe(false)
    expect(loadConfig({ NODE_ENV: 'production', SVC_CHECK_RESPONSES: '1' }).checkResponses).toBe(true)
  })
})
