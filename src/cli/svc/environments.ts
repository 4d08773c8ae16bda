// The three environments and their usual short forms (a module of its own: svc run's start
// needs them before the rest of the CLI is loaded).
export const ENVIRONMENTS = ['development', 'staging', 'production'] as const
const ALIASES: Record<string, string> = { dev: 'development', develop: 'development', stage: 'staging', stg: 'staging', prod: 'production', prd: 'production' }

/** development, staging or production; the usual short forms (dev, stage, prod) name them too. */
export function environmentName(raw: string): string {
  const name = raw.trim().toLowerCase()
  return ALIASES[name] ?? name
}
