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

function commentLine({ category, entry }: Row): string {
  const where = entry.environment ? ` (${entry.environment})` : ''
  return `# ${oneLine(category.name)} — ${oneLine(entry.name)}${where}`
}

/** Group fields in the declared order, then any others in their stored order; one line each. */
function groupLines(category: CategoryRecord, fields: Record<string, string>): string {
  const declared = (category.fieldDefinitions ?? []).filter((name) => Object.hasOwn(fields, name))
  let text = ''
  for (const name of declared) text += envLine(name, fields[name]) + '\n'
  for (const name of Object.keys(fields)) if (!declared.includes(name)) text += envLine(name, fields[name]) + '\n'
  return text
}

/**
 * The `.env` text of these entries (of the vault `data`): each one a comment line and its
 * variable lines, a blank line after each. ssh and json entries, and entries whose value does
 * not decrypt, are skipped.
 */
export function renderEnvExport(data: VaultDocument, cipher: VaultCipher, entries: readonly EntryRecord[]): string {
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
  // One string built by appending (cheap in JavaScriptCore), not an array of lines to join.
  let text = ''
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]
    const value = entryValue(row.category, plaintexts[i])
    if (value === null) continue
    let variables: string
    if (row.category.keyType === 'group') {
      if (typeof value === 'string') continue
      variables = groupLines(row.category, value)
    } else {
      if (typeof value !== 'string' || !row.category.envVarName) continue
      variables = envLine(row.category.envVarName, value) + '\n'
    }
    text += commentLine(row) + '\n' + variables + '\n'
  }
  // Lines are separated, not terminated: the last blank line's break is not sent.
  return text.slice(0, -1)
}
