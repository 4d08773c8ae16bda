/** A data file (document or change log) that cannot be read as one: restore from a backup. */
export class CorruptDocumentError extends Error {}
/** A deleted account's vault: nothing opens or writes it again, so nothing re-creates its files. */
export class DeletedVaultError extends Error {
  constructor() {
    super('This account was deleted')
    this.name = 'DeletedVaultError'
  }
}
/** The database is away or too slow (restart, failover, a cut network): the request answers 503 STORE_UNAVAILABLE. */
export class StoreUnavailableError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'StoreUnavailableError'
  }
}
/** Another instance wrote the document first: reload it and run the change again. */
export class VersionConflictError extends Error {
  constructor(readonly documentId: string) {
    super(`${documentId} was written by another instance first`)
    this.name = 'VersionConflictError'
  }
}
