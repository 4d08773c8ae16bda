// The `.env` text of entries (docs/api.md, "Export").
//
// Quoting targets the `dotenv` package's parse(), which has no escape for quotes or backslashes:
// - plain values (^[A-Za-z0-9_./:@+,-]*$) are written as they are;
// - else single quotes, when the value has no ' and no carriage return (the content is taken
//   literally, several lines included; dotenv turns every \r\n or \r into \n before parsing);
// - else backticks, on the same terms with `;
// - else double quotes, with line breaks written as the escapes \n and \r (the only escapes
//   dotenv knows). This needs a value without the two-character sequences \n and \r, which
//   dotenv would turn into line breaks, and, when the value holds a ", without # and without
//   U+2028/U+2029 (dotenv then reads the line unquoted, up to the first # or line terminator,
//   and strips the outer quotes);
// - else, as a last resort, unquoted, when dotenv reads the raw text back exactly (one line,
//   no #, no surrounding whitespace, not starting with a quote);
// - else the value cannot be written so that dotenv reads it back (for instance one holding
//   ', `, " and # together, or ', ` and a literal \n): its line is left out and a comment line
//   says so, naming only the variable. The value stays available through reveal.
import type { VaultCipher } from '../../crypto/keyring'
import { isVariableName } from '../../domain/rules'
import { indexById } from '../../store/by-id'
import type { CategoryRecord, EntryRecord, VaultDocument } from '../../store/records'
import { entryValue } from '../entries/values'

const PLAIN = /^[A-Za-z0-9_./:@+,-]*$/
// What String.prototype.trim removes, and line terminators (dotenv's `^`/`$` match at those).
const EDGE_SPACE = /^\s|\s$/
const LINE_BREAK = /[\r\n\u2028\u2029]/

