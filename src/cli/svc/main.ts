#!/usr/bin/env bun
// svc: the vault's secrets into programs, without copy and paste. `bun run svc -- …` runs this
// file; `bun run build:cli` compiles it into one executable, dist/svc. Every failure is one line
// on standard error and a non-zero exit code.
import { exportCommand, get, importCommand, login, logout, ls, totp, whoami } from './commands'
import { CliError, escapeControl } from './errors'
import { run } from './run'

const HELP = `svc: the svc-vault command line

Usage:
  svc login [URL] [--scopes "S1 S2"]   sign in through the web interface (device approval)
  svc login --key [URL]                sign in with an existing access key read from standard input
  svc logout [--keep-key]              revoke the stored key on the server, and forget it
  svc whoami                           URL, account, key name, scopes, expiry
  svc run [-e ENV] [-n NAME] [--project P --file F] [--watch] [--interval S] [--mount PATH] [--override]
          [--allow-env NAME]… [--pass-token] -- CMD ARGS…
                                       run CMD with the vault's variables in its environment; variables
                                       that load code (NODE_OPTIONS, LD_PRELOAD…) only with --allow-env,
                                       SVC_TOKEN only with --pass-token
  svc export [-e ENV] [-n NAME] [--format dotenv|shell|json] [-o FILE]
  svc get VAR [-e ENV] [-n NAME]       print one value
  svc import FILE [--apply --name N [-e ENV]]
                                       file a config's keys into categories (names only go to the model)
  svc totp [QUERY]                     current two-factor codes and seconds left
  svc ls                               categories and entries (never values)

ENV is development, staging or production. SVC_URL and SVC_TOKEN override the stored sign-in
(for CI). The sign-in is kept in $XDG_CONFIG_HOME/svc-vault/config.json (else ~/.config/svc-vault/).
`

const COMMANDS: Record<string, (argv: string[]) => Promise<unknown>> = {
  login,
  logout,
  whoami,
  run,
  export: exportCommand,
  get,
  import: importCommand,
  totp,
  ls,
}

async function main(argv: string[]): Promise<void> {
  const [name, ...rest] = argv
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(HELP)
    if (name === undefined) process.exitCode = 2
    return
  }
  const command = COMMANDS[name]
  if (!command) throw new CliError(`unknown command ${name} (see svc help)`, 2)
  // After run's `--` (or its command), --help belongs to the command.
  const ownArgs = name === 'run' ? rest.slice(0, rest.indexOf('--') === -1 ? rest.length : rest.indexOf('--')) : rest
  if (ownArgs[0] === '--help' || ownArgs[0] === '-h' || (name !== 'run' && rest.includes('--help'))) return void process.stdout.write(HELP)
  await command(rest)
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof CliError) {
    process.stderr.write(`svc: ${escapeControl(error.message)}\n`)
    process.exit(error.exitCode)
  }
  process.stderr.write(`svc: ${escapeControl((error as Error)?.message?.split('\n')[0] ?? String(error))}\n`)
  process.exit(1)
})
