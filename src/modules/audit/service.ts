// The audit recorder lives beneath auth/ (src/audit/recorder.ts): it knows no session, the
// sign-in code records through it. Features import it from here or from there.
export * from '../../audit/recorder'
