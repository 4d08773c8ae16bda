// Start-up: config, open the store, listen. Stops cleanly on SIGTERM/SIGINT.
import { createApp, openVault } from './app'
import { ConfigError, loadConfig } from './config'
import { MasterKeyMismatchError } from './crypto/keyring'
import { CorruptDocumentError } from './store/document'
import { DataDirLockedError } from './store/lock'
import { UnsupportedFormatError } from './store/store'
import { SchemaTooNewError } from './store/postgres/migrations'
import { VERSION } from './version'
import { createServerLog } from './log'

// The format is read before the configuration, so that a configuration error is logged in it too
// (an invalid SVC_LOG_FORMAT itself is reported as text).
const serverLog = createServerLog(process.env.SVC_LOG_FORMAT?.trim().toLowerCase() === 'json' ? 'json' : 'text')

/**
 * A second after listening, start-up is over: its compiled code (schema building, route
 * composition, the first answers) and garbage are dropped once (Bun.shrink, JavaScriptCore's
 * shrinkFootprintWhenIdle: all bytecode and JIT code, a full collection, free memory returned).
 * Functions still in use compile again on their next call (the saving: docs/performance.md).
 * Bun's types mark it deprecated, hence the guard: without it the server just keeps that memory.
 */
const SETTLE_MS = 1000

class PortInUseError extends Error {}

const EXPECTED = [PortInUseError, ConfigError, MasterKeyMismatchError, DataDirLockedError, CorruptDocumentError, UnsupportedFormatError, SchemaTooNewError]

async function main() {
  const config = loadConfig()
  let stopping = false
  let stop = async () => {}
  const shutdown = async (signal: string) => {
    if (stopping) return
    stopping = true
    await stop()
    serverLog.info(`svc-vault stopped (${signal})`)
    process.exit(0)
  }
  // Installed before anything is opened, so a signal at any moment still releases the lock.
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))

  // Text logs stay as they were, without a line per request; JSON logs get one.
  const deps = await openVault(config, serverLog.log, Date.now, config.logFormat === 'json' ? serverLog.request : undefined)
  stop = () => deps.store.close()
  const app = createApp(deps)
  try {
    // Elysia's listen sets reusePort: a second server on the same port would then start without
    // error and the kernel would split connections between two vaults. One server per port.
    app.listen({ port: config.port, hostname: config.host, reusePort: false })
  } catch (error) {
    if ((error as NodeJS.ErrnoException)?.code !== 'EADDRINUSE') throw error
    await deps.audit.close()
    await deps.store.close()
    throw new PortInUseError(`port ${config.port} on ${config.host} is already in use (another server?); stop it or set PORT to a free port`)
  }
  setTimeout(() => {
    // A collection still under way makes the shrink keep all compiled code (docs/performance.md);
    // a synchronous full collection first finishes it.
    Bun.gc(true)
    Bun.shrink?.()
  }, SETTLE_MS).unref()
  stop = async () => {
    // Stop accepting, let requests in flight finish, flush every document, release the lock.
    await app.server?.stop(false)
    await deps.audit.close()
    await deps.store.close()
  }
  const address = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${app.server!.port}`
  serverLog.info(
    `svc-vault ${VERSION} listening on ${address} (${config.databaseUrl ? `database: ${databaseName(config.databaseUrl)}` : `data: ${config.dataDir}`})`,
  )
}

/** Where a database is, for the log: host (or socket folder), port and name; never its user or password. */
function databaseName(url: string): string {
  const parsed = new URL(url)
  const host = parsed.searchParams.get('host') ?? parsed.hostname
  return `${host}${parsed.port ? `:${parsed.port}` : ''}${parsed.pathname}`
}

const USAGE = `usage: svc-vault                    start the server (configured by environment variables)
       svc-vault --version          print the version
       svc-vault healthcheck        exit 0 when the server on this machine is ready (GET /readyz)
       svc-vault backup <file> ...  the operator commands, as bun run backup, restore and
       svc-vault restore <file> ...   rotate-master-key run them from the sources (--help for each)
       svc-vault rotate-master-key [--rekey]
       svc-vault audit-verify ...   check the audit logs and their anchors (--help)
       svc-vault migrate --to postgres://…  copy the data folder into an empty database
       svc-vault migrate --to-dir DIR       copy the database into a new data folder (--help)`

const command = process.argv.slice(2)
if (command.length === 0) {
  startServer()
} else if (command[0] === '--version' && command.length === 1) {
  console.log(`svc-vault ${VERSION}`)
} else if (command[0] === 'healthcheck' && command.length === 1) {
  const { healthcheck } = await import('./healthcheck')
  process.exit(await healthcheck())
} else if (command[0] === 'backup' || command[0] === 'restore') {
  // The executable carries the operator commands too; each reads its arguments after its name.
  process.argv.splice(2, 1)
  if (command[0] === 'backup') await import('./cli/backup')
  else await import('./cli/restore')
} else if (command[0] === 'audit-verify') {
  process.argv.splice(2, 1)
  await import('./cli/audit-verify')
} else if (command[0] === 'migrate') {
  const { main: migrate } = await import('./cli/migrate')
  process.exit(await migrate(command.slice(1)))
} else if (command[0] === 'rotate-master-key') {
  const { main: rotate } = await import('./cli/rotate-master-key')
  const code = await rotate(command.slice(1))
  if (code !== 0) process.exit(code)
} else if ((command[0] === '--help' || command[0] === '-h') && command.length === 1) {
  console.log(USAGE)
} else {
  console.error(`svc-vault: unknown arguments: ${command.join(' ')}\n${USAGE}`)
  process.exit(2)
}

function startServer() {
  main().catch((error) => {
    if (EXPECTED.some((type) => error instanceof type)) {
      serverLog.fatal(`svc-vault: ${error.message}`)
    } else {
      serverLog.fatal(`svc-vault: failed to start: ${error?.message ?? error}`)
    }
    process.exit(1)
  })
}
