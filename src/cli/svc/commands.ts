// svc's commands other than run: sign-in (login, logout, whoami) and the read commands
// (export, get, import, totp, ls).
import { readFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { resolve } from 'node:path'
import { parseArgs, str } from './args'
import { errorBody, VaultClient } from './client'
import { credentials, normalizeUrl, readConfig, removeConfig, writeConfig, type StoredConfig } from './config'
import { CliError, escapeControl as esc, isCliError, printable, usageError } from './errors'
import { VERSION } from '../../version'
import { writeSecretFile } from './files'
import { selectionFrom } from './run-plan'
import { ENVIRONMENTS } from './environments'
import { describeSelection, exportQuery, fetchExport, withProject, type Selection } from './variables'

const out = (text: string) => process.stdout.write(text)
const note = (text: string) => process.stderr.write(text)

interface AccessKeyAnswer {
  id: string
  name: string
  keyPrefix: string
  scopes: string[]
  expiresAt: string | null
  key?: string
  /** The shared vault the key is bound to. */
  vaultId?: string
}
interface MeAnswer {
  user: { email: string; name: string | null }
  auth: 'session' | 'access-key'
  scopes?: string[]
}

// ---------------------------------------------------------------- login, logout, whoami

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) note('Paste the access key (svc_…), then press Enter: ')
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) {
    chunks.push(chunk as Buffer)
    if (process.stdin.isTTY && chunks.join('').includes('\n')) break
  }
  return Buffer.concat(chunks).toString('utf8')
}

function loginUrl(positional: string | undefined): string {
  const raw = positional ?? process.env.SVC_URL?.trim() ?? readConfig()?.url
  if (!raw) throw usageError('svc login needs the vault URL: svc login https://vault.example.com')
  return normalizeUrl(raw)
}

/** This machine: a key sent there over http crosses no network. */
function isLoopbackUrl(url: string): boolean {
  const host = new URL(url).hostname
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/\.$/, '')
  return host === 'localhost' || host.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '::1'
}

/**
 * http:// to another machine: the access key (and on approval the new one) crosses the network in
 * clear text. Said before anything is sent; not refused, as a home lab on its own network may mean it.
 */
function warnIfClearText(url: string): void {
  if (!url.startsWith('http://') || isLoopbackUrl(url)) return
  note(
    `svc: warning: ${url} is plain http on another machine: the access key will cross the network in clear text, readable and usable by anyone on the way. Use https:// (see docs/reverse-proxy.md).\n`,
  )
}

/** Revokes a key made by an earlier `svc login` on the same vault, when one is replaced. */
async function revokeReplaced(previous: StoredConfig | null, url: string, keepKey: string): Promise<void> {
  if (!previous?.createdByLogin || previous.key === keepKey || normalizeUrl(previous.url) !== url) return
  try {
    await new VaultClient(url, previous.key).raw('DELETE', '/api/auth/key')
  } catch {
    // The new key is stored either way; the old one expires on its own.
  }
}

/** The account to remember, and the one before it when the sign-in changed accounts. */
function accountFields(previous: StoredConfig | null, url: string, account: string): Pick<StoredConfig, 'account' | 'previousAccount'> {
  const before = previous && normalizeUrl(previous.url) === url ? previous.account : undefined
  return before !== undefined && before.toLowerCase() !== account.toLowerCase() ? { account, previousAccount: before } : { account }
}

/** A stored sign-in from before `account` was kept: ask the vault whose its key is (best effort). */
async function withAccount(previous: StoredConfig | null, url: string): Promise<StoredConfig | null> {
  if (!previous || previous.account !== undefined || normalizeUrl(previous.url) !== url) return previous
  try {
    const answer = await new VaultClient(url, previous.key).raw('GET', '/api/auth/me')
    if (answer.status === 200) return { ...previous, account: (JSON.parse(answer.text) as MeAnswer).user.email }
  } catch {
    // Unreachable or not JSON: nothing to compare with.
  }
  return previous
}

/**
 * A code someone else saw can be approved with their account, and svc would then read and write
 * their vault: say so loudly when the account is not the one svc was signed in as before.
 */
