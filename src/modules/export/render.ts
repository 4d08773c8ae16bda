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

// Made on the first export: a collator loads ICU's collation data (about 1.4 MB resident).
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
  return `# ${oneLine(category.name)} — ${oneLine(entry.name)}${where}`
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

// Shell format (issue 14): `export NAME='value'`, for `set -a; . ./file` or `. ./file` in any
// POSIX shell. Inside single quotes a shell interprets nothing; a ' in the value ends the quotes,
// adds an escaped \' and opens them again ('\''). A name is written only when it is a shell
// identifier (a tampered group field could hold anything), and a value only without NUL, which
// no shell variable can hold.
const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** `value` single-quoted for a POSIX shell: read back exactly, never interpreted. */
export const shellQuote = (value: string) => `'${value.replaceAll("'", "'\\''")}'`

export function shellLine(name: string, value: string): string {
  if (!SHELL_NAME.test(name)) return '# a variable left out: its name is not a shell identifier'
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
