// Where the CLI keeps its sign-in: $XDG_CONFIG_HOME/svc-vault/config.json (else
// ~/.config/svc-vault/config.json), folder 0700, file 0600. SVC_URL and SVC_TOKEN override it.
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { CliError } from './errors'
import { writeSecretFile } from './files'

export interface StoredConfig {
  url: string
  key: string
  keyId?: string
  keyName?: string
  expiresAt?: string | null
  /** The key was made by `svc login` (device approval), so `svc logout` revokes it. */
  createdByLogin?: boolean
  /** The account's e-mail when the key was stored: the account the next `svc login` expects. */
  account?: string
  /** Set when a sign-in was approved by another account than the one before it. */
  previousAccount?: string
  /** The shared vault the key is bound to (`svc login --vault`): svc goes there without --vault. */
  vaultId?: string
  vaultName?: string
}

export interface Credentials {
  url: string
  key: string
  /** Where the key came from, for messages. */
  keySource: 'SVC_TOKEN' | 'config'
  stored: StoredConfig | null
}

export function configDir(env = process.env): string {
  // node:os only without HOME: loading it is a few tenths of a millisecond before svc run's request.
  const base = env.XDG_CONFIG_HOME?.trim() || join(env.HOME?.trim() || (require('node:os') as typeof import('node:os')).homedir(), '.config')
  return join(base, 'svc-vault')
}

export const configPath = (env = process.env) => join(configDir(env), 'config.json')

export function readConfig(env = process.env): StoredConfig | null {
  const path = configPath(env)
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw new CliError(`cannot read ${path}: ${(error as Error).message}`)
  }
  try {
    const parsed = JSON.parse(text) as StoredConfig
    if (typeof parsed.url !== 'string' || typeof parsed.key !== 'string') throw new Error('url or key missing')
    return parsed
  } catch (error) {
    throw new CliError(`${path} is not a valid svc config (${(error as Error).message}): run svc login again`)
  }
}

export function writeConfig(config: StoredConfig, env = process.env): string {
  const dir = configDir(env)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  // mkdir's mode does not apply to a folder that already exists; this one is ours alone.
  chmodSync(dir, 0o700)
  const path = configPath(env)
  writeSecretFile(path, JSON.stringify(config, null, 2) + '\n')
  return path
}

export function removeConfig(env = process.env): boolean {
  const path = configPath(env)
  if (!existsSync(path)) return false
  rmSync(path, { force: true })
  return true
}

export function normalizeUrl(raw: string): string {
  let url: URL
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `https://${raw}`)
  } catch {
    throw new CliError(`not a URL: ${raw}`, 2)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliError(`the vault URL must be http:// or https://, got ${raw}`, 2)
  return url.origin + url.pathname.replace(/\/+$/, '')
}

/**
 * systemd's LoadCredential=svc-token:… puts the key in $CREDENTIALS_DIRECTORY/svc-token, readable
 * by the service alone and never in its environment: read as if it were SVC_TOKEN.
 */
function credentialToken(env: NodeJS.ProcessEnv): string | undefined {
  const dir = env.CREDENTIALS_DIRECTORY?.trim()
  if (!dir) return undefined
  try {
    return readFileSync(join(dir, 'svc-token'), 'utf8').trim() || undefined
  } catch {
    return undefined
  }
}

/** The URL and key to use: SVC_URL and SVC_TOKEN win over the stored config. */
export function credentials(env = process.env): Credentials {
  const stored = readConfig(env)
  const token = env.SVC_TOKEN?.trim() || credentialToken(env)
  const envUrl = env.SVC_URL?.trim()
  const url = envUrl ? normalizeUrl(envUrl) : stored ? normalizeUrl(stored.url) : undefined
  if (token) {
    if (!url) throw new CliError('SVC_TOKEN is set but SVC_URL is not: set SVC_URL to the vault address')
    return { url, key: token, keySource: 'SVC_TOKEN', stored }
  }
  if (!stored || !url) throw new CliError('not signed in: run svc login URL (or set SVC_URL and SVC_TOKEN)')
  // The stored key goes only to the vault it came from.
  if (url !== normalizeUrl(stored.url)) {
    throw new CliError(`SVC_URL (${url}) is not the vault svc is signed in to (${stored.url}): set SVC_TOKEN too, or run svc login ${url}`)
  }
  return { url, key: stored.key, keySource: 'config', stored }
}
