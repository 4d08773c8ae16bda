// Free space of the data folder's filesystem: what clients without an account may make
// the server write stops above a floor, so that a flood of failed sign-ins cannot fill the disk
// under the vault's own writes.
import { statfsSync } from 'node:fs'

/** Bytes an unprivileged process may still write on the filesystem holding `dir`; null when unknown. */
export function freeDiskBytes(dir: string): number | null {
  try {
    const stats = statfsSync(dir)
    return Number(stats.bavail) * Number(stats.bsize)
  } catch {
    return null
  }
}
