// The CLI's one failure type: a message for one line of standard error, and an exit code.
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message)
  }
}

/** Wrong flags or arguments: exit 2, as most command-line tools do. */
export const usageError = (message: string) => new CliError(`${message} (see svc help)`, 2)
