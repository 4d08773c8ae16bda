// A small argument parser: each command declares its options; `-e X`, `--env X` and `--env=X`
// all work; `--` ends the options. Unknown options are usage errors, never silently ignored.
import { usageError } from './errors'

export interface OptionSpec {
  /** Long name, without dashes. */
  name: string
  short?: string
  /** Takes a value (else a boolean flag). */
  value?: boolean
  /** May be given more than once: every value is kept, in order, in `lists`. */
  repeat?: boolean
}

export interface Parsed {
  options: Record<string, string | boolean | undefined>
  positionals: string[]
  /** Everything after `--`, or after the first positional when `stopAtPositional`. */
  rest: string[]
  /** The values of repeatable options. */
  lists: Record<string, string[]>
}

export function parseArgs(argv: string[], specs: OptionSpec[], settings: { stopAtPositional?: boolean } = {}): Parsed {
  const options: Parsed['options'] = {}
  const lists: Parsed['lists'] = {}
  const positionals: string[] = []
  const byLong = new Map(specs.map((spec) => [spec.name, spec]))
  const byShort = new Map(specs.filter((spec) => spec.short).map((spec) => [spec.short!, spec]))
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--') return { options, positionals, rest: argv.slice(i + 1), lists }
    let spec: OptionSpec | undefined
    let inline: string | undefined
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=')
      const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq)
      if (eq !== -1) inline = arg.slice(eq + 1)
      spec = byLong.get(name)
      if (!spec) throw usageError(`unknown option --${name}`)
    } else if (arg.startsWith('-') && arg.length > 1) {
      spec = byShort.get(arg[1])
      if (!spec) throw usageError(`unknown option ${arg.slice(0, 2)}`)
      if (arg.length > 2) inline = arg.slice(2)
    } else {
      if (settings.stopAtPositional) return { options, positionals, rest: argv.slice(i), lists }
      positionals.push(arg)
      continue
    }
    if (spec.value) {
      const value = inline ?? argv[++i]
      if (value === undefined) throw usageError(`--${spec.name} needs a value`)
      options[spec.name] = value
      if (spec.repeat) (lists[spec.name] ??= []).push(value)
    } else {
      if (inline !== undefined) throw usageError(`--${spec.name} takes no value`)
      options[spec.name] = true
    }
  }
  return { options, positionals, rest: [], lists }
}

export const str = (value: string | boolean | undefined): string | undefined => (typeof value === 'string' ? value : undefined)
