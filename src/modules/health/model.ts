import { t } from 'elysia'

export const HealthSchema = t.Object({ status: t.Literal('ok') }, { description: 'The process is alive and answering' })

const CheckResult = t.Union([t.Literal('ok'), t.Literal('failed')])
const Checks = t.Object({
  store: CheckResult,
  masterKey: CheckResult,
})

export const ReadySchema = t.Object({
  status: t.Literal('ready'),
  version: t.String({ description: 'The running release' }),
  checks: Checks,
})

export const NotReadySchema = t.Object({
  error: t.String(),
  code: t.Literal('NOT_READY'),
  status: t.Literal('not-ready'),
  version: t.String(),
  checks: Checks,
})

export type Readiness = typeof ReadySchema.static | typeof NotReadySchema.static

export const MetricsText = t.String({ description: 'Prometheus text format, version 0.0.4' })