function warnOtherAccount(previous: StoredConfig | null, url: string, account: string): void {
  const { previousAccount } = accountFields(previous, url, account)
  if (previousAccount === undefined) return
  note(
    printable(
      `svc: warning: this sign-in is for ${account}, not ${previousAccount} as before; if you did not expect that, run svc logout and svc login again\n`,
    ),
  )
}

/** The stored fields of a key bound to a shared vault: its id, and its name as the key sees it. */
async function boundVault(client: VaultClient, vaultId: string | undefined): Promise<Pick<StoredConfig, 'vaultId' | 'vaultName'>> {
  if (!vaultId) return {}
  const vaults = await client.json<{ id: string; name: string }[]>('GET', '/api/vaults')
  const name = vaults.find((vault) => vault.id === vaultId)?.name
  return name === undefined ? { vaultId } : { vaultId, vaultName: name }
}

const inVault = (bound: Pick<StoredConfig, 'vaultName' | 'vaultId'>) => (bound.vaultId ? ` for the shared vault "${bound.vaultName ?? bound.vaultId}"` : '')

export async function login(argv: string[]): Promise<void> {
  const { options, positionals } = parseArgs(argv, [{ name: 'key' }, { name: 'scopes', value: true }, { name: 'vault', value: true }])
  const vault = str(options.vault)?.trim()
  if (options.vault !== undefined && !vault) throw usageError('--vault needs the name (or id) of a shared vault')
  if (positionals.length > 1) throw usageError('svc login takes one URL')
  if (positionals[0]?.startsWith('svc_')) {
    throw usageError('never pass a key as an argument (it would stay in your shell history): pipe it to svc login --key')
  }
  const url = loginUrl(positionals[0])
  warnIfClearText(url)
  const previous = await withAccount(readConfig(), url)
  if (options.key) {
    if (options.scopes !== undefined) throw usageError('--scopes applies to a new key, not to --key')
    if (vault !== undefined) throw usageError('--vault applies to a new key: a key made on the Access keys page is bound to its vault there')
    const key = (await readStdin()).trim()
    if (!key) throw new CliError('no key on standard input: echo "$KEY" | svc login --key URL')
    if (!/^svc_[A-Za-z0-9_-]+$/.test(key)) throw new CliError('that is not an svc access key (it starts with svc_)')
    const client = new VaultClient(url, key)
    const answer = await client.raw('GET', '/api/auth/key')
    if (answer.status === 401) throw new CliError(`the vault at ${url} does not accept this key (unknown, revoked or expired)`)
    if (answer.status !== 200) throw client.failure(answer)
    const record = JSON.parse(answer.text) as AccessKeyAnswer
    const me = await client.json<MeAnswer>('GET', '/api/auth/me')
    const bound = await boundVault(client, record.vaultId)
    const path = writeConfig({
      url,
      key,
      keyId: record.id,
      keyName: record.name,
      expiresAt: record.expiresAt,
      createdByLogin: false,
      ...accountFields(previous, url, me.user.email),
      ...bound,
    })
    await revokeReplaced(previous, url, key)
    note(printable(`Signed in to ${url} as ${me.user.email}${inVault(bound)} with the key "${record.name}" (${record.scopes.join(' ')}); saved in ${path}\n`))
    warnOtherAccount(previous, url, me.user.email)
    return
  }
  const scopes = str(options.scopes)
    ?.split(/[\s,]+/)
    .filter(Boolean)
  if (options.scopes !== undefined && (!scopes || scopes.length === 0)) throw usageError('--scopes needs a list, e.g. --scopes "export:read entries:read"')
  const anonymous = new VaultClient(url, null)
  const started = await anonymous.json<{ deviceCode: string; userCode: string; verificationUri: string; expiresIn: number; interval: number }>(
    'POST',
    '/api/auth/device',
    { deviceName: hostname() || 'this computer', ...(scopes ? { scopes } : {}), ...(vault !== undefined ? { vault } : {}) },
  )
  note(
    `To sign in, open this link in a browser where you are signed in to the vault:\n\n  ${started.verificationUri}\n\n` +
      `and type this code there: ${started.userCode}\n\n${vault !== undefined ? printable(`The key will be bound to your shared vault "${vault}".\n\n`) : ''}Waiting for approval (the code expires in ${Math.round(started.expiresIn / 60)} minutes)…\n`,
  )
  let intervalMs = started.interval * 1000
  const giveUpAt = Date.now() + started.expiresIn * 1000 + 30_000
  for (;;) {
    await sleep(intervalMs)
    const answer = await anonymous.raw('POST', '/api/auth/device/token', { deviceCode: started.deviceCode })
    if (answer.status === 200) {
      const created = JSON.parse(answer.text) as AccessKeyAnswer & { key: string }
      // Whoever approved the code owns the key: ask the vault whose it is before storing it.
      const client = new VaultClient(url, created.key)
      const me = await client.json<MeAnswer>('GET', '/api/auth/me')
      const bound = await boundVault(client, created.vaultId)
      const path = writeConfig({
        url,
        key: created.key,
        keyId: created.id,
        keyName: created.name,
        expiresAt: created.expiresAt,
        createdByLogin: true,
        ...accountFields(previous, url, me.user.email),
        ...bound,
      })
      await revokeReplaced(previous, url, created.key)
      note(
        printable(
          `Signed in to ${url} as ${me.user.email}${inVault(bound)}: key "${created.name}" (${created.scopes.join(' ')}), expires ${created.expiresAt ?? 'never'}; saved in ${path}\n`,
        ),
      )
      warnOtherAccount(previous, url, me.user.email)
      await noteIfOlder(url)
      return
    }
    const { code } = errorBody(answer.text)
    if (code === 'AUTHORIZATION_PENDING') {
      if (Date.now() > giveUpAt) throw new CliError('the sign-in was not approved in time: run svc login again')
      continue
    }
    // RFC 8628 3.5: slow down by five seconds for good.
    if (code === 'SLOW_DOWN') {
      intervalMs += 5000
      continue
    }
    if (code === 'ACCESS_DENIED') throw new CliError('the sign-in was denied in the web interface')
    if (code === 'EXPIRED_TOKEN') throw new CliError('the sign-in code expired before it was approved: run svc login again')
    throw anonymous.failure(answer)
  }
}

