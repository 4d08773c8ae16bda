// One server per data folder: a lock file holding the owner's pid. A lock left by a process
// that no longer runs (kill -9, power loss) is taken over.
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { join } from 'node:path'

export const LOCK_FILE = 'svc-vault.lock'

export class DataDirLockedError extends Error {}

function isRunning(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

export function acquireLock(dataDir: string): () => void {
  const path = join(dataDir, LOCK_FILE)
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600)
      writeSync(fd, String(process.pid))
      closeSync(fd)
      return () => {
        try {
          if (readFileSync(path, 'utf8').trim() === String(process.pid)) unlinkSync(path)
        } catch {
          // Already gone.
        }
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      let owner = NaN
      try {
        owner = Number(readFileSync(path, 'utf8').trim())
      } catch {
        // Vanished between open and read: try again.
      }
      if (isRunning(owner)) {
        throw new DataDirLockedError(`another svc-vault server (pid ${owner}) is using ${dataDir}; stop it first (lock file ${path})`)
      }
      try {
        unlinkSync(path)
      } catch {
        // Someone else took it over first; the next attempt sees theirs.
      }
    }
  }
  throw new DataDirLockedError(`could not lock ${dataDir} (lock file ${path})`)
}
