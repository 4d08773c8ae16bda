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
  // A re-authentication: `method` password or passkey; failed ones as outcome failed.
  'auth.reauth',
  'auth.twofa_change',
  // The second step locked for 15 minutes after 20 wrong codes within a day.
  'auth.twofa_locked',
  'auth.oidc_link',
  'auth.oidc_unlink',
  'access_key.create',
  'access_key.revoke',
  // The account itself (recorded in the server's log: the user's own log goes with the account).
  'account.delete',
  'passkey.create',
  'passkey.delete',
  // Device sign-in (svc login): the decision; the key it hands out is an access_key.create.
  'device_login.approve',
  'device_login.deny',
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
  // Tokens in from another app (one event per applied import) and out to one.
  'twofa.import',
  'twofa.export',
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
  // Version history and the trash.
  'entry.version_reveal',
  'entry.version_restore',
  'envfile.version_reveal',
  'envfile.version_restore',
  'twofa.version_reveal',
  'twofa.version_restore',
  'trash.restore',
  'trash.purge',
  'notifications.update',
  // Shared vaults (in the vault's own log; vault.delete in the deleting admin's log, the vault's goes with it).
  'vault.create',
  'vault.rename',
  'vault.delete',
  'member.role_change',
  'member.remove',
  'member.leave',
  'invite.create',
  'invite.revoke',
  'invite.accept',
  'invite.decline',
  // A project moved or copied between a personal vault and a shared one: in both vaults' logs.
  'project.move',
  'project.copy',
  // A secret of the rotation list (what a removed member read) marked rotated after its value changed.
  'rotation.mark',
  // The server found a log that no longer reaches its anchor: written by the server itself.
  'chain.broken',
] as const

export type AuditAction = (typeof AUDIT_ACTIONS)[number]
// The event's other types (outcome, actor, record) derive from its schema: ./schema.ts.

/** The actions that read a secret (the dashboard counts them). */
export const SECRET_READS: readonly AuditAction[] = [
  'entry.reveal',
  'twofa.reveal',
  'envfile.read',
  'export.read',
  'ai.extract',
  'entry.version_reveal',
  'envfile.version_reveal',
  'twofa.version_reveal',
  'twofa.export',
]
