// A data sync the test releases by hand (AuditLogFile's injectable sync): what is acknowledged and
// shown while a batch is on its way to the disk.
import { fdatasyncSync } from 'node:fs'

export function heldSync() {
  const held: { fd: number; done: (error: Error | null) => void }[] = []
  return {
    held,
    sync: (fd: number, done: (error: Error | null) => void) => void held.push({ fd, done }),
    /** Lets the oldest sync finish (with this error, if any); without one the real fdatasync runs first. */
    release(error: Error | null = null) {
      const next = held.shift()!
      if (!error) fdatasyncSync(next.fd)
      next.done(error)
    },
  }
}

/** One turn of the event loop (a batch is written on the next turn after its appends). */
export const turn = () => new Promise((resolve) => setImmediate(resolve))
