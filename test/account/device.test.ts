// Device names for the session list, read from User-Agent headers people's browsers and tools send.
import { expect, test } from 'bun:test'
import { deviceName } from '../../src/auth/device'

test('common browsers and tools get a readable name; anything else its first token', () => {
  const cases: [string | null, string][] = [
    ['Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0', 'Firefox on Linux'],
    ['Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36', 'Chrome on macOS'],
    ['Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0', 'Edge on Windows'],
    [
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
      'Safari on iPhone',
    ],
    [
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/126.0 Mobile/15E148 Safari/604.1',
      'Chrome on iPhone',
    ],
    ['Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36', 'Chrome on Android'],
    ['curl/8.5.0', 'curl'],
    ['Bun/1.4.5', 'Bun'],
    ['MyScript/2.1 (+https://example.org)', 'MyScript'],
    ['', 'Unknown device'],
    [null, 'Unknown device'],
  ]
  for (const [agent, name] of cases) expect([agent, deviceName(agent)]).toEqual([agent, name])
})

test('only the first 300 characters of a huge header are read; the name is at most 40', () => {
  expect(deviceName('x'.repeat(1_000_000))).toBe('x'.repeat(40))
  expect(deviceName(`${'y'.repeat(299)} Firefox/128.0 (X11; Linux)`)).toBe('y'.repeat(40))
})
