// The programs that read an export, run for real on one file holding many variables (one process
// per file and reader), answering name -> value as the program's environment has it. docker and
// systemd cannot run here: their readers are replayed from their documented grammar (docs/export.md).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse as dotenvParse } from 'dotenv'

export type Values = Record<string, string | null>

/** Where Debian's node lives; else the node on PATH. */
export const NODE = Bun.which('node', { PATH: '/usr/bin' }) ?? Bun.which('node')
/** Debian's python3, where python3-dotenv is installed. */
export const PYTHON = '/usr/bin/python3'

export function missingPythonDotenv(): string | null {
  const probe = Bun.spawnSync([PYTHON, '-c', 'import dotenv'], { stderr: 'ignore', stdout: 'ignore' })
  return probe.exitCode === 0 ? null : 'python3-dotenv is not installed (scripts/test.sh installs it from Debian)'
}

// The reader's environment: nothing of this machine that a value could expand to by accident,
// except a HOME, so an expanded $HOME shows.
const CLEAN_ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/home/reader-home' }

/** A script printing the named variables of its environment as JSON (null when unset). */
const jsScript = (names: string[]) =>
  `process.stdout.write(JSON.stringify(Object.fromEntries(${JSON.stringify(names)}.map((n) => [n, process.env[n] ?? null]))))`

async function run(argv: string[], cwd: string): Promise<string> {
  const proc = Bun.spawn(argv, { cwd, env: CLEAN_ENV, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).arrayBuffer(), new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`${argv[0]} exited ${code}: ${err}`)
  return new TextDecoder().decode(out)
}

