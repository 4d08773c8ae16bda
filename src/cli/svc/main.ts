#!/usr/bin/env bun
// svc: the vault's secrets into programs, without copy and paste. `bun run svc -- …` runs this
// file; `bun run build:cli` compiles it into one executable, dist/svc. Every failure is one line
// on standard error and a non-zero exit code.
import { exportCommand, get, importCommand, login, logout, ls, totp, version, whoami } from './commands'
import { CliError, escapeControl, isCliError } from './errors'
import { run } from './run'
import { check, inject } from './templates'
import { signedInClient } from './commands'

const HELP = `svc: the svc-vault command line

Usage:
  svc login [URL] [--scopes "S1 S2"] [--vault NAME]
                                       sign in through the web interface (device approval); --vault:
                                       a key bound to that shared vault, used without --vault after
  svc login --key [URL]                sign in with an existing access key read from standard input
  svc logout [--keep-key]              revoke the stored key on the server, and forget it
  svc whoami                           URL, account, key name, scopes, expiry
  svc run [-e ENV] [-n NAME] [--project P --file F] [--watch] [--interval S] [--mount PATH] [--override]
          [--mask | --no-mask] [--fallback-max-age 24h] [--allow-env NAME]… [--pass-token] -- CMD ARGS…
                                       run CMD with the vault's variables in its environment; variables
                                       that load code (NODE_OPTIONS, LD_PRELOAD…) only with --allow-env,
                                       SVC_TOKEN only with --pass-token
  svc export [-e ENV] [-n NAME] [--format dotenv|bun|node|python|docker|systemd|shell|json|yaml] [-o FILE]
  svc get VAR [-e ENV] [-n NAME]       print one value
  svc inject -i TEMPLATE [-o FILE]     fill {{ svc://NAME/ENV/VAR }} references in a template
  svc check -e ENV1,ENV2 [-n NAME] [--against .env.example]
                                       list variables missing from an environment (exit 1 if any)
  svc import FILE [--apply --name N [-e ENV]]
                                       file a config's keys into categories (names only go to the model)
  svc totp [QUERY]                     current two-factor codes and seconds left
  svc ls                               categories and entries (never values)
  svc --version                        the CLI's version (and the vault's, when signed in)

run, export, get, inject, check, totp and ls take --vault NAME (or id): a shared vault instead of your personal
one (GET /api/vaults finds it; the key must be bound to it). A key bound to a shared vault goes there by itself.
ENV is development, staging or production (dev, stage, prod). SVC_URL and SVC_TOKEN override the stored sign-in
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
  inject: (argv) => inject(argv, signedInClient),
  check: (argv) => check(argv, signedInClient),
  version,
}

/** Help for one command, where it has more to say than the overview. */
const COMMAND_HELP: Record<string, string> = {
  import: `svc import FILE [--apply --name N [-e ENV]]

Files a config's variables into categories. Only the names go to the AI model (or the built-in
classifier); values are stored only with --apply. Needs a key with the scope ai:extract (and
entries:write, categories:write for --apply), which the default svc login key does not have:
sign in with svc login --scopes "ai:extract entries:write categories:write categories:read", or use
a key made on the Access keys page.
`,
  inject: `svc inject -i TEMPLATE [-o FILE]

Replaces each {{ svc://NAME/ENV/VARIABLE }} in TEMPLATE (- for standard input) with the value of
VARIABLE in the entries named NAME for environment ENV, and writes the result to FILE (mode 0600,
atomically) or standard output. An unknown reference fails, naming it, and nothing is written.
`,
  check: `svc check -e ENV1,ENV2[,…] [-n NAME] [--against TEMPLATE]

Lists the variables that one of the environments lacks and another has (or, with --against, that the
template names), one a line, and exits 1 when any is missing: a gate for CI.
`,
}

async function main(argv: string[]): Promise<void> {
  const [name, ...rest] = argv
  if (name === '--version' || name === '-V') return version(rest)
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(HELP)
    if (name === undefined) process.exitCode = 2
    return
  }
  const command = COMMANDS[name]
  if (!command) throw new CliError(`unknown command ${name} (see svc help)`, 2)
  // After run's `--` (or its command), --help belongs to the command.
  const ownArgs = name === 'run' ? rest.slice(0, rest.indexOf('--') === -1 ? rest.length : rest.indexOf('--')) : rest
  if (ownArgs[0] === '--help' || ownArgs[0] === '-h' || (name !== 'run' && rest.includes('--help')))
    return void process.stdout.write(COMMAND_HELP[name] ?? HELP)
  await command(rest)
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (isCliError(error)) {
    process.stderr.write(`svc: ${escapeControl(error.message)}\n`)
    process.exit(error.exitCode)
  }
  process.stderr.write(`svc: ${escapeControl((error as Error)?.message?.split('\n')[0] ?? String(error))}\n`)
  process.exit(1)
})
