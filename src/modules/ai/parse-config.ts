// Pasted configs -> names and values. Runs on the server only: the values never leave it.
// Formats: `.env` (comments, `export`, quoting and multi-line values exactly as the `dotenv`
// package reads them), JSON objects (nested keys joined with `_`, upper-cased) and YAML-style
// `key: value` lines (indented blocks nest like JSON; `|` and `>` block scalars hold multi-line values).
import { parse as parseDotenv } from 'dotenv'

export interface ParsedKey {
  /** A variable name: `^[A-Za-z_][A-Za-z0-9_]*$`. */
  name: string
  value: string
}

/** The longest variable name kept (category names and envVarName allow 200 characters). */
export const MAX_NAME_LENGTH = 200
/** More keys than this in one paste is not a config; the rest are ignored. */
export const MAX_KEYS = 500

/** A name usable as an environment variable: invalid characters become `_`, a leading digit gets `_`. */
export function toVariableName(raw: string): string | null {
  let name = raw.trim().replace(/[^A-Za-z0-9_]/g, '_')
  if (/^[0-9]/.test(name)) name = `_${name}`
  if (!name || /^_+$/.test(name) || name.length > MAX_NAME_LENGTH) return null
  return name
}

function scalarText(value: unknown): string {
  if (value === null || value === undefined) return ''
  if (typeof value === 'string') return value
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value)
  return JSON.stringify(value)
}

function flattenJson(value: unknown, path: string[], out: Map<string, string>): void {
  if (value !== null && typeof value === 'object') {
    const pairs = Array.isArray(value) ? value.map((item, index) => [String(index), item] as const) : Object.entries(value)
    if (pairs.length === 0 && path.length > 0) {
      addKey(out, path.join('_').toUpperCase(), Array.isArray(value) ? '[]' : '{}')
      return
    }
    for (const [key, item] of pairs) flattenJson(item, [...path, key], out)
    return
  }
  if (path.length > 0) addKey(out, path.join('_').toUpperCase(), scalarText(value))
}

function addKey(out: Map<string, string>, rawName: string, value: string): void {
  const name = toVariableName(rawName)
  if (!name) return
  // A repeated key keeps its first position and its last value, as a shell would leave it.
  if (out.size >= MAX_KEYS && !out.has(name)) return
  out.set(name, value)
}

const YAML_KEY_LINE = /^(\s*)(?:-\s+)?(["']?)([A-Za-z0-9_.\-]+)\2\s*:(?:\s+(.*))?$/

function unquoteYaml(raw: string): string {
  const text = raw.trim()
  // A quoted scalar may be followed by a comment.
  const double = /^"((?:[^"\\]|\\.)*)"\s*(?:#.*)?$/.exec(text)
  if (double) {
    try {
      return JSON.parse(`"${double[1]}"`) as string
    } catch {
      return double[1]
    }
  }
  const single = /^'((?:[^']|'')*)'\s*(?:#.*)?$/.exec(text)
  if (single) return single[1].replace(/''/g, "'")
  // An unquoted scalar ends at a comment: ` #` (a `#` inside a word is part of the value).
  return text.replace(/\s+#.*$/, '')
}

/** YAML-style `key: value` lines; an indented block under `key:` nests (`PARENT_CHILD`). */
function parseYamlLines(text: string): Map<string, string> {
  const out = new Map<string, string>()
  const lines = text.replace(/\r\n?/g, '\n').split('\n')
  const stack: { indent: number; key: string }[] = []
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]
    if (!line.trim() || /^\s*#/.test(line) || /^(---|\.\.\.)\s*$/.test(line)) continue
    const match = YAML_KEY_LINE.exec(line)
    if (!match) continue
    const indent = match[1].length
    const key = match[3]
    const rest = (match[4] ?? '').trim()
    while (stack.length && stack[stack.length - 1].indent >= indent) stack.pop()
    const path = [...stack.map((s) => s.key), key]
    const fullName = path.length > 1 ? path.join('_').toUpperCase() : key
    if (rest === '' || rest.startsWith('#')) {
      stack.push({ indent, key })
      continue
    }
    const block = /^([|>])([+-]?)\s*(#.*)?$/.exec(rest)
    if (block) {
      const body: string[] = []
      let blockIndent = -1
      while (i + 1 < lines.length) {
        const next = lines[i + 1]
        const nextIndent = next.length - next.trimStart().length
        if (next.trim() && nextIndent <= indent) break
        if (next.trim() && blockIndent < 0) blockIndent = nextIndent
        body.push(next)
        i++
      }
      const cut = Math.max(blockIndent, 0)
      let content = body.map((l) => l.slice(Math.min(cut, l.length - l.trimStart().length))).join(block[1] === '|' ? '\n' : ' ')
      if (block[2] === '+') content += '\n'
      else {
        content = content.replace(/[\n ]+$/, '')
        if (block[2] !== '-') content += '\n'
      }
      addKey(out, fullName, content)
      continue
    }
    addKey(out, fullName, unquoteYaml(rest))
  }
  return out
}

function looksLikeJson(text: string): boolean {
  return text.startsWith('{')
}

/** True when every assignment-looking line is `key: value` and none is `KEY=value`. */
function looksLikeYaml(text: string): boolean {
  let yaml = 0
  for (const line of text.split(/\r?\n/)) {
    const trimmed = line.trim()
    if (!trimmed || trimmed.startsWith('#') || trimmed === '---') continue
    if (/^(?:export\s+)?[\w.-]+\s*=/.test(trimmed)) return false
    if (YAML_KEY_LINE.test(line)) yaml++
  }
  return yaml > 0
}

export type ConfigFormat = 'json' | 'yaml' | 'env'

/** The keys of a pasted config, in the order they appear. An empty list means nothing was recognised. */
export function parseConfig(text: string): { format: ConfigFormat; keys: ParsedKey[] } {
  const trimmed = text.replace(/^\uFEFF/, '').trim()
  let format: ConfigFormat = 'env'
  let out = new Map<string, string>()
  if (looksLikeJson(trimmed)) {
    try {
      const value = JSON.parse(trimmed) as unknown
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
        format = 'json'
        flattenJson(value, [], out)
      }
    } catch {
      // Not JSON after all: read as lines below.
    }
  }
  if (format !== 'json') {
    if (looksLikeYaml(trimmed)) {
      format = 'yaml'
      out = parseYamlLines(trimmed)
    } else {
      for (const [name, value] of Object.entries(parseDotenv(trimmed))) addKey(out, name, value)
    }
  }
  return { format, keys: [...out].map(([name, value]) => ({ name, value })) }
}
