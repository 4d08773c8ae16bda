// Disks that fail on purpose, for the failing-disk tests (failing-disk.test.ts, audit-disk.test.ts).
// Each set-up answers a Disk, or a string saying why it cannot be made here (the test then skips,
// saying why; under CI=true it fails instead). What a set-up leaves behind is undone after all the
// tests of its file (cleanupAfterAll).
import { afterAll } from 'bun:test'
import { spawnSync } from 'node:child_process'
import { closeSync, openSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { removeDir, tempDir } from '../support/server'

export const isRoot = process.getuid?.() === 0

export interface Disk {
  dataDir: string
  break(): void
  fix(): void
}

/**
 * Call at the top of a test file: the function it answers registers what to undo after all the
 * file's tests (last registered, first run).
 */
export function cleanupAfterAll(): (...cleanup: (() => void)[]) => void {
  const cleanups: (() => void)[] = []
  afterAll(() => {
    for (const cleanup of cleanups.reverse()) {
      try {
        cleanup()
      } catch {
        // best effort
      }
    }
  })
  return (...cleanup) => void cleanups.push(...cleanup)
}

export function run(command: string, args: string[]): boolean {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0
}

/**
 * A 1 MiB tmpfs mounted as the data folder (root with CAP_SYS_ADMIN); break() fills it up, to the
 * last partial page, so that writes needing new space fail with ENOSPC.
 */
export function fullDisk(prefix: string, afterAllTests: (...cleanup: (() => void)[]) => void): Disk | string {
  if (!isRoot) return 'mounting a tmpfs needs root'
  const dataDir = tempDir(prefix)
  if (!run('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', dataDir])) {
    removeDir(dataDir)
    return 'mount -t tmpfs is not permitted here'
  }
  afterAllTests(
    () => removeDir(dataDir),
    () => run('umount', ['-l', dataDir]),
  )
  const filler = join(dataDir, 'filler.bin')
  return {
    dataDir,
    break() {
      const fd = openSync(filler, 'w')
      const chunk = Buffer.alloc(64 * 1024, 1)
      try {
        for (;;) writeSync(fd, chunk)
      } catch {
        // ENOSPC: full.
      }
      // Fill the last partial page too.
      try {
        for (;;) writeSync(fd, chunk.subarray(0, 512))
      } catch {}
      closeSync(fd)
    },
    fix: () => rmSync(filler, { force: true }),
  }
}
