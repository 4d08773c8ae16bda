// Pasted configs -> names and values. Runs on the server only: the values never leave it.
// Formats: `.env` (comments, `export`, quoting and multi-line values exactly as the `dotenv`
// package reads them), JSON objects (nested keys joined with `_`, upper-cased) and YAML mappings
// (read by Bun's YAML parser; nested keys joined like JSON's, top-level keys kept as written).
//
// Every step is linear in the text: a paste is user input and must never stall the server (issue
// 14). No regex here can backtrack more than once per character; nesting deeper than
// MAX_PASTE_DEPTH is a 400 (JSON measured in one pass; YAML deeper than the native parser's stack
// is refused too); flattening is iterative and visits at most one node per character of the text
// (YAML aliases cannot multiply the work). Values are kept as written, numbers included.
import { parse as parseDotenv } from 'dotenv'
import { MAX_NAME_LENGTH, toVariableName } from '../../domain/rules'
import { validationError } from '../../http/errors'

export interface ParsedKey {
  /** A variable name (isVariableName). */
  name: string
  value: string
}

/** More keys than this in one paste is not a config; the rest are ignored. */
export const MAX_KEYS = 500
/** Objects and lists nested deeper than this inside pasted JSON or YAML: 400 (as for request bodies). */
export const MAX_PASTE_DEPTH = 32

export const tooDeep = () => validationError('text', `nested deeper than ${MAX_PASTE_DEPTH} levels`)

const isContainer = (value: unknown): value is object => value !== null && typeof value === 'object'

/** A kept scalar of a JSON or YAML document: its flat name, its value as parsed, and its path of keys. */
interface Leaf {
  name: string
  value: unknown
  path: string[]
}

/**
 * The scalars of a document under flat names: nested keys joined with `_` and upper-cased below
 * the top level (at the top too when `upperTop`), in document order. Iterative (an explicit stack
 * of frames), at most `budget` nodes visited; it stops once MAX_KEYS names are kept.
 */
function flatten(root: object, upperTop: boolean, budget: number): Leaf[] {
  interface Frame {
    node: object
    keys: string[] | null
    length: number
    next: number
    name: string
  }
  const frame = (node: object, name: string): Frame => {
    const keys = Array.isArray(node) ? null : Object.keys(node)
    return { node, keys, length: keys ? keys.length : (node as unknown[]).length, next: 0, name }
  }
  const keyAt = (f: Frame, index: number) => (f.keys ? f.keys[index] : String(index))
  const leaves = new Map<string, Leaf>()
  const stack: Frame[] = [frame(root, '')]
  let visited = 0
  while (stack.length > 0 && leaves.size < MAX_KEYS && ++visited <= budget) {
    const top = stack[stack.length - 1]
    if (top.next >= top.length) {
      stack.pop()
      continue
    }
    const key = keyAt(top, top.next++)
    const child = (top.node as Record<string, unknown>)[key]
    const name = top.name ? `${top.name}_${key}`.toUpperCase() : upperTop ? key.toUpperCase() : key
    // A name too long stays too long: nothing below it can be kept.
    if (name.length > MAX_NAME_LENGTH) continue
    if (isContainer(child)) {
      if (stack.length >= MAX_PASTE_DEPTH) throw tooDeep()
      const inner = frame(child, name)
      if (inner.length > 0) {
        stack.push(inner)
        continue
      }
    }
    const variable = toVariableName(name)
    if (!variable) continue
    const path = stack.map((f) => keyAt(f, f.next - 1))
    // A repeated name keeps its first position and its last value, as a shell would leave it.
    const value = child
    const existing = leaves.get(variable)
    if (existing) Object.assign(existing, { value, path })
    else leaves.set(variable, { name: variable, value, path })
  }
  return [...leaves.values()]
}

/** The value at `path` inside `root`, or undefined. */
function at(root: unknown, path: string[]): unknown {
  let node = root
  for (const key of path) {
    if (!isContainer(node) || !Object.hasOwn(node, key)) return undefined
    node = (node as Record<string, unknown>)[key]
  }
  return node
}

function scalarText(value: unknown): string {
  if (value === null || value === undefined) return ''
  // An empty object or list (flatten keeps only empty ones) as JSON writes it.
  if (isContainer(value)) return Array.isArray(value) ? '[]' : '{}'
  return typeof value === 'string' ? value : String(value)
}

// ---- JSON ----

/**
 * One pass over JSON text: whether `{`/`[` nest deeper than `limit` outside strings, and how many
 * numbers it holds (a digit or `-` outside a string that does not follow another number character).
 */
function jsonShape(text: string, limit: number): { tooDeep: boolean; numbers: number } {
  let depth = 0
  let numbers = 0
  let inString = false
  let inNumber = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92 /* \ */) i++
      else if (c === 34 /* " */) inString = false
      continue
    }
    const numeric = (c >= 48 && c <= 57) || c === 45 /* - */ || c === 43 /* + */ || c === 46 /* . */ || c === 101 || c === 69 /* e E */
    if (numeric && !inNumber && c !== 101 && c !== 69) numbers++
    inNumber = numeric
    if (c === 34) inString = true
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > limit) return { tooDeep: true, numbers }
    } else if (c === 125 /* } */ || c === 93 /* ] */) depth--
  }
  return { tooDeep: false, numbers }
}

