// Durable, atomic file replacement: write a temporary file, fsync it, rename it over the
// target, fsync the folder. A crash at any point leaves either the old or the new file whole.
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs'
import { open, rename, unlink } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'

let sequence = 0
const tempPath = (path: string) => join(dirname(path), `.${basename(path)}.${process.pid}.${++sequence}.tmp`)

/** Listeners told how long each file sync of a write took, in seconds (GET /metrics). */
const fsyncListeners = new Set<(seconds: number) => void>()

export function onFsync(listener: (seconds: number) => void): () => void {
  fsyncListeners.add(listener)
  return () => void fsyncListeners.delete(listener)
}

/** Runs a sync and tells the listeners how long it took. */
export async function timedSync(sync: () => Promise<void>): Promise<void> {
  if (fsyncListeners.size === 0) return sync()
  const started = performance.now()
  await sync()
  const seconds = (performance.now() - started) / 1000
  for (const listener of fsyncListeners) listener(seconds)
}

/** Writes, syncs and removes a temporary file in `dir`: throws when the folder takes no writes. */
export async function probeWritable(dir: string): Promise<void> {
  const temp = join(dir, `.ready-probe.${process.pid}.${++sequence}.tmp`)
  try {
    const handle = await open(temp, 'w', 0o600)
    try {
      await handle.writeFile('ready\n')
      await handle.sync()
    } finally {
      await handle.close()
    }
  } finally {
    await unlink(temp).catch(() => {})
  }
}

export function isTempFile(name: string): boolean {
  return name.startsWith('.') && name.endsWith('.tmp')
}

export function fsyncDirSync(dir: string): void {
  const fd = openSync(dir, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

export async function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o600): Promise<void> {
  const temp = tempPath(path)
  const handle = await open(temp, 'w', mode)
  try {
    try {
      await handle.writeFile(data)
      await timedSync(() => handle.sync())
    } finally {
      await handle.close()
    }
    await rename(temp, path)
  } catch (error) {
    // A half-written temporary file on a full disk would keep it full: remove it.
    await unlink(temp).catch(() => {})
    throw error
  }
  await fsyncDir(dirname(path))
}

export function writeFileAtomicSync(path: string, data: string | Uint8Array, mode = 0o600): void {
  const temp = tempPath(path)
  const fd = openSync(temp, 'w', mode)
  try {
    try {
      const bytes = typeof data === 'string' ? Buffer.from(data) : data
      let offset = 0
      while (offset < bytes.length) offset += writeSync(fd, bytes, offset)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(temp, path)
  } catch (error) {
    rmSync(temp, { force: true })
    throw error
  }
  fsyncDirSync(dirname(path))
}