export async function logout(argv: string[]): Promise<void> {
  const { options } = parseArgs(argv, [{ name: 'keep-key' }])
  const stored = readConfig()
  if (!stored) {
    note('svc is not signed in; nothing to forget\n')
    return
  }
  // The stored key is the CLI's own, whether svc login made it or it came through --key;
  // --keep-key only forgets it (a key that also serves elsewhere).
  if (!options['keep-key']) {
    try {
      const answer = await new VaultClient(normalizeUrl(stored.url), stored.key).raw('DELETE', '/api/auth/key')
      if (answer.status === 204) note(`Revoked the key "${esc(stored.keyName ?? 'svc')}" on ${stored.url}\n`)
      else if (answer.status === 401) note('The key was already revoked or expired\n')
      else note(`svc: could not revoke the key on the server (HTTP ${answer.status}); revoke "${esc(stored.keyName ?? 'svc')}" in the web interface\n`)
    } catch (error) {
      note(`svc: ${esc((error as Error).message)}; the key stays valid until revoked in the web interface or it expires\n`)
    }
  }
  removeConfig()
  note(`Signed out of ${stored.url}\n`)
}

export async function whoami(argv: string[]): Promise<void> {
  parseArgs(argv, [])
  const creds = credentials()
  const client = VaultClient.signedIn(creds)
  const me = await client.json<MeAnswer>('GET', '/api/auth/me')
  const key = await client.json<AccessKeyAnswer>('GET', '/api/auth/key')
  // The account the stored sign-in was approved by, when it changed accounts.
  const changed = creds.keySource === 'config' && creds.stored?.previousAccount ? ` (svc was signed in as ${creds.stored.previousAccount} before)` : ''
  const lines = [
    ['URL', creds.url],
    ['Account', me.user.email + changed],
    ['Key', `${key.name} (${key.keyPrefix}…)${creds.keySource === 'SVC_TOKEN' ? ' from SVC_TOKEN' : ''}`],
    ['Scopes', key.scopes.join(' ')],
    ['Expires', key.expiresAt ?? 'never'],
  ]
  if (key.vaultId) lines.push(['Vault', (await boundVault(client, key.vaultId)).vaultName ?? key.vaultId])
  out(printable(lines.map(([label, value]) => `${(label + ':').padEnd(9)}${value}\n`).join('')))
  await noteIfOlder(creds.url)
}

