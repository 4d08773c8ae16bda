// The layers of docs/architecture (README, "Architecture"): nothing imports upward, no cycles.
// Checked by `bun run depcruise` in .ci/run; any violation fails.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No import cycles (type-only imports count too: they tie the layers as much).',
      from: {},
      to: { circular: true },
    },
    {
      name: 'crypto-knows-no-store-or-feature',
      severity: 'error',
      comment: 'crypto/ imports no store, http, auth, feature or CLI code; master-key.ts writes its key file through store/atomic-file.',
      from: { path: '^src/crypto/', pathNot: '^src/crypto/master-key\\.ts$' },
      to: { path: '^src/(store|http|auth|modules|cli|web|audit)/' },
    },
    {
      name: 'master-key-only-atomic-file',
      severity: 'error',
      from: { path: '^src/crypto/master-key\\.ts$' },
      to: { path: '^src/(store|http|auth|modules|cli|web|audit)/', pathNot: '^src/store/atomic-file\\.ts$' },
    },
    {
      name: 'store-and-http-know-no-feature',
      severity: 'error',
      comment: 'store/ and http/ import no feature (modules/), no sign-in code (auth/) and no CLI.',
      from: { path: '^src/(store|http)/' },
      to: { path: '^src/(modules|auth|cli)/' },
    },
    {
      name: 'auth-imports-no-feature',
      severity: 'error',
      comment: 'auth/ sits below the features: it imports nothing from modules/.',
      from: { path: '^src/auth/' },
      to: { path: '^src/modules/' },
    },
    {
      name: 'route-files-import-no-route-file',
      severity: 'error',
      comment: 'A route file imports no other route file (what two share is a service, built in openVault); modules/auth/index.ts composes the /api/auth files.',
      from: { path: '^src/modules/', pathNot: '^src/modules/auth/index\\.ts$' },
      to: { path: '^src/modules/([^/]+/index|(entries|envs|two-factor)/versions|auth/(login|oidc|reauth|second-factor)|auth/device-login/index)\\.ts$' },
    },
    {
      name: 'features-load-no-page',
      severity: 'error',
      comment: 'Features and the layers below them import nothing from web/ (the page and its icon pack); the icon list they share is src/domain/icons.ts.',
      from: { path: '^src/(modules|auth|store|crypto|audit|domain)/' },
      to: { path: '^src/web/' },
    },
    {
      name: 'svc-cli-http-only',
      severity: 'error',
      comment: 'The svc CLI talks HTTP only: no store, crypto or auth code.',
      from: { path: '^src/cli/svc/' },
      to: { path: '^src/(store|crypto|auth)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
}
