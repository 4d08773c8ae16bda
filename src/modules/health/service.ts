// Readiness: the store is open and its data folder takes a durable write, and the master key
// still matches the data's key check. Checked at most once a second, since the checks write to
// disk and the endpoint answers anyone. Free space under SVC_DISK_FLOOR shows as `checks.disk: low`
// without making the server unready (reads and the owner's writes go on; see docs/operations.md).
import type { AppDeps } from '../../deps'
import { VERSION } from '../../version'
import type { Readiness } from './model'

const CHECK_EVERY_MS = 1000

export class HealthService {
  private last: { at: number; answer: Readiness } | undefined
  private running: Promise<Readiness> | undefined

  constructor(private readonly deps: Pick<AppDeps, 'store' | 'keyring' | 'now' | 'log'> & Partial<Pick<AppDeps, 'audit'>>) {}

  readiness(): Promise<Readiness> {
    const now = this.deps.now()
    if (this.last && now - this.last.at < CHECK_EVERY_MS && now >= this.last.at) return Promise.resolve(this.last.answer)
    this.running ??= this.check().finally(() => {
      this.running = undefined
    })
    return this.running
  }

  private async check(): Promise<Readiness> {
    // With PostgreSQL, the store is the database (its own figures are in /metrics).
    const where = this.deps.store.databaseMetrics ? 'the database' : 'the data folder'
    const store = await this.deps.store.checkWritable().then(
      () => 'ok' as const,
      (error) => {
        this.deps.log(`error: readiness: ${where} takes no writes: ${(error as Error)?.message ?? error}`)
        return 'failed' as const
      },
    )
    const masterKey = await this.deps.keyring.assertKeyCheck(this.deps.store.accounts.data.keyCheck).then(
      () => 'ok' as const,
      () => 'failed' as const,
    )
    // Low free space does not stop the vault serving; it is said here and in /metrics.
    const disk = this.deps.audit?.disk().low ? ('low' as const) : ('ok' as const)
    const checks = { store, masterKey, disk }
    const answer: Readiness =
      store === 'ok' && masterKey === 'ok'
        ? { status: 'ready', version: VERSION, checks }
        : {
            error: store !== 'ok' ? `Not ready: ${where} takes no writes` : 'Not ready: the master key does not match the data',
            code: 'NOT_READY',
            status: 'not-ready',
            version: VERSION,
            checks,
          }
    this.last = { at: this.deps.now(), answer }
    return answer
  }
}
