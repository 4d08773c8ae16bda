// svc inject (a template's {{ svc://project/environment/VARIABLE }} references filled from the
// vault), the svc:// values `svc run` resolves in its own environment, and svc check (which
// variables an environment lacks). <project> is the entry name that -n selects.
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { parse as parseDotenv } from 'dotenv'
import { parseArgs, str } from './args'
import type { VaultClient } from './client'
import { CliError, isCliError, usageError } from './errors'
import { writeSecretFile } from './files'
import { ENVIRONMENTS, environmentName } from './environments'
import { describeSelection, fetchExport, fetchExportText, type Selection, type Variables } from './variables'

export interface Reference {
  /** As written, for messages: svc://blog/production/DATABASE_URL */
  text: string
  project: string
  environment: string
  variable: string
}

// No nested quantifiers: linear on any input.
const REFERENCE = /\{\{[ \t]*(svc:\/\/[^/\s{}]+\/[^/\s{}]+\/[^/\s{}]+)[ \t]*\}\}/g
const BARE_REFERENCE = /^svc:\/\/([^/\s]+)\/([^/\s]+)\/([^/\s]+)$/

export function parseReference(text: string): Reference | null {
  const match = BARE_REFERENCE.exec(text)
  if (!match) return null
  const [project, environment, variable] = match.slice(1).map((part) => decodeURIComponent(part))
  return { text, project, environment: environmentName(environment), variable }
}

/** The value of each reference; every unknown one is named in one error, and nothing is returned. */
export async function resolveReferences(client: VaultClient, references: Reference[]): Promise<Map<string, string>> {
  const bySelection = new Map<string, Promise<Variables>>()
  const variablesOf = (project: string, environment: string) => {
    const key = `${project}\0${environment}`
    let pending = bySelection.get(key)
    if (!pending) {
      pending = selectionVariables(client, { name: project, environment })
      bySelection.set(key, pending)
    }
    return pending
  }
  const values = new Map<string, string>()
  const unknown: string[] = []
  for (const reference of references) {
    if (values.has(reference.text)) continue
    const variables = await variablesOf(reference.project, reference.environment)
    if (Object.hasOwn(variables, reference.variable)) values.set(reference.text, variables[reference.variable])
    else if (!unknown.includes(reference.text)) unknown.push(reference.text)
  }
  if (unknown.length) throw new CliError(`unknown reference${unknown.length === 1 ? '' : 's'}: ${unknown.join(', ')} (nothing written)`)
  return values
}

/** A selection's variables; where a name has several values (AMBIGUOUS_EXPORT) only its names are kept. */
async function selectionVariables(client: VaultClient, selection: Selection): Promise<Variables> {
  try {
    return (await fetchExport(client, selection))!.variables
  } catch (error) {
    if (!(isCliError(error) && error.message.includes('AMBIGUOUS_EXPORT'))) throw error
    return parseDotenv(await fetchExportText(client, selection))
  }
}

function readInput(path: string): string {
  try {
    return readFileSync(path === '-' ? 0 : path, 'utf8')
  } catch (error) {
    throw new CliError(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`)
  }
}

export async function inject(argv: string[], client: (vault?: string) => VaultClient): Promise<void> {
  const { options, positionals } = parseArgs(argv, [
    { name: 'in', short: 'i', value: true },
    { name: 'out', short: 'o', value: true },
    { name: 'vault', value: true },
  ])
  if (positionals.length) throw usageError(`svc inject takes no argument (${positionals[0]}): svc inject -i TEMPLATE -o FILE`)
  const input = str(options.in)
  if (input === undefined) throw usageError('svc inject needs a template: svc inject -i TEMPLATE [-o FILE] (- reads standard input)')
  const template = readInput(input)
  const references: Reference[] = []
  for (const match of template.matchAll(REFERENCE)) {
    const reference = parseReference(match[1])
    if (reference) references.push(reference)
  }
  const values = references.length ? await resolveReferences(client(str(options.vault)), references) : new Map<string, string>()
  const text = template.replace(REFERENCE, (whole, inner: string) => values.get(inner) ?? whole)
  const output = str(options.out)
  if (output === undefined) return void process.stdout.write(text)
  try {
    writeSecretFile(resolve(output), text)
  } catch (error) {
    throw new CliError(`cannot write ${output}: ${(error as Error).message}`)
  }
  process.stderr.write(`svc: wrote ${output} (${references.length} reference${references.length === 1 ? '' : 's'} filled)\n`)
}

/** `svc run`: environment values that are svc:// references, replaced by what they name. */
export async function resolveEnvironment(client: VaultClient, env: Record<string, string>): Promise<Record<string, string>> {
  const references = Object.values(env)
    .filter((value) => value.startsWith('svc://'))
    .map(parseReference)
    .filter((reference): reference is Reference => reference !== null)
  if (references.length === 0) return env
  const values = await resolveReferences(client, references)
  const resolved: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) resolved[name] = values.get(value) ?? value
  return resolved
}

export async function check(argv: string[], client: (vault?: string) => VaultClient): Promise<void> {
  const { options, positionals } = parseArgs(argv, [
    { name: 'env', short: 'e', value: true },
    { name: 'name', short: 'n', value: true },
    { name: 'against', value: true },
    { name: 'vault', value: true },
  ])
  if (positionals.length) throw usageError(`svc check takes no argument (${positionals[0]}): svc check -n NAME -e development,production`)
  const name = str(options.name)
  const listed = str(options.env)
    ?.split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map(environmentName)
  let environments = listed && listed.length ? [...new Set(listed)] : [...ENVIRONMENTS]
  for (const environment of environments) {
    if (!(ENVIRONMENTS as readonly string[]).includes(environment))
      throw usageError(`-e takes ${ENVIRONMENTS.join(', ')} (or dev, stage, prod), got ${environment}`)
  }
  const against = str(options.against)
  if (!against && (listed?.length ?? 0) < 2)
    throw usageError('svc check compares two or more environments (-e development,production), or checks against a template (--against .env.example)')
  const vault = client(str(options.vault))
  const names = new Map<string, Set<string>>()
  for (const environment of environments) names.set(environment, new Set(Object.keys(await selectionVariables(vault, { name, environment }))))
  // --against without -e: the environments that hold something are checked.
  if (!listed?.length) environments = environments.filter((environment) => names.get(environment)!.size > 0)
  if (environments.length === 0) throw new CliError(`nothing matched: ${describeSelection({ name })} holds no variable`)
  const expected = against ? Object.keys(parseDotenv(readInput(against))) : null
  // What each environment should have: the template's names, or every name any of them has.
  const wanted = expected ?? [...new Set([...names.values()].flatMap((set) => [...set]))].sort()
  const lines: string[] = []
  for (const variable of wanted) {
    const lacking = environments.filter((environment) => !names.get(environment)!.has(variable))
    if (lacking.length === 0) continue
    const having = environments.filter((environment) => names.get(environment)!.has(variable))
    const source = expected ? `in ${against}` : `in ${having.join(', ')}`
    lines.push(`${variable}: missing in ${lacking.join(', ')} (${source})`)
  }
  const scope = describeSelection({ name })
  if (lines.length) {
    process.stdout.write(lines.map((line) => `${line}\n`).join(''))
    throw new CliError(`${lines.length} variable${lines.length === 1 ? ' is' : 's are'} missing (${scope})`)
  }
  process.stderr.write(`svc: ${wanted.length} variable${wanted.length === 1 ? '' : 's'} present in ${environments.join(', ')} (${scope})\n`)
}
