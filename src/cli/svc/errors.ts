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