/** The right-hand side of `NAME=` that dotenv's parse reads back as exactly `value`; null when none does. */
export function quoteEnvValue(value: string): string | null {
  if (PLAIN.test(value)) return value
  // dotenv's quoted forms take \' \" \` as escaped quotes: a closing quote after a trailing
  // backslash may be read as one, and the value run on into the next line (a line of its own
  // ending in U+2028 lets the match end there). Such a value is written unquoted or not at all.
  if (value.endsWith('\\')) return !LINE_BREAK.test(value) && !value.includes('#') && !EDGE_SPACE.test(value) && !/^['"`]/.test(value) ? value : null
  if (!value.includes("'") && !value.includes('\r')) return `'${value}'`
  if (!value.includes('`') && !value.includes('\r')) return `\`${value}\``
  if (!/\\[nr]/.test(value) && !(value.includes('"') && /[#\u2028\u2029]/.test(value))) {
    return `"${value.replace(/\n/g, '\\n').replace(/\r/g, '\\r')}"`
  }
  if (!LINE_BREAK.test(value) && !value.includes('#') && !EDGE_SPACE.test(value) && !/^['"`]/.test(value)) return value
  return null
}

/** One `NAME=value` line, or a comment saying why the value is left out. */
export function envLine(name: string, value: string): string {
  const quoted = quoteEnvValue(value)
  if (quoted === null) return `# ${name} left out: its value cannot be written in .env form; reveal the entry to read it`
  return `${name}=${quoted}`
}

/** Names go into comment lines: a line break in one must not start a line of its own. */
const COMMENT_BREAK = /[\r\n\u2028\u2029\u0085\v\f]/
const EVERY_COMMENT_BREAK = new RegExp(COMMENT_BREAK, 'g')
const oneLine = (text: string) => (COMMENT_BREAK.test(text) ? text.replace(EVERY_COMMENT_BREAK, ' ') : text)

// Made on the first export: a collator loads ICU's collation data (docs/performance.md).
let collator: Intl.Collator | undefined
const byText = (a: string, b: string) => (collator ??= new Intl.Collator('en')).compare(a, b) || (a < b ? -1 : a > b ? 1 : 0)

interface Row {
  category: CategoryRecord
  /** The category's place in name order (equal names share one), so rows compare categories as numbers. */
  categoryRank: number
  entry: EntryRecord
}

/** An entry as the export writes it: its variables, in order, with their values. */
export interface ExportRow {
  category: CategoryRecord
  entry: EntryRecord
  variables: [name: string, value: string][]
}

/** Category name, then entry name, then environment (none first, then alphabetical). */
function compareRows(a: Row, b: Row): number {
  return (
    a.categoryRank - b.categoryRank ||
    byText(a.entry.name, b.entry.name) ||
    byText(a.entry.environment ?? '', b.entry.environment ?? '') ||
    byText(a.entry.createdAt, b.entry.createdAt)
  )
}

/** Each category's place in name order; categories of the same name share a place. */
function categoryRanks(categories: readonly CategoryRecord[]): Map<CategoryRecord, number> {
  const sorted = [...categories].sort((a, b) => byText(a.name, b.name))
  const ranks = new Map<CategoryRecord, number>()
  let rank = 0
  sorted.forEach((category, i) => {
    if (i > 0 && byText(sorted[i - 1].name, category.name) !== 0) rank++
    ranks.set(category, rank)
  })
  return ranks
}

function commentLine({ category, entry }: ExportRow): string {
  const where = entry.environment ? ` (${entry.environment})` : ''
  const line = `# ${oneLine(category.name)} — ${oneLine(entry.name)}${where}`
  // systemd continues a comment ending in a backslash onto the next line (the variable's).
  return line.endsWith('\\') ? line + ' ' : line
}

/** Group fields in the declared order, then any others in their stored order. */
function groupVariables(category: CategoryRecord, fields: Record<string, string>): [string, string][] {
  const declared = (category.fieldDefinitions ?? []).filter((name) => Object.hasOwn(fields, name))
  const variables: [string, string][] = declared.map((name) => [name, fields[name]])
  for (const name of Object.keys(fields)) if (!declared.includes(name)) variables.push([name, fields[name]])
  return variables
}

/**
 * These entries (of the vault `data`) in export order with their variables. ssh and json
 * entries, and entries whose value does not decrypt, are skipped.
 */
export function exportRows(data: VaultDocument, cipher: VaultCipher, entries: readonly EntryRecord[]): ExportRow[] {
  const categories = indexById(data.categories)
  const rows: Row[] = []
  const ranks = categoryRanks(data.categories)
  for (const entry of entries) {
    const category = categories[entry.categoryId]
    if (!category || category.keyType === 'ssh' || category.keyType === 'json') continue
    rows.push({ category, categoryRank: ranks.get(category)!, entry })
  }
  rows.sort(compareRows)
  const plaintexts = cipher.openAll(
    'entry',
    rows.map((row) => row.entry.id),
    rows.map((row) => row.entry.encryptedValue),
  )
  const out: ExportRow[] = []
  for (let i = 0; i < rows.length; i++) {
    const { category, entry } = rows[i]
    const value = entryValue(category, plaintexts[i])
    if (value === null) continue
    if (category.keyType === 'group') {
      if (typeof value === 'string') continue
      out.push({ category, entry, variables: groupVariables(category, value) })
    } else {
      if (typeof value !== 'string' || !category.envVarName) continue
      out.push({ category, entry, variables: [[category.envVarName, value]] })
    }
  }
  return out
}

/** The `.env` text of these rows: each one a comment line and its variable lines, a blank line after each. */
export function renderDotenv(rows: readonly ExportRow[]): string {
  // One string built by appending (cheap in JavaScriptCore), not an array of lines to join.
  let text = ''
  for (const row of rows) {
    text += commentLine(row) + '\n'
    for (const [name, value] of row.variables) text += envLine(name, value) + '\n'
    text += '\n'
  }
  // Lines are separated, not terminated: the last blank line's break is not sent.
  return text.slice(0, -1)
}

/** The `.env` text of these entries of the vault `data` (the export without selection rules). */
export function renderEnvExport(data: VaultDocument, cipher: VaultCipher, entries: readonly EntryRecord[]): string {
  return renderDotenv(exportRows(data, cipher, entries))
}

// Shell format: `export NAME='value'`, for `set -a; . ./file` or `. ./file` in any
// POSIX shell. Inside single quotes a shell interprets nothing; a ' in the value ends the quotes,
// adds an escaped \' and opens them again ('\''). A name is written only when it is a shell
// identifier (a tampered group field could hold anything), and a value only without NUL, which
// no shell variable can hold. A variable name (domain/rules.ts) is a shell identifier.

/** `value` single-quoted for a POSIX shell: read back exactly, never interpreted. */
export const shellQuote = (value: string) => `'${value.replaceAll("'", "'\\''")}'`

export function shellLine(name: string, value: string): string {
  if (!isVariableName(name)) return '# a variable left out: its name is not a shell identifier'
  if (value.includes('\0')) return `# ${name} left out: its value holds a NUL character, which a shell variable cannot hold; reveal the entry to read it`
  return `export ${name}=${shellQuote(value)}`
}

/** The shell text of these rows: the .env layout with `export NAME='value'` lines. */
export function renderShell(rows: readonly ExportRow[]): string {
  let text = ''
  for (const row of rows) {
    text += commentLine(row) + '\n'
    for (const [name, value] of row.variables) text += shellLine(name, value) + '\n'
    text += '\n'
  }
  return text.slice(0, -1)
}

/**
 * The JSON object of these rows, variable name to value, in export order. Written by hand so
 * that a field named __proto__ stays an ordinary member. The caller makes names unique.
 */
export function renderJson(rows: readonly ExportRow[]): string {
  const members: string[] = []
  for (const row of rows) for (const [name, value] of row.variables) members.push(`${JSON.stringify(name)}:${JSON.stringify(value)}`)
  return `{${members.join(',')}}`
}

// ---------------------------------------------------------------- one format per reader
//
// Each writer answers the text its reader turns back into exactly `value`, or a Refusal saying why
// none does. The grammars, and what each cannot carry, are in docs/export.md; test/modules/
// export-readers.test.ts reads every format back with the real program.

/** Why a format cannot carry a value (a sentence fragment: "holds a line break"). */
export interface Refusal {
  refused: string
}
const refuse = (refused: string): Refusal => ({ refused })
export const isRefusal = (value: string | Refusal): value is Refusal => typeof value !== 'string'

/** Written to a text file as UTF-8, an unpaired surrogate would arrive as U+FFFD. */
const notText = (value: string) => (value.isWellFormed() ? null : refuse('holds an unpaired UTF-16 surrogate, which UTF-8 text cannot hold'))
/** A process environment ends a value at its first NUL. */
const notEnvironment = (value: string) =>
  notText(value) ?? (value.includes('\0') ? refuse('holds a NUL character, which an environment variable cannot hold') : null)

/** The dotenv writer (npm dotenv's parse), as a refusal instead of a left-out line. */
export function dotenvValue(value: string): string | Refusal {
  const bad = notText(value)
  if (bad) return bad
  return (
    quoteEnvValue(value) ??
    refuse(
      value.endsWith('\\')
        ? 'ends with a backslash and holds a line break, #, a leading quote or surrounding blanks, which no dotenv quoting keeps'
        : 'holds \', ` and " together with # or the two characters \\n or \\r, which no dotenv quoting keeps',
    )
  )
}

// Bun (src/env_loader.zig; Bun 1.4 as installed): a quoted value runs to the first quote of its
// kind (a backslash makes the scan skip the next byte; source versions also ask that blanks up to
// a line break follow it: the writer puts its quote last, which satisfies both). Inside double
// quotes \n and \r are escapes and every other backslash stays with its character; a raw CR
// becomes LF in any quotes. Then every value, single-quoted too, expands $NAME and ${NAME}: \$
// keeps a $ (the last byte of a value is never looked at). The writer escapes the $s and keeps the
// first candidate that this grammar, replayed here byte for byte, reads back exactly.
const BUN_BLANK = new Set([0x09, 0x0b, 0x0c, 0x20, 0xa0, 0x0a, 0x0d])
const encoder = new TextEncoder()

/** The value of a quoted `src` (quote first, the line break after the closing quote); null unless that quote closes it last. */
function bunQuoted(src: Uint8Array, quote: number): number[] | null {
  let end = 1
  while (end < src.length && src[end] !== quote) end += src[end] === 0x5c ? 2 : 1
  // The closing quote must be the written text's last byte, right before the line break.
  if (end !== src.length - 2) return null
  end++
  const out: number[] = []
  for (let i = 0; i < end; ) {
    const b = src[i]
    if (b === 0x5c && quote === 0x22) {
      const next = src[i + 1]
      if (next === 0x6e) out.push(0x0a)
      else if (next === 0x72) out.push(0x0d)
      else out.push(b, next)
      i += 2
    } else if (b === 0x0d) {
      i++
      if (i >= end || src[i] !== 0x0a) out.push(0x0a)
    } else {
      out.push(b)
      i++
    }
  }
  return out.slice(1, -1)
}

/** The bytes Bun's parser takes for the value written as `written` (before $ expansion). */
function bunReads(written: string): Uint8Array {
  const src = encoder.encode(written + '\n')
  let pos = 0
  while (pos < src.length && BUN_BLANK.has(src[pos])) pos++
  if (pos < src.length && (src[pos] === 0x27 || src[pos] === 0x22 || src[pos] === 0x60)) {
    // A value starting with a quote is the writer's quoting, or not written at all.
    const quoted = pos === 0 ? bunQuoted(src, src[pos]) : null
    return quoted ? Uint8Array.from(quoted) : new Uint8Array([0xff])
  }
  let end = 0
  while (end < src.length && src[end] !== 0x23 && src[end] !== 0x0d && src[end] !== 0x0a) end++
  let start = 0
  while (start < end && BUN_BLANK.has(src[start])) start++
  while (end > start && BUN_BLANK.has(src[end - 1])) end--
  return src.subarray(start, end)
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((byte, i) => byte === b[i])

export function bunValue(value: string): string | Refusal {
  const bad = notEnvironment(value)
  if (bad) return bad
  if (PLAIN.test(value)) return value
  // Every $ gets its backslash, but a last one not after a backslash (Bun never starts an
  // expansion at the last byte, yet reads a \$ ending there as an escaped $); expansion then
  // removes exactly those backslashes.
  const escaped = value.replace(/\$(?!$)|(?<=\\)\$$/g, '\\$')
  const want = encoder.encode(escaped)
  const candidates = [`'${escaped}'`, `\`${escaped}\``, `"${escaped.replace(/\n/g, '\\n').replace(/\r/g, '\\r')}"`, escaped]
  for (const written of candidates) if (sameBytes(bunReads(written), want)) return written
  if (value.endsWith('\\'))
    return refuse('ends with a backslash, which Bun keeps only unquoted, and holds a line break, #, surrounding blanks or a leading quote')
  if (value.includes('\r')) return refuse('holds a carriage return, which Bun keeps only in double quotes, together with " or a backslash escape')
  return refuse('holds \', ` and " together with a line break, #, a backslash escape or surrounding blanks, which no Bun quoting keeps')
}

// node --env-file (src/node_dotenv.cc): every CR of the file is dropped; a quoted value runs to
// the next quote of its kind, taken literally (line breaks included), except that inside double
// quotes the two characters \n become a line break; an unquoted one ends at # and is trimmed.
export function nodeValue(value: string): string | Refusal {
  const bad = notEnvironment(value)
  if (bad) return bad
  if (value.includes('\r')) return refuse('holds a carriage return, which node --env-file drops from the whole file')
  if (PLAIN.test(value)) return value
  if (!value.includes("'")) return `'${value}'`
  if (!value.includes('`')) return `\`${value}\``
  if (!value.includes('"') && !value.includes('\\n')) return `"${value}"`
  if (!LINE_BREAK.test(value) && !value.includes('#') && !/^[\s'"`]|\s$/.test(value)) return value
  return refuse('holds \', ` and " together with a line break, # or surrounding blanks, which no node --env-file quoting keeps')
}

// python-dotenv (parser.py, its defaults): single quotes know the escapes \\ and \'; double
// quotes \\ \' \" \a \b \f \n \r \t \v; an unquoted value ends at blanks then # and is trimmed.
// The file is read with universal newlines (a raw CR becomes LF), and every value, single-quoted
// too, has ${NAME} and ${NAME:-default} expanded, with no escape for it.
const PYTHON_VARIABLE = /\$\{[^}:]*(?::-[^}]*)?\}/
/** Python's str.strip() removes these too (blanks, and the separators \x1c-\x1f, \x85). */
const PYTHON_EDGE = /^[\s\x1c-\x1f\x85'"]|[\s\x1c-\x1f\x85]$/

export function pythonValue(value: string): string | Refusal {
  const bad = notEnvironment(value)
  if (bad) return bad
  if (PYTHON_VARIABLE.test(value)) return refuse('holds ${…}, which python-dotenv expands even inside single quotes')
  if (PLAIN.test(value)) return value
  // A written value ending in a backslash would escape its closing quote.
  if (!value.endsWith('\\')) {
    if (!value.includes('\r')) return `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`
    return `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n').replaceAll('\r', '\\r')}"`
  }
  if (!/[\r\n#]/.test(value) && !PYTHON_EDGE.test(value)) return value
  return refuse('ends with a backslash and holds a line break, # or surrounding blanks, which no python-dotenv quoting keeps')
}

// docker run --env-file (docker/cli opts/envfile.go): each line after the first = is the value,
// taken literally: no quotes, no escapes, no line breaks; lines are read with a 64 KiB limit.
export function dockerValue(value: string, name = ''): string | Refusal {
  const bad = notEnvironment(value)
  if (bad) return bad
  if (/[\r\n]/.test(value)) return refuse('holds a line break, which a docker env file cannot hold (one line per variable, no quotes)')
  if (encoder.encode(value).length + name.length + 1 >= 64 * 1024) return refuse('is longer than the 64 KiB line docker reads')
  return value
}

// systemd EnvironmentFile= (src/basic/env-file.c): single quotes are literal; inside double quotes
// \ escapes " \ ` $ (and a backslash-newline is removed). Values may hold line breaks (systemd 240+).
export function systemdValue(value: string): string | Refusal {
  const bad = notEnvironment(value)
  if (bad) return bad
  if (PLAIN.test(value)) return value
  if (!value.includes("'") && !value.includes('\\')) return `'${value}'`
  return `"${value.replace(/[\\"`$]/g, (c) => `\\${c}`)}"`
}

/** The shell writer as a refusal instead of a left-out line. */
export function shellValue(value: string, name = 'X'): string | Refusal {
  const bad = notEnvironment(value)
  if (bad) return bad
  if (!isVariableName(name)) return refuse('has a name that is not a shell identifier')
  return shellQuote(value)
}

// YAML: a double-quoted scalar; everything outside YAML's printable set, and the characters some
// parsers take for line breaks or a byte order mark, as escapes.
const YAML_ESCAPE = /[\\"\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]/g
const YAML_UNPRINTABLE = /[\x00-\x08\x0b-\x1f\x7f-\x84\x86-\x9f\ufeff\ufffe\uffff]/g
export function yamlQuote(value: string): string {
  return `"${value.replace(YAML_ESCAPE, (c) => (c === '\\' || c === '"' ? `\\${c}` : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`))}"`
}
export function yamlValue(value: string): string | Refusal {
  return notText(value) ?? yamlQuote(value)
}

/** The .env-style text of these rows, each variable's right-hand side written by `write`. */
export function renderWith(rows: readonly ExportRow[], write: (value: string, name: string) => string | Refusal, prefix = ''): string {
  let text = ''
  for (const row of rows) {
    text += commentLine(row) + '\n'
    for (const [name, value] of row.variables) {
      const written = write(value, name)
      // The service refuses before rendering; this only guards against a caller that did not.
      if (isRefusal(written)) throw new Error(`${name} cannot be written`)
      text += `${prefix}${name}=${written}\n`
    }
    text += '\n'
  }
  return text.slice(0, -1)
}

/** A Kubernetes Secret holding the variables as stringData (kubectl apply -f). */
export function renderYaml(rows: readonly ExportRow[]): string {
  let text = 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: svc-export\ntype: Opaque\nstringData:'
  let any = false
  for (const row of rows) {
    // A YAML stream holds printable characters only, comments included.
    text += `\n  ${commentLine(row).toWellFormed().replace(YAML_UNPRINTABLE, ' ')}`
    for (const [name, value] of row.variables) {
      text += `\n  ${yamlQuote(name)}: ${yamlQuote(value)}`
      any = true
    }
  }
  return text + (any ? '\n' : ' {}\n')
}
