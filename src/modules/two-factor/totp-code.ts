// Moved to crypto/ (src/crypto/totp-code.ts): the second factor computes codes too.
export * from '../../crypto/totp-code'
