// Where the master key comes from: SVC_MASTER_KEY, else <data>/master.key, created (mode 0600)
// on first start. The key file is the one file crypto/ reads, since it is a key.
import { existsSync, readFileSync, renameSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { ConfigError, parseMasterKey } from '../config'
import { fsyncDirSync, writeFileAtomicSync } from '../store/atomic-file'
import { randomBytes } from './tokens'

export const MASTER_KEY_FILE = 'master.key'

/** The data folder holds vaults but no key was supplied: a configuration problem, one line at start. */
export class MasterKeyMissingError extends ConfigError {}

export function loadMasterKey(
  dataDir: string,
  fromEnv: Uint8Array | undefined,
  warn: (line: string) => void,
  /** Whether the folder already holds sealed data: then a new key would open nothing, so none is made. */
  holdsData: () => boolean = () => false,
): Uint8Array {
  if (fromEnv) return fromEnv
  const path = join(dataDir, MASTER_KEY_FILE)
  if (existsSync(path)) return parseMasterKey(readFileSync(path, 'utf8'), path)
  if (holdsData()) {
    // A restored folder without its key: never generate one into it.
    throw new MasterKeyMissingError(
      `${dataDir} holds vaults but their master key is missing: SVC_MASTER_KEY is not set and ${path} does not exist; supply the key they were sealed with (SVC_MASTER_KEY=<base64 key>, or copy the key file to ${path} with mode 0600); no key was generated (docs/operations.md, "Restore")`,
    )
  }
  const key = randomBytes(32)
  // Durable before any data is sealed with it: losing this file would lose every secret.
  writeFileAtomicSync(path, key.toString('base64') + '\n', 0o600)
  warn(`warning: SVC_MASTER_KEY is not set; generated a master key into ${path} (mode 0600): back it up apart from the data`)
  return new Uint8Array(key)
}

export function generateMasterKeyBase64(): string {
  return randomBytes(32).toString('base64')
}

/** The key in a master key file, or null when the file does not exist. */
export function readMasterKeyFile(path: string): Uint8Array | null {
  if (!existsSync(path)) return null
  return parseMasterKey(readFileSync(path, 'utf8'), path)
}

/** Writes a master key file atomically, mode 0600. */
export function writeMasterKeyFile(path: string, key: Uint8Array): void {
  writeFileAtomicSync(path, Buffer.from(key).toString('base64') + '\n', 0o600)
}

/** Puts a staged key file in place of another in one atomic rename (then fsyncs the folder). */
export function replaceMasterKeyFile(stagedPath: string, path: string): void {
  renameSync(stagedPath, path)
  fsyncDirSync(dirname(path))
}
