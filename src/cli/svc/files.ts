// Files the CLI writes hold secrets (the config's key, an export, a --mount file): each is
// created 0600 under a temporary name in the same folder, synced, then renamed into place, so
// no reader ever sees it half-written or with looser permissions.
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'

/** `sync: false` for a cache that may be lost in a crash (never seen torn: it is renamed into place). */
export function writeSecretFile(path: string, text: string, options: { sync?: boolean } = {}): void {
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${Date.now()}.tmp`)
  const fd = openSync(temp, 'wx', 0o600)
  try {
    writeSync(fd, text)
    if (options.sync !== false) fsyncSync(fd)
  } catch (error) {
    closeSync(fd)
    rmSync(temp, { force: true })
    throw error
  }
  closeSync(fd)
  try {
    renameSync(temp, path)
  } catch (error) {
    rmSync(temp, { force: true })
    throw error
  }
}