/** `vault`: a shared vault's name or id (--vault); else the personal vault, or the one the key is bound to. */
export const signedInClient = (vault?: string) => VaultClient.signedIn(credentials(), vault)

/** Semantic version order: 1 when a is newer, -1 when older, 0 when the same. */
function compareVersions(a: string, b: string): number {
  const parts = (v: string) =>
    v
      .split(/[.+-]/)
      .slice(0, 3)
      .map((n) => Number.parseInt(n, 10) || 0)
  const [x, y] = [parts(a), parts(b)]
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] > y[i] ? 1 : -1
  return 0
}

/** The vault's release, from /readyz (no credentials needed), or null when it cannot tell. */
async function serverVersion(url: string): Promise<string | null> {
  try {
    const answer = await new VaultClient(url, null).raw('GET', '/readyz')
    const version = (JSON.parse(answer.text) as { version?: unknown }).version
    return typeof version === 'string' ? version : null
  } catch {
    return null
  }
}

/** One line on standard error when the vault runs a newer release than this CLI. */
async function noteIfOlder(url: string): Promise<string | null> {
  const server = await serverVersion(url)
  if (server !== null && compareVersions(server, VERSION) > 0) {
    note(`svc: this CLI (${VERSION}) is older than the vault (${server}): download the current one from ${url}/cli/svc\n`)
  }
  return server
}

export async function version(argv: string[]): Promise<void> {
  parseArgs(argv, [])
  out(`svc ${VERSION}\n`)
  let url: string | undefined
  try {
    url = credentials().url
  } catch {
    return
  }
  const server = await noteIfOlder(url)
  out(server === null ? `vault ${url}: version unknown (not reachable)\n` : `vault ${url}: svc-vault ${server}\n`)
}

// ---------------------------------------------------------------- export, get

const VAULT = { name: 'vault', value: true }
const SELECT = [{ name: 'env', short: 'e', value: true }, { name: 'name', short: 'n', value: true }, VAULT]

/** The export's formats, one per reader (docs/export.md). */
export const EXPORT_FORMATS = ['dotenv', 'bun', 'node', 'python', 'docker', 'systemd', 'shell', 'json', 'yaml'] as const

export async function exportCommand(argv: string[]): Promise<void> {
  const { options, positionals } = parseArgs(argv, [...SELECT, { name: 'format', value: true }, { name: 'output', short: 'o', value: true }])
  if (positionals.length) throw usageError(`svc export takes no argument (${positionals[0]})`)
  const format = str(options.format) ?? 'dotenv'
  if (!(EXPORT_FORMATS as readonly string[]).includes(format)) throw usageError(`--format must be one of ${EXPORT_FORMATS.join(', ')}, got ${format}`)
  const selection = selectionFrom(options)
  const client = VaultClient.signedIn(credentials(), str(options.vault))
  let text: string
  if (format === 'json') {
    // fetchExport converts the .env text of a vault without the JSON format.
    const fetched = (await fetchExport(client, selection))!
    text = fetched.dotenv === null ? fetched.text : JSON.stringify(fetched.variables, null, 2)
  } else {
    const answer = await client.raw('GET', exportQuery(selection, format))
    if (answer.status === 400 && /^format\b/.test(errorBody(answer.text).error ?? ''))
      throw new CliError(`the vault at ${client.url} does not offer the ${format} format yet`)
    // A refusal (a value the format cannot carry) or an ambiguity: nothing is printed or written.
    if (answer.status !== 200) throw client.failure(answer)
    text = answer.text
  }
  if (text !== '' && !text.endsWith('\n')) text += '\n'
  const output = str(options.output)
  if (output === undefined) return void out(text)
  try {
    writeSecretFile(resolve(output), text)
  } catch (error) {
    throw new CliError(`cannot write ${output}: ${(error as Error).message}`)
  }
}

