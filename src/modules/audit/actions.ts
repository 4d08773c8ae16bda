// The audit log's actions, free of any framework: the web page imports them too.

/** Every action an event can name, `<kind>.<verb>`. */
export const AUDIT_ACTIONS = [
  // Sign-in and the account. `method` in details: password, oidc, passkey, 2fa.
  'auth.register',
  'auth.login',
  'auth.login_failed',
  'auth.logout',
  'auth.session_end',
  'auth.password_change',
  'auth.twofa_change',
  'auth.oidc_link',
  'auth.oidc_unlink',
  'access_key.create',
  'access_key.revoke',
  // A valid access key without the scope (or on a session-only endpoint).
  'scope.denied',
  'category.create',
  'category.update',
  'category.delete',
  'entry.create',
  'entry.update',
  'entry.delete',
  'entry.reveal',
  'twofa.create',
  'twofa.update',
  'twofa.delete',
  'twofa.reveal',
  'envproject.create',
  'envproject.update',
  'envproject.delete',
  'envfile.create',
  'envfile.update',
  'envfile.delete',
  'envfile.read',
  'export.read',
  'ai.extract',
  'ai.import',
] as const

export type AuditAction = (typeof AUDIT_ACTIONS)[number]
export type AuditOutcome = 'ok' | 'denied' | 'failed'

/** The actions that read a secret (the dashboard counts them). */
export const SECRET_READS: readonly AuditAction[] = ['entry.reveal', 'twofa.reveal', 'envfile.read', 'export.read', 'ai.extract']
