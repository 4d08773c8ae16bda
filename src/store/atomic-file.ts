// Durable, atomic file replacement: write a temporary file, fsync it, rename it over the
// target, fsync the folder. A crash at any point leaves either the old or the new file whole.
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs'
import { open, rename, unlink } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'

let sequence = 0
const tempPath = (path: string) => join(dirname(path), `.${basename(path)}.${process.pid}.${++sequence}.tmp`)

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
      await handle.sync()
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