async function inFolder<T>(file: string, text: string, fn: (dir: string, path: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-reader-'))
  try {
    const path = join(dir, file)
    writeFileSync(path, text)
    return await fn(dir, path)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Shell output: NAME NUL set-or-unset NUL value NUL, for every name. */
function shellScript(names: string[]): string {
  return names.map((n) => `printf '%s\\0%s\\0%s\\0' ${n} "\${${n}+set}" "\${${n}-}"`).join('\n')
}
function parseShellOutput(out: string): Values {
  const parts = out.split('\0')
  const values: Values = {}
  for (let i = 0; i + 2 < parts.length; i += 3) values[parts[i]] = parts[i + 1] === 'set' ? parts[i + 2] : null
  return values
}

export const READERS: Record<string, (text: string, names: string[]) => Promise<Values>> = {
  'npm dotenv': async (text) => dotenvParse(text),
  'bun --env-file': (text, names) =>
    inFolder('exported.env', text, async (dir, path) => JSON.parse(await run([process.execPath, `--env-file=${path}`, '-e', jsScript(names)], dir))),
  'bun run (.env)': (text, names) =>
    inFolder('.env', text, async (dir) => {
      writeFileSync(join(dir, 'print.js'), jsScript(names))
      return JSON.parse(await run([process.execPath, 'run', 'print.js'], dir))
    }),
  'node --env-file': (text, names) =>
    inFolder('exported.env', text, async (dir, path) => JSON.parse(await run([NODE!, `--env-file=${path}`, '-e', jsScript(names)], dir))),
  'python-dotenv': (text, names) =>
    inFolder('exported.env', text, async (dir, path) => {
      const script = `import json, sys\nfrom dotenv import dotenv_values\nv = dotenv_values(sys.argv[1])\nsys.stdout.write(json.dumps({n: v.get(n) for n in json.loads(sys.argv[2])}))`
      return JSON.parse(await run([PYTHON, '-c', script, path, JSON.stringify(names)], dir))
    }),
  bash: (text, names) =>
    inFolder('exported.sh', text, async (dir) => parseShellOutput(await run(['bash', '-c', `. ./exported.sh\n${shellScript(names)}`], dir))),
  dash: (text, names) =>
    inFolder('exported.sh', text, async (dir) => parseShellOutput(await run(['dash', '-c', `. ./exported.sh\n${shellScript(names)}`], dir))),
  'JSON.parse': async (text) => JSON.parse(text),
  'Bun.YAML (Secret stringData)': async (text) => {
    const doc = Bun.YAML.parse(text) as { kind: string; stringData: Record<string, string> }
    if (doc.kind !== 'Secret') throw new Error('not a Secret')
    return doc.stringData ?? {}
  },
  'docker grammar': async (text) => dockerEnvFile(text),
  'systemd grammar': async (text) => systemdEnvironmentFile(text),
}

/** The readers of each format. */
export const FORMAT_READERS: Record<string, string[]> = {
  dotenv: ['npm dotenv'],
  bun: ['bun --env-file', 'bun run (.env)'],
  node: ['node --env-file'],
  python: ['python-dotenv'],
  docker: ['docker grammar'],
  systemd: ['systemd grammar'],
  shell: ['bash', 'dash'],
  json: ['JSON.parse'],
  yaml: ['Bun.YAML (Secret stringData)'],
}

/**
 * docker run --env-file, as docker/cli's opts/envfile.go documents and does it: lines split at
 * LF with a trailing CR dropped (Go's bufio.ScanLines), a UTF-8 BOM dropped from the first, leading
 * whitespace trimmed; empty lines and lines starting with # skipped; the rest split at the first
 * =, the value passed through untouched. Longer lines than 64 KiB are an error.
 */
export function dockerEnvFile(text: string): Values {
  const values: Values = {}
  const lines = text.split('\n')
  if (text.endsWith('\n')) lines.pop()
  lines.forEach((raw, i) => {
    let line = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    if (new TextEncoder().encode(line).length > 64 * 1024) throw new Error('bufio.Scanner: token too long')
    if (i === 0 && line.startsWith('\ufeff')) line = line.slice(1)
    line = line.replace(/^\s+/u, '')
    if (line === '' || line.startsWith('#')) return
    const eq = line.indexOf('=')
    if (eq <= 0) throw new Error(`docker: no variable on line ${i + 1}`)
    const name = line.slice(0, eq)
    if (/\s/.test(name)) throw new Error(`docker: bad variable name on line ${i + 1}`)
    values[name] = line.slice(eq + 1)
  })
  return values
}

/**
 * systemd's EnvironmentFile= (parse_env_file_internal in src/basic/env-file.c, systemd 240+):
 * a state machine over the bytes. Outside quotes: leading blanks skipped, # or ; starts a comment
 * line, a backslash escapes the next character (a backslash-newline is removed), trailing blanks are
 * dropped, LF or CR ends the value. In single quotes everything is literal up to the next '. In
 * double quotes a backslash before " \ ` $ gives that character, before a newline removes both, and
 * before anything else stays. Quoted and unquoted parts join, as in a shell.
 */
export function systemdEnvironmentFile(text: string): Values {
  const values: Values = {}
  const NEWLINE = '\n\r'
  const BLANK = ' \t'
  type State = 'PRE_KEY' | 'KEY' | 'PRE_VALUE' | 'VALUE' | 'VALUE_ESCAPE' | 'SINGLE' | 'DOUBLE' | 'DOUBLE_ESCAPE' | 'COMMENT' | 'COMMENT_ESCAPE'
  let state: State = 'PRE_KEY'
  let key = ''
  let value = ''
  let lastValueBlank = -1
  const push = () => {
    if (key) values[key.trim()] = value
    key = ''
    value = ''
    lastValueBlank = -1
  }
  for (const c of text) {
    switch (state) {
      case 'PRE_KEY':
        if ('#;'.includes(c)) state = 'COMMENT'
        else if (!(BLANK + NEWLINE).includes(c)) {
          state = 'KEY'
          key = c
        }
        break
      case 'KEY':
        if (NEWLINE.includes(c)) {
          state = 'PRE_KEY'
          key = ''
        } else if (c === '=') state = 'PRE_VALUE'
        else key += c
        break
      case 'PRE_VALUE':
        if (NEWLINE.includes(c)) {
          state = 'PRE_KEY'
          push()
        } else if (c === "'") state = 'SINGLE'
        else if (c === '"') state = 'DOUBLE'
        else if (c === '\\') state = 'VALUE_ESCAPE'
        else if (!BLANK.includes(c)) {
          state = 'VALUE'
          value += c
        }
        break
      case 'VALUE':
        if (NEWLINE.includes(c)) {
          if (lastValueBlank >= 0) value = value.slice(0, lastValueBlank)
          state = 'PRE_KEY'
          push()
        } else if (c === '\\') {
          state = 'VALUE_ESCAPE'
          lastValueBlank = -1
        } else {
          if (!BLANK.includes(c)) lastValueBlank = -1
          else if (lastValueBlank < 0) lastValueBlank = value.length
          value += c
        }
        break
      case 'VALUE_ESCAPE':
        state = 'VALUE'
        if (!NEWLINE.includes(c)) value += c
        break
      case 'SINGLE':
        if (c === "'") state = 'PRE_VALUE'
        else value += c
        break
      case 'DOUBLE':
        if (c === '"') state = 'PRE_VALUE'
        else if (c === '\\') state = 'DOUBLE_ESCAPE'
        else value += c
        break
      case 'DOUBLE_ESCAPE':
        state = 'DOUBLE'
        if ('"\\`$'.includes(c)) value += c
        else if (c !== '\n') value += '\\' + c
        break
      case 'COMMENT':
        if (c === '\\') state = 'COMMENT_ESCAPE'
        else if (NEWLINE.includes(c)) state = 'PRE_KEY'
        break
      case 'COMMENT_ESCAPE':
        state = 'COMMENT'
        break
    }
  }
  if (state === 'VALUE' && lastValueBlank >= 0) value = value.slice(0, lastValueBlank)
  if (['PRE_VALUE', 'VALUE', 'VALUE_ESCAPE', 'SINGLE', 'DOUBLE', 'DOUBLE_ESCAPE'].includes(state)) push()
  return values
}
