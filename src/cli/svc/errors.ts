// The CLI's one failure type: a message for one line of standard error, and an exit code.
// Recognised by its fields, not by instanceof: a bundle may hold two copies of this class.
export class CliError extends Error {
  readonly cliError = true
  /** The vault's HTTP status, when the failure is its answer. */
  status: number | undefined
  constructor(
    message: string,
    readonly exitCode = 1,
    /** The vault could not be reached at all (no answer, or a proxy's 502/503/504). */
    readonly unreachable = false,
  ) {
    super(message)
  }
}

export const isCliError = (error: unknown): error is CliError =>
  typeof error === 'object' && error !== null && (error as { cliError?: unknown }).cliError === true && typeof (error as CliError).exitCode === 'number'

/** Wrong flags or arguments: exit 2, as most command-line tools do. */
export const usageError = (message: string) => new CliError(`${message} (see svc help)`, 2)

// Text from the vault (names, values, error messages) may hold terminal escapes: ESC sequences
// that move the cursor, rewrite earlier lines or write the clipboard (OSC 52), and bidi controls
// that reorder what is shown. On a terminal they are shown escaped, never obeyed.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g
const CONTROL_BUT_NEWLINE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g

const escapeOne = (char: string) => {
  const code = char.charCodeAt(0)
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
}

/** One name or value for a terminal: every control character escaped (\x1b, \x0a, \u202e). */
export const escapeControl = (text: string) => text.replace(CONTROL, escapeOne)

/** Lines of output for a terminal: control characters escaped, line breaks kept. */
export const printable = (text: string) => text.replace(CONTROL_BUT_NEWLINE, escapeOne)
