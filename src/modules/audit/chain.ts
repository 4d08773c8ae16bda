// Moved beneath auth/ with the recorder (src/audit/chain.ts).
export * from '../../audit/chain'
