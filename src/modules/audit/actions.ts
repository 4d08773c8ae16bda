// Moved beneath auth/ (src/audit/actions.ts): the recorder and the sign-in code share it.
export * from '../../audit/actions'
