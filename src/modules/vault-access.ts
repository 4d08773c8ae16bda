// Moved beneath auth/ (src/vault-access.ts): the second factor reads vaults too.
export * from '../vault-access'