/** A JSON object's scalars, or null when the text is not a JSON object. */
function parseJson(text: string): Leaf[] | null {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return null
  }
  if (!isContainer(value) || Array.isArray(value)) return null
  const shape = jsonShape(text, MAX_PASTE_DEPTH)
  if (shape.tooDeep) throw tooDeep()
  const leaves = flatten(value, true, text.length + 1)
  // Numbers as written (`1.10`, `1e3`, digits past 2^53), through JSON.parse source text access.
  // Only when a kept value is a number, and for a document the size of a config: the callback runs
  // for every node.
  if (shape.numbers <= 2 * MAX_KEYS && leaves.some((leaf) => typeof leaf.value === 'number')) {
    const sourced = JSON.parse(text, function (_key: string, parsed: unknown, context?: { source?: string }) {
      return typeof parsed === 'number' && typeof context?.source === 'string' ? context.source : parsed
    } as (key: string, value: unknown) => unknown)
    for (const leaf of leaves) if (typeof leaf.value === 'number') leaf.value = at(sourced, leaf.path) ?? leaf.value
  }
  return leaves
}

// ---- YAML ----

/**
 * Plain YAML scalars that the core schema reads as a number, a boolean or null. Bun's parser hands
 * those over as values (`0012` as 12, `1.10` as 1.1), not as the text pasted.
 */
const TYPED_PLAIN = /^(?:[-+]?\.?[0-9][0-9A-Za-z._+-]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)|true|True|TRUE|false|False|FALSE|null|Null|NULL|~)$/

/**
 * The text with the last scalar of simple `key: 0012` and `- 0012` lines single-quoted, so that
 * the parser keeps it as text. Lines are split by hand (no regex over a whole line); a line this
 * misreads (one inside a block scalar, say) is caught by the comparison in typedSources. Null
 * when no line changes, or more than `limit` would: reading the source text costs a second parse,
 * spent on documents the size of a config (MAX_KEYS keys), not on one of thousands of numbers.
 */
function quoteTypedScalars(text: string, limit: number): string | null {
  const lines = text.split('\n')
  let quoted = 0
  // Space and tab, by character code (charCodeAt makes no string per character).
  const blankAt = (line: string, i: number) => {
    const c = line.charCodeAt(i)
    return c === 32 || c === 9
  }
  for (let l = 0; l < lines.length; l++) {
    const line = lines[l]
    // A comment starts at a `#` after white space (a typed scalar holds neither).
    let end = line.length
    for (let hash = line.indexOf('#'); hash >= 0; hash = line.indexOf('#', hash + 1)) {
      if (hash === 0 || blankAt(line, hash - 1)) {
        end = hash
        break
      }
    }
    while (end > 0 && blankAt(line, end - 1)) end--
    // The last word: typed scalars are short, so the walk stops early (at a blank, or after 64).
    let start = end
    while (start > 0 && end - start <= 64 && !blankAt(line, start - 1)) start--
    if (start === end || start === 0 || !blankAt(line, start - 1)) continue
    let before = start
    while (before > 0 && blankAt(line, before - 1)) before--
    const marker = line.charCodeAt(before - 1)
    const isSequenceItem = marker === 45 /* - */ && (before === 1 || blankAt(line, before - 2))
    if (marker !== 58 /* : */ && !isSequenceItem) continue
    const token = line.slice(start, end)
    if (!TYPED_PLAIN.test(token)) continue
    if (++quoted > limit) return null
    lines[l] = `${line.slice(0, start)}'${token}'${line.slice(end)}`
  }
  return quoted > 0 ? lines.join('\n') : null
}

function yamlParse(text: string): unknown {
  try {
    return Bun.YAML.parse(text)
  } catch (error) {
    // The native parser refuses nesting deeper than its stack allows: too deep for us too.
    if (error instanceof RangeError) throw tooDeep()
    return undefined
  }
}

/** True when `value` is nested deeper than MAX_PASTE_DEPTH (iterative; at most `budget` nodes). */
function nestedTooDeep(value: unknown, budget: number): boolean {
  const stack: [unknown, number][] = [[value, 0]]
  let visited = 0
  while (stack.length > 0 && ++visited <= budget) {
    const [node, depth] = stack.pop()!
    if (depth > MAX_PASTE_DEPTH) return true
    for (const child of Object.values(node as object)) if (isContainer(child)) stack.push([child, depth + 1])
  }
  return false
}

/**
 * The source text of the typed scalars among `leaves`, read from the document whose typed scalars
 * were quoted: each kept string must read the same there, and each quoted token must read back as
 * the value it replaced. Null when anything differs (then the parsed values stand).
 */
