/** A data file (document or change log) that cannot be read as one: restore from a backup. */
export class CorruptDocumentError extends Error {}
/** A deleted account's vault: nothing opens or writes it again, so nothing re-creates its files. */
export class DeletedVaultError extends Error {
  constructor() {
    super('This account was deleted')
    this.name = 'DeletedVaultError'
  }
}
