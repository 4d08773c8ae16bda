// Tests that need something of the machine (a program, root, Chromium). Where it is missing they
// are skipped, saying why; under CI=true they fail instead, so a CI run never passes by skipping.
import { describe, test } from 'bun:test'
import { ON_POSTGRES } from './postgres'

export const IN_CI = process.env.CI === 'true' || process.env.CI === '1'

/** Why `command` cannot run here (not on PATH), or null. */
export function missingCommand(command: string): string | null {
  return Bun.which(command) ? null : `${command} is not installed (scripts/test.sh installs it from Debian's packages)`
}

/** Why a root-only test cannot run here, or null. */
export function missingRoot(what: string): string | null {
  return process.getuid?.() === 0 ? null : `${what} needs root`
}

function failing(name: string, missing: string) {
  test(name, () => {
    throw new Error(`cannot run under CI=true: ${missing}`)
  })
}

/** `test` when nothing is missing; else skipped with the reason, or failing under CI=true. */
export function testNeeding(missing: string | null): (name: string, fn: () => Promise<void> | void, timeout?: number) => void {
  if (!missing) return (name, fn, timeout) => test(name, fn, timeout)
  if (IN_CI) return (name) => failing(name, missing)
  return (name, fn, timeout) => test.skip(`${name} (skipped: ${missing})`, fn, timeout)
}

/** `describe` when nothing is missing; else skipped with the reason, or one failing test under CI=true. */
export function describeNeeding(missing: string | null): (name: string, body: () => void) => void {
  if (!missing) return (name, body) => describe(name, body)
  if (IN_CI) return (name) => describe(name, () => failing('can run here', missing))
  return (name, body) => describe.skip(`${name} (skipped: ${missing})`, body)
}

/**
 * `test` on the file store; in the PostgreSQL pass (SVC_TEST_STORE=postgres) skipped, naming
 * `reason`: what of the data folder's own files it reads, which the database store does not have.
 * A deliberate skip (CI too): the guarantee is the file store's alone, or proved on PostgreSQL by
 * the test named in `reason`.
 */
export function testOnFileStore(reason: string): (name: string, fn: () => Promise<void> | void, timeout?: number) => void {
  if (!ON_POSTGRES) return (name, fn, timeout) => test(name, fn, timeout)
  return (name, fn, timeout) => test.skip(`${name} (file store only: ${reason})`, fn, timeout)
}

/** `describe` on the file store; skipped with `reason` in the PostgreSQL pass (see testOnFileStore). */
export function describeOnFileStore(reason: string): (name: string, body: () => void) => void {
  if (!ON_POSTGRES) return (name, body) => describe(name, body)
  return (name, body) => describe.skip(`${name} (file store only: ${reason})`, body)
}

/** testOnFileStore's reason for the disk floor's tests. */
export const DATA_FOLDER_DISK = "the disk floor (SVC_DISK_FLOOR) guards the data folder's filesystem; with a database nothing of a user is written there"
/** testOnFileStore's reason for backup, restore and rotate-master-key tests. */
export const DATA_FOLDER_TOOLS = 'these run backup, restore and rotate-master-key on a data folder; the same commands on a database: test/store/migrate.test.ts'
