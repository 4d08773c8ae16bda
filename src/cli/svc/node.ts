// The entry of the served file (GET /cli/svc). Not main.ts itself: its `#!/usr/bin/env bun` line,
// on a bundle's entry, makes Bun wrap the output in a function only Bun calls.
//
// `svc run` sends its export request first and loads the rest of the CLI (main.ts and all it
// imports: node:child_process, node:crypto, every command) while the vault answers: on Node, that
// loading is a good part of the start-up, and the vault's answer takes as long. The rest comes as
// text (SVC_REST, set by the build: src/web/cli-bundle.ts), compiled only then: V8 parses every
// function of a script when it compiles it, so as code of this file it would delay the request.
import { closeSync, fsyncSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import type { Script } from 'node:vm'
import { startRun } from './run-plan'

declare const SVC_REST: string
/** A hash of SVC_REST (set by the build): names its code cache, so no other version's is used. */
declare const SVC_REST_HASH: string

/**
 * Where V8's code cache of the rest is kept: a folder of this user's own (0700, not a link) in the
 * temporary folder, as Node's own compile cache does by default. Null where none is used: on Bun
 * and Windows, or when the folder is not this user's alone (another user could have made it).
 */
function codeCachePath(): string | null {
  if (process.versions.bun || process.platform === 'win32' || typeof process.getuid !== 'function') return null
  const uid = process.getuid()
  const dir = join(process.env.TMPDIR?.trim() || '/tmp', `svc-vault-code-${uid}`)
  try {
    mkdirSync(dir, { mode: 0o700 })
  } catch {}
  const stat = lstatSync(dir)
  if (!stat.isDirectory() || stat.uid !== uid || (stat.mode & 0o077) !== 0) return null
  return join(dir, `${SVC_REST_HASH}-${process.versions.v8}-${process.arch}.bin`)
}

/** Written under a temporary name and renamed, 0600: a reader sees the whole cache or none. */
function keepCodeCache(path: string, script: Script): void {
  const temp = `${path}.${process.pid}.tmp`
  try {
    const fd = openSync(temp, 'wx', 0o600)
    try {
      writeSync(fd, script.createCachedData())
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(temp, path)
  } catch {
    rmSync(temp, { force: true })
  }
}

/**
 * The rest, compiled with V8's code cache when there is one (it saves most of the compile: a few
 * ms of CPU on Node). Any failure to read or write the cache only means compiling from the text.
 */
function compileRest(source: string, filename: string): (exports: object, req: NodeJS.Require, module: object) => void {
  const vm = require('node:vm') as typeof import('node:vm')
  let path: string | null = null
  let cachedData: Buffer | undefined
  try {
    path = codeCachePath()
    if (path !== null) {
      const stat = lstatSync(path, { throwIfNoEntry: false })
      if (stat?.isFile() && stat.uid === process.getuid!() && (stat.mode & 0o077) === 0) cachedData = readFileSync(path)
    }
  } catch {
    path = null
  }
  const script = new vm.Script(source, { filename, cachedData })
  // Made at exit, so that it holds the functions this run compiled too; once per version.
  if (path !== null && (cachedData === undefined || script.cachedDataRejected)) process.once('exit', () => keepCodeCache(path, script))
  return script.runInThisContext()
}

void startRun(process.argv.slice(2)).then(() => {
  // The file's own path from argv: a bundler may replace __filename with the build's.
  const rest = compileRest(`(function (exports, require, module) {${SVC_REST}\n})`, process.argv[1] ?? 'svc')
  const module = { exports: {} }
  rest(module.exports, require, module)
})
