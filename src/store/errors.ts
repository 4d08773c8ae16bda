/** A data file (document or change log) that cannot be read as one: restore from a backup. */
export class CorruptDocumentError extends Error {}
