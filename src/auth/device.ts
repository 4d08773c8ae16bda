// A readable device name from a User-Agent header, for the session list: "Firefox on Linux",
// "Chrome on Android", "curl". Plain substring checks, no regular expression over the whole header.

const BROWSERS: [needle: string, name: string][] = [
  ['Edg/', 'Edge'],
  ['EdgA/', 'Edge'],
  ['EdgiOS/', 'Edge'],
  ['SamsungBrowser/', 'Samsung Internet'],
  ['CriOS/', 'Chrome'],
  ['FxiOS/', 'Firefox'],
  ['OPR/', 'Opera'],
  ['Firefox/', 'Firefox'],
  ['Chromium/', 'Chromium'],
  ['HeadlessChrome/', 'Chrome (headless)'],
  ['Chrome/', 'Chrome'],
  ['Safari/', 'Safari'],
]

const SYSTEMS: [needle: string, name: string][] = [
  ['Android', 'Android'],
  ['iPhone', 'iPhone'],
  ['iPad', 'iPad'],
  ['Windows', 'Windows'],
  ['Mac OS X', 'macOS'],
  ['Macintosh', 'macOS'],
  ['CrOS', 'ChromeOS'],
  ['Linux', 'Linux'],
]

const TOOLS: [prefix: string, name: string][] = [
  ['curl/', 'curl'],
  ['Wget/', 'Wget'],
  ['Bun/', 'Bun'],
  ['node', 'Node.js'],
  ['python-requests/', 'Python requests'],
  ['svc-vault-cli', 'svc-vault CLI'],
]

export function deviceName(userAgent: string | null | undefined): string {
  const ua = (userAgent ?? '').slice(0, 300)
  if (!ua) return 'Unknown device'
  for (const [prefix, name] of TOOLS) if (ua.startsWith(prefix)) return name
  const browser = BROWSERS.find(([needle]) => ua.includes(needle))?.[1]
  const system = SYSTEMS.find(([needle]) => ua.includes(needle))?.[1]
  if (browser && system) return `${browser} on ${system}`
  if (browser) return browser
  if (system) return `Browser on ${system}`
  // Something else: its first product token, e.g. "MyScript/1.0" -> "MyScript".
  const token = ua.split(/[\s/]/, 1)[0]
  return token ? token.slice(0, 40) : 'Unknown device'
}
