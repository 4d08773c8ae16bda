// The 2FA page must not fill the audit log (issue 29): a session's repeated reads of one token's
// code within 10 minutes are one event (written before the first code leaves) and one more with
// their count once the window is over; other tokens, other sessions and access keys count apart.
import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { storedAuditLines } from '../support/audit-file'
import { signUp } from '../support/client'
import { removeDir, startTestServer } from '../support/server'

test('repeated reads of one token by one session within 10 minutes: one event, then one with their count', async () => {
  let now = Date.parse('2026-03-01T10:00:00Z')
  const server = await startTestServer({ now: () => now })
  try {
    const alice = await signUp(server.url)
    const token = (await alice.post('/api/2fa', { service: 'GitHub', accountName: 'alice', secret: 'JBSWY3DPEHPK3PXP' })).body
    const other = (await alice.post('/api/2fa', { service: 'GitLab', accountName: 'alice', secret: 'JBSWY3DPEHPK3PXQ' })).body
    const reveals = async () =>
      (await storedAuditLines(server, alice.user.id)).map((line) => JSON.parse(line)).filter((event) => event.action === 'twofa.reveal')
    for (let i = 0; i < 20; i++) {
      expect((await alice.post(`/api/2fa/${token.id}/reveal`)).status).toBe(200)
      now += 25_000
    }
    expect((await alice.post(`/api/2fa/${other.id}/reveal`)).status).toBe(200)
    let events = await reveals()
    expect(events.map((event) => [event.records[0].id, event.details.count])).toEqual([
      [token.id, 1],
      [other.id, 1],
    ])
    // An access key's reads are each recorded.
    const key = await alice.keyClient(['2fa:reveal'])
    for (let i = 0; i < 2; i++) expect((await key.post(`/api/2fa/${token.id}/reveal`)).status).toBe(200)
    expect((await reveals()).filter((event) => event.actor.type === 'access-key').length).toBe(2)
    // The window is over: the next read gives the count of the last one, and opens another.
    now += 2 * 60_000
    expect((await alice.post(`/api/2fa/${token.id}/reveal`)).status).toBe(200)
    events = (await reveals()).filter((event) => event.actor.type === 'session' && event.records[0].id === token.id)
    expect(events.map((event) => event.details.count)).toEqual([1, 20, 1])
    expect(events[1].details.repeatOf).toBe(events[0].id)
    // At shutdown the open windows' counts are written.
    expect((await alice.post(`/api/2fa/${token.id}/reveal`)).status).toBe(200)
    await server.stop()
    events = (await reveals()).filter((event) => event.actor.type === 'session')
    expect(events.map((event) => [event.records[0].id === token.id ? 'token' : 'other', event.details.count])).toEqual([
      ['token', 1],
      ['other', 1],
      ['token', 20],
      ['token', 1],
      ['token', 2],
    ])
  } finally {
    removeDir(server.dataDir)
  }
})
