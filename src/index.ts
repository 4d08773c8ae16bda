// Start-up: config, open the store, listen. Stops cleanly on SIGTERM/SIGINT.
import { createApp, openVault } from './app'
import { ConfigError, loadConfig } from './config'
import { MasterKeyMismatchError } from './crypto/keyring'
import { CorruptDocumentError } from './store/document'
import { DataDirLockedError } from './store/lock'
import { UnsupportedFormatError } from './store/store'

const log = (line: string) => console.error(line)
const EXPECTED = [ConfigError, MasterKeyMismatchError, DataDirLockedError, CorruptDocumentError, UnsupportedFormatError]

async function main() {
  const config = loadConfig()
  const deps = await openVault(config, log)
  const app = createApp(deps)
  app.listen({ port: config.port, hostname: config.host })
  const address = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${app.server!.port}`
  console.log(`svc-vault listening on ${address} (data: ${config.dataDir})`)

  let stopping = false
  const shutdown = async (signal: string) => {
    if (stopping) return
    stopping = true
    // Stop accepting, let requests in flight finish, flush every document, release the lock.
    await app.server?.stop(false)
    await deps.store.close()
    console.log(`svc-vault stopped (${signal})`)
    process.exit(0)
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))
}

main().catch((error) => {
  if (EXPECTED.some((type) => error instanceof type)) {
    console.error(`svc-vault: ${error.message}`)
  } else {
    console.error(`svc-vault: failed to start: ${error?.message ?? error}`)
  }
  process.exit(1)
})