/** Occurrences of `NAME=` at the start of a line of .env text. */
const occurrences = (text: string, name: string) => text.split('\n').filter((line) => line.startsWith(`${name}=`)).length

export async function get(argv: string[]): Promise<void> {
  const { options, positionals } = parseArgs(argv, [...SELECT, { name: 'project', value: true }, { name: 'file', value: true }])
  if (positionals.length !== 1) throw usageError('svc get takes one variable name: svc get DATABASE_URL')
  const name = positionals[0]
  const selection: Selection = selectionFrom(options)
  const client = VaultClient.signedIn(credentials(), str(options.vault))
  const several = () => new CliError(`${name} has several values in ${describeSelection(selection)}: choose one with -e ENV or -n NAME`)
  let exported: Record<string, string>
  try {
    const fetched = (await fetchExport(client, selection))!
    // A vault without the JSON format answers .env text, where a name may repeat.
    if (fetched.dotenv !== null && occurrences(fetched.dotenv, name) > 1) throw several()
    exported = fetched.variables
  } catch (error) {
    // The export refuses a selection where some variable appears twice: look at this one.
    if (!(isCliError(error) && error.message.includes('AMBIGUOUS_EXPORT'))) throw error
    if (error.message.startsWith(`${name} is written by`)) throw several()
    if (selection.environment) throw error
    // Another variable is the repeated one: this one's values, environment by environment.
    const values = new Set<string>()
    let unknown = false
    for (const environment of ENVIRONMENTS) {
      const answer = await client.raw('GET', exportQuery({ ...selection, environment }, 'json'))
      if (answer.status === 409) {
        if ((errorBody(answer.text).error ?? '').startsWith(`${name} is written by`)) throw several()
        unknown = true
      } else if (answer.status !== 200) throw client.failure(answer)
      else {
        const variables = JSON.parse(answer.text) as Record<string, string>
        if (Object.hasOwn(variables, name)) values.add(variables[name])
      }
    }
    if (values.size > 1) throw several()
    if (values.size === 0 && unknown) throw error
    exported = values.size === 1 ? { [name]: [...values][0] } : {}
  }
  const variables = await withProject(client, selection, exported)
  if (!Object.hasOwn(variables, name)) throw new CliError(`nothing matched: ${name} is not in ${describeSelection(selection)}`)
  // A pipe or a file gets the value's exact bytes; a terminal a line, its control characters escaped.
  out(process.stdout.isTTY ? printable(variables[name]) + '\n' : variables[name])
}

// ---------------------------------------------------------------- import, totp, ls

interface ImportKey {
  name: string
  categoryName: string
  keyType: 'simple' | 'group'
  envVarName: string
  field?: string
  /** The key goes to one of your existing categories. */
  reuse?: boolean
}

