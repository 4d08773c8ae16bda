// svc run's offline fallback: the last good answer for each selection, kept encrypted so that
// `svc run` can still start the program when the vault cannot be reached (a reboot, a train).
// The file key is derived from the access key (HKDF-SHA256), so a copied cache without the key
// is useless; each file is AES-256-GCM with the selection as associated data, 0600 in a 0700
// folder under $XDG_CACHE_HOME/svc-vault (else ~/.cache/svc-vault). The folder is named by a
// hash of (vault URL, key): a key refused by the vault (401/403) drops its whole folder.
// The copy also keeps the export's ETag: when the vault's next answer has the same one, svc run
// uses the copy's values, already decrypted while it waited, instead of parsing the answer.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto'
import { chmodSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { writeSecretFile } from './files'

/** What a cached answer is for: the selection's four parts (absent ones as null). */
export const selectionKey = (selection: { environment?: string; name?: string; project?: string; file?: string }) =>
  JSON.stringify([selection.environment ?? null, selection.name ?? null, selection.project ?? null, selection.file ?? null])

export interface FallbackKey {
  url: string
  key: string
}

export function cacheDir(env = process.env): string {
  const base = env.XDG_CACHE_HOME?.trim() || join(env.HOME?.trim() || homedir(), '.cache')
  return join(base, 'svc-vault')
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

/** The folder of one key's cached answers: its name reveals neither the URL nor the key. */
function keyDir(who: FallbackKey, env = process.env): string {
  return join(cacheDir(env), sha256(`svc-vault fallback folder\0${who.url}\0${who.key}`).slice(0, 32))
}

function fileKey(who: FallbackKey): Buffer {
  return Buffer.from(hkdfSync('sha256', who.key, who.url, 'svc-vault cli fallback v1', 32))
}

function filePath(who: FallbackKey, selection: string, env = process.env): string {
  return join(keyDir(who, env), `${sha256(`${who.key}\0${selection}`).slice(0, 32)}.json`)
}

interface Sealed {
  /** 1: the data is the variables; 2: the data is { etag, variables }. */
  v: 1 | 2
  savedAt: number
  iv: string
  data: string
  tag: string
}

/**
 * Keeps `variables` as the last good answer for `selection` (a failure to write is only a note),
 * with the export's ETag when they are the export as it came (no env project file added).
 */
export function saveFallback(
  who: FallbackKey,
  selection: string,
  variables: Record<string, string>,
  now = Date.now(),
  env = process.env,
  etag: string | null = null,
): void {
  try {
    const dir = keyDir(who, env)
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    chmodSync(dir, 0o700)
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', fileKey(who), iv)
    cipher.setAAD(Buffer.from(`${selection}\0${now}`))
    // The ETag inside the encrypted part: tied to the values by the tag, so that no one can
    // pair an older copy with a current ETag.
    const data = Buffer.concat([cipher.update(JSON.stringify({ etag, variables }), 'utf8'), cipher.final()])
    const sealed: Sealed = { v: 2, savedAt: now, iv: iv.toString('base64'), data: data.toString('base64'), tag: cipher.getAuthTag().toString('base64') }
    const path = filePath(who, selection, env)
    rmSync(path, { force: true })
    // Not synced: after a crash the copy may be missing or fail its tag, and is then not used.
    writeSecretFile(path, JSON.stringify(sealed), { sync: false })
  } catch (error) {
    process.stderr.write(`svc: could not keep the offline copy: ${(error as Error).message}\n`)
  }
}

export interface Fallback {
  variables: Record<string, string>
  savedAt: number
  /** The ETag of the export the variables are (null: unknown, or an env project file added). */
  etag: string | null
}

/** The cached answer for `selection`, when there is one younger than `maxAgeMs`. */
export function loadFallback(who: FallbackKey, selection: string, maxAgeMs: number, now = Date.now(), env = process.env): Fallback | null {
  if (maxAgeMs <= 0) return null
  const copy = readFallback(who, selection, env)
  return copy && now - copy.savedAt <= maxAgeMs && copy.savedAt <= now + 60_000 ? copy : null
}

/** The cached answer for `selection`, whatever its age (the vault can confirm it by its ETag). */
export function readFallback(who: FallbackKey, selection: string, env = process.env): Fallback | null {
  let sealed: Sealed
  try {
    sealed = JSON.parse(readFileSync(filePath(who, selection, env), 'utf8')) as Sealed
  } catch {
    return null
  }
  if ((sealed.v !== 1 && sealed.v !== 2) || typeof sealed.savedAt !== 'number') return null
  try {
    const decipher = createDecipheriv('aes-256-gcm', fileKey(who), Buffer.from(sealed.iv, 'base64'))
    decipher.setAAD(Buffer.from(`${selection}\0${sealed.savedAt}`))
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'))
    const text = Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString('utf8')
    if (sealed.v === 1) return { variables: JSON.parse(text) as Record<string, string>, savedAt: sealed.savedAt, etag: null }
    const data = JSON.parse(text) as { etag: string | null; variables: Record<string, string> }
    return { variables: data.variables, savedAt: sealed.savedAt, etag: typeof data.etag === 'string' ? data.etag : null }
  } catch {
    return null
  }
}

/** Forgets every cached answer of this key: the vault refused it. */
export function dropFallbacks(who: FallbackKey, env = process.env): void {
  rmSync(keyDir(who, env), { recursive: true, force: true })
}

/** Whether a cached file exists (for tests and messages); never reads it. */
export function hasFallback(who: FallbackKey, selection: string, env = process.env): boolean {
  try {
    return statSync(filePath(who, selection, env)).isFile()
  } catch {
    return false
  }
}
