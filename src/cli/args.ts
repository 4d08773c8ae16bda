// The operator commands' arguments (migrate, audit-verify, backup, restore), read left to right:
// an option's value as `--name value` or `--name=value` alike.

export class Args {
  private at = -1

  constructor(private readonly argv: readonly string[]) {}

  /** Moves to the next argument and answers it; undefined past the last. */
  next(): string | undefined {
    this.at++
    return this.argv[this.at]
  }

  /**
   * The value when the current argument is the option `name` (`--name value`: the value is taken
   * too, so that next() goes past it; `--name=value`); else undefined. `--name` last, without a
   * value, is not the option (the caller calls it unexpected).
   */
  value(name: string): string | undefined {
    const arg = this.argv[this.at]
    if (arg === name && this.argv[this.at + 1] !== undefined) return this.argv[++this.at]
    if (arg?.startsWith(`${name}=`)) return arg.slice(name.length + 1)
    return undefined
  }
}