export async function importCommand(argv: string[]): Promise<void> {
  const { options, positionals } = parseArgs(argv, [{ name: 'apply' }, { name: 'name', short: 'n', value: true }, { name: 'env', short: 'e', value: true }])
  if (positionals.length !== 1) throw usageError('svc import takes one file: svc import .env (or - for standard input)')
  const apply = options.apply === true
  const name = str(options.name)
  if (apply && !name) throw usageError('--apply needs --name, the entry name to store the values under')
  if (!apply && (name || options.env)) throw usageError('--name and -e apply only with --apply')
  let text: string
  try {
    text = positionals[0] === '-' ? await readStdin() : readFileSync(positionals[0], 'utf8')
  } catch (error) {
    throw new CliError(`cannot read ${positionals[0]}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`)
  }
  const client = VaultClient.signedIn(credentials())
  const body = { text, ...(apply ? { apply: true, name, ...(options.env ? { environment: str(options.env) } : {}) } : {}) }
  type Ids = { categories: string[]; entries: string[] }
  const answer = await client.json<{ data: { source: string; keys: ImportKey[]; created?: Ids; updated?: Ids } }>('POST', '/api/ai/import', body)
  const { keys, source, created, updated } = answer.data
  const byCategory = new Map<string, ImportKey[]>()
  for (const key of keys) byCategory.set(key.categoryName, [...(byCategory.get(key.categoryName) ?? []), key])
  let listing = ''
  for (const [category, list] of byCategory) {
    listing += `${esc(category)} (${esc(list[0].keyType)}${list[0].reuse ? ', existing category' : list[0].reuse === false ? ', new category' : ''})\n`
    for (const key of list) listing += `  ${esc(key.name)}${key.keyType === 'group' && key.field ? ` -> field ${esc(key.field)}` : ''}\n`
  }
  out(listing)
  note(
    `${keys.length} variable${keys.length === 1 ? '' : 's'} in ${byCategory.size} categor${byCategory.size === 1 ? 'y' : 'ies'}, suggested by ${source === 'ai' ? 'the AI model (it saw names only)' : 'the built-in classifier'}\n`,
  )
  if (created) {
    const changed = updated ? `; updated ${updated.entries.length} existing entries` : ''
    note(`Stored: ${created.categories.length} new categories, ${created.entries.length} new entries named ${esc(name ?? '')}${changed}\n`)
  } else note('Nothing stored; add --apply --name NAME [-e ENV] to store them\n')
}

interface TwoFactorItem {
  id: string
  service: string
  accountName: string
}

export async function totp(argv: string[]): Promise<void> {
  const { options, positionals } = parseArgs(argv, [VAULT])
  if (positionals.length > 1) throw usageError('svc totp takes at most one search word')
  const query = positionals[0]?.toLowerCase()
  const client = VaultClient.signedIn(credentials(), str(options.vault))
  const tokens = await client.json<TwoFactorItem[]>('GET', '/api/2fa')
  const matches = query ? tokens.filter((t) => t.service.toLowerCase().includes(query) || t.accountName.toLowerCase().includes(query)) : tokens
  if (matches.length === 0)
    throw new CliError(query ? `nothing matched: no two-factor token for ${positionals[0]}` : 'nothing matched: the vault holds no two-factor token')
  const codes = await Promise.all(matches.map((t) => client.json<{ code: string; remainingSeconds: number }>('POST', `/api/2fa/${t.id}/reveal`)))
  out(
    matches
      .map((t, i) => `${esc(codes[i].code)}  ${String(codes[i].remainingSeconds).padStart(2)}s left  ${esc(t.service)} (${esc(t.accountName)})\n`)
      .join(''),
  )
}

interface CategoryItem {
  id: string
  name: string
  keyType: string
  envVarName: string | null
}
interface EntryItem {
  id: string
  categoryId: string
  name: string
  environment: string | null
}

export async function ls(argv: string[]): Promise<void> {
  const { options } = parseArgs(argv, [VAULT])
  const client = VaultClient.signedIn(credentials(), str(options.vault))
  const [categories, entries] = await Promise.all([client.json<CategoryItem[]>('GET', '/api/categories'), client.json<EntryItem[]>('GET', '/api/entries')])
  if (categories.length === 0) return void note('The vault holds no category yet\n')
  const byText = (a: string, b: string) => a.localeCompare(b)
  let text = ''
  for (const category of [...categories].sort((a, b) => byText(a.name, b.name))) {
    text += `${esc(category.name)}  [${esc(category.keyType)}${category.envVarName ? ` ${esc(category.envVarName)}` : ''}]\n`
    const own = entries.filter((e) => e.categoryId === category.id).sort((a, b) => byText(a.name, b.name) || byText(a.environment ?? '', b.environment ?? ''))
    for (const entry of own) text += `  ${esc(entry.name)}${entry.environment ? ` (${esc(entry.environment)})` : ''}\n`
    if (own.length === 0) text += '  (no entries)\n'
  }
  out(text)
}
