import { t } from 'elysia'
import { component } from '../../http/schemas'

export const HealthSchema = component('Health', t.Object({ status: t.Literal('ok') }, { description: 'The process is alive and answering' }))

const CheckResult = t.Union([t.Literal('ok'), t.Literal('failed')])
const Checks = t.Object({
  store: CheckResult,
  masterKey: CheckResult,
  disk: t.Union([t.Literal('ok'), t.Literal('low')], {
    description: '`low` while free space is under SVC_DISK_FLOOR: still ready, but events of unauthenticated clients are only counted',
  }),
})

export const ReadySchema = component(
  'Readiness',
  t.Object({
    status: t.Literal('ready'),
    version: t.String({ description: 'The running release' }),
    checks: Checks,
  }),
)

/** An error answer ({ error, code }) that also says which check failed. */
export const NotReadySchema = component(
  'NotReadyError',
  t.Object({
    error: t.String(),
    code: t.Literal('NOT_READY'),
    status: t.Literal('not-ready'),
    version: t.String(),
    checks: Checks,
  }),
)

export type Readiness = typeof ReadySchema.static | typeof NotReadySchema.static

export const MetricsText = t.String({ description: 'Prometheus text format, version 0.0.4' })