function typedSources(leaves: Leaf[], quoted: unknown): Map<Leaf, string> | null {
  const sources = new Map<Leaf, string>()
  for (const leaf of leaves) {
    const other = at(quoted, leaf.path)
    if (typeof leaf.value === 'string') {
      if (other !== leaf.value) return null
    } else if (isContainer(leaf.value)) {
      if (!isContainer(other)) return null
    } else if (leaf.value !== null || other !== null) {
      // A typed scalar (`key:` with nothing written stays null in both, and empty).
      if (typeof other !== 'string' || !TYPED_PLAIN.test(other)) return null
      sources.set(leaf, other)
    }
  }
  if (sources.size === 0) return sources
  const tokens = [...sources.values()]
  const reread = yamlParse(tokens.map((token) => `- ${token}`).join('\n'))
  if (!Array.isArray(reread) || reread.length !== tokens.length) return null
  let i = 0
  for (const leaf of sources.keys()) if (!Object.is(reread[i++], leaf.value ?? null)) return null
  return sources
}

/** A YAML mapping's scalars, or null when the text is not a YAML mapping. */
function parseYaml(text: string): Leaf[] | null {
  const parsed = yamlParse(text)
  if (!isContainer(parsed) || Array.isArray(parsed)) return null
  const budget = text.length + 1
  if (nestedTooDeep(parsed, budget)) throw tooDeep()
  const leaves = flatten(parsed, false, budget)
  // `key: ~` and `key: null` are typed too; `key:` (nothing written) stays empty.
  if (leaves.some((leaf) => typeof leaf.value !== 'string' && !isContainer(leaf.value))) {
    const quoted = quoteTypedScalars(text, 2 * MAX_KEYS)
    const sources = quoted === null ? null : typedSources(leaves, yamlParse(quoted))
    if (sources) for (const [leaf, source] of sources) leaf.value = source
  }
  return leaves
}

// ---- format detection ----

/** An `.env` assignment: `KEY=…` or `export KEY=…` (anchored; each part a distinct character class). */
const ENV_ASSIGNMENT = /^(?:export[ \t]+)?[A-Za-z0-9_.-]+[ \t]*=/
/** A YAML `key:` line, optionally a list item, optionally quoted. */
const YAML_KEY_LINE = /^[ \t]*(?:-[ \t]+)?["']?[A-Za-z0-9_.-]+["']?[ \t]*:(?:[ \t]|$)/

/** True when no line is an `.env` assignment and at least one is a YAML `key:` line. */
function looksLikeYaml(text: string): boolean {
  let yaml = false
  for (const line of text.split('\n')) {
    const trimmed = line.trim()
    if (!trimmed || trimmed.startsWith('#') || trimmed === '---') continue
    if (ENV_ASSIGNMENT.test(trimmed)) return false
    if (!yaml && YAML_KEY_LINE.test(line)) yaml = true
  }
  return yaml
}

/**
 * dotenv's fast reader runs a backtracking multi-line regex over any value holding U+2028 or
 * U+2029 (seconds on a long one: one request would stall the server). Those two characters are
 * swapped for private-use characters the text does not hold before it reads, and back after; a
 * value keeps them exactly as pasted.
 */
function withoutLineSeparators(text: string): { text: string; restore: (value: string) => string } {
  if (!text.includes('\u2028') && !text.includes('\u2029')) return { text, restore: (value) => value }
  const used = new Set<number>()
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c >= 0xe000 && c <= 0xf8ff) used.add(c)
  }
  const free: string[] = []
  for (let c = 0xe000; c <= 0xf8ff && free.length < 2; c++) if (!used.has(c)) free.push(String.fromCharCode(c))
  if (free.length < 2) throw validationError('text', 'holds every private-use character and a line separator (U+2028 or U+2029)')
  const [line, paragraph] = free
  return {
    text: text.replaceAll('\u2028', line).replaceAll('\u2029', paragraph),
    restore: (value) => value.replaceAll(line, '\u2028').replaceAll(paragraph, '\u2029'),
  }
}

export type ConfigFormat = 'json' | 'yaml' | 'env'

/** The keys of a pasted config, in the order they appear. An empty list means nothing was recognised. */
export function parseConfig(input: string): { format: ConfigFormat; keys: ParsedKey[] } {
  // Not trimmed for YAML: the first line's indentation is part of the structure.
  const text = input.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n')
  const trimmed = text.trim()
  const json = trimmed.startsWith('{') ? parseJson(trimmed) : null
  if (json) return { format: 'json', keys: json.map((leaf) => ({ name: leaf.name, value: scalarText(leaf.value) })) }
  const yaml = looksLikeYaml(text) ? parseYaml(text) : null
  if (yaml) return { format: 'yaml', keys: yaml.map((leaf) => ({ name: leaf.name, value: scalarText(leaf.value) })) }
  const out = new Map<string, string>()
  const separators = withoutLineSeparators(text)
  // dotenv's own linear reader (`fast`): its default one is a regex that backtracks on `'\'\'…`.
  for (const [name, value] of Object.entries(parseDotenv(separators.text, { fast: true } as never))) {
    // dotenv's names are distinct already: past MAX_KEYS nothing more is kept.
    if (out.size >= MAX_KEYS) break
    const variable = toVariableName(name)
    if (variable) out.set(variable, separators.restore(value))
  }
  return { format: 'env', keys: [...out].map(([name, value]) => ({ name, value })) }
}
