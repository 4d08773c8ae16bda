// The scopes an access key can hold (docs/api.md, "Scopes").
export const SCOPES = [
  'categories:read',
  'categories:write',
  'entries:read',
  'entries:write',
  'entries:reveal',
  '2fa:read',
  '2fa:write',
  '2fa:reveal',
  'stats:read',
  'export:read',
  'ai:extract',
  'envs:read',
  'envs:write',
  'envs:reveal',
  // Reading the audit log (GET /api/audit, /api/audit/export).
  'audit:read',
] as const

export type Scope = (typeof SCOPES)[number]

const KNOWN = new Set<string>(SCOPES)
export const isScope = (value: string): value is Scope => KNOWN.has(value)
