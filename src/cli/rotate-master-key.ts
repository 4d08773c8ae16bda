// `bun run rotate-master-key`: re-wraps every vault's data key, and the accounts key check, under a
// new master key. Records are not re-encrypted: their data keys stay the same, only the envelope
// around each data key changes. The server must be stopped (the data folder lock says so).
//
// Crash safety. The run can die at any point and be run again to finish; at no point can a server
// start and serve vaults whose data keys it cannot open:
//   0. Check everything before writing anything: the key check and every vault's data key must
//      open with the current key (or, when resuming, already with the new one).
//   1. Make the new key durable before any data depends on it: <data>/master.key.new (0600) when
//      the key lives in the data folder; else it is printed now, with how to resume.
//   2. Set the accounts key check to a marker no key passes: from here a server refuses to start
//      with either key, saying a rotation was interrupted (never "starts, then every reveal 404s").
//   3. Re-wrap each vault file, one atomic write each. Each vault opens with the old or the new
//      key, so a re-run knows which is which and re-wraps only what is left.
//   4. master.key.new is renamed over master.key (one atomic rename: the old key stays in
//      master.key until every data key opens with the new one).
//   5. The key check under the new key: the data folder is consistent again and a server starts.
// A re-run after a crash takes the new key from master.key.new (or SVC_NEW_MASTER_KEY, which the
// run printed) and finishes the steps; after step 4 it simply rotates once more from master.key.
//
// `--rekey` (for a master key that may have been exposed). Re-wrapping keeps each vault's
// data key, so an exposed old master key and a copy of an old vault file would still open what is
// written after the rotation. With --rekey, step 3 gives each vault a new random data key and seals
// every record (entries, two-factor secrets, env files) again under it, in the same single atomic
// write as the new wrapped key: a vault is either all old (opens with the old master key) or all
// new (opens with the new one), so a re-run finishes exactly the vaults left. The in-progress
// marker says a re-key was under way, so a re-run continues it even without the flag.
//
// With SVC_DATABASE_URL (or SVC_DATABASE_URL_FILE) the same steps run on the database: the key
// comes from SVC_MASTER_KEY(_FILE) and the new one from SVC_NEW_MASTER_KEY or is printed (no key
// file), every instance must be stopped (another session on the database makes this refuse: it
// has no lock file), each vault's re-key is one transaction, and a re-keyed vault's earlier
// change rows are dropped (PgDocument.compact) as the file store folds its change log.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, loadConfig, parseMasterKey } from '../config'
import { KEY_CHECK_REKEYING, KEY_CHECK_ROTATING, Keyring, MasterKeyMismatchError, type SecretKind, type VaultRekey } from '../crypto/keyring'
import { generateMasterKeyBase64, MASTER_KEY_FILE, readMasterKeyFile, replaceMasterKeyFile, writeMasterKeyFile } from '../crypto/master-key'
import type { StoredDocument } from '../store/data-store'
import { StoreUnavailableError } from '../store/errors'
import { assertAlone, TOOL_CONNECT_TIMEOUT_MS } from '../store/postgres/bundle'
import { PgStore } from '../store/postgres/store'
import { SchemaTooNewError } from '../store/postgres/migrations'
import { Progress } from './progress'
import { DataDirLockedError } from '../store/lock'
import type { AccountsDocument, VaultDocument } from '../store/records'
import { ACCOUNTS_FILE, Store, UnsupportedFormatError } from '../store/store'
import { BackupError } from '../store/backup'
import { CorruptDocumentError } from '../store/document'

export const STAGED_KEY_FILE = 'master.key.new'

class RotationError extends Error {}

const say = (line: string) => console.log(line)

function opensWith(ring: Keyring, userId: string, wrapped: string): boolean {
  try {
    ring.rewrapDataKey(userId, wrapped, ring)
    return true
  } catch {
    return false
  }
}

async function keyCheckOpens(ring: Keyring, check: string): Promise<boolean> {
  try {
    await ring.assertKeyCheck(check)
    return true
  } catch {
    return false
  }
}

/** A vault document of either store, with its way to keep only the current ciphertexts. */
type VaultDoc = StoredDocument<VaultDocument> & ({ fold(): Promise<void> } | { compact(): Promise<void> })

/**
 * Every sealed field of a vault moved to its new data key, in one atomic write with that key: the
 * records, their earlier values (history), what is in the trash and the webhook secret. A field
 * that did not open under the old data key (it answered 404 already) is left as it was. Returns
 * how many were left.
 */
async function rekeyVault(doc: VaultDoc, userId: string, rekey: VaultRekey): Promise<number> {
  let unopened = 0
  const moved =
    <R extends { id: string }, F extends keyof R>(kind: SecretKind, field: F) =>
    (record: R): R => {
      const sealed = rekey.reseal(kind, record.id, record[field] as string)
      if (sealed === null) unopened++
      // Stored records are frozen: each is replaced, never changed in place.
      return sealed === null ? record : { ...record, [field]: sealed }
    }
  // The records sealed again (those that opened), to replace the stored ones.
  const resealed = <R extends { id: string }>(records: readonly R[], reseal: (record: R) => R) => records.map(reseal).filter((next, i) => next !== records[i])
  await doc.update((data, write) => {
    write.set('dataKey', rekey.wrapped)
    write.entries.replaceMany(resealed(data.entries, moved('entry', 'encryptedValue')))
    write.twoFactor.replaceMany(resealed(data.twoFactor, moved('totp', 'encryptedSecret')))
    write.envFiles.replaceMany(resealed(data.envFiles, moved('envfile', 'encryptedContent')))
    write.versions.replaceMany(
      resealed(data.versions ?? [], (record) => {
        const sealed = rekey.resealVersion(record.kind, record.recordId, record.version, record.encryptedValue)
        if (sealed === null) unopened++
        return sealed === null ? record : { ...record, encryptedValue: sealed }
      }),
    )
    // A trashed record keeps its sealed value as it was (restore puts it back): sealed again too.
    write.trash.replaceMany(
      resealed(data.trash ?? [], (item) => {
        const entries = item.entries.map(moved('entry', 'encryptedValue'))
        const twoFactor = item.twoFactor.map(moved('totp', 'encryptedSecret'))
        const envFiles = item.envFiles.map(moved('envfile', 'encryptedContent'))
        const changed = [entries, twoFactor, envFiles].some((list, i) =>
          list.some((record, j) => record !== [item.entries, item.twoFactor, item.envFiles][i][j]),
        )
        return changed ? { ...item, entries, twoFactor, envFiles } : item
      }),
    )
    const webhook = data.notifications?.encryptedSecret
    if (webhook) {
      const sealed = rekey.reseal('webhook', userId, webhook)
      if (sealed === null) unopened++
      else write.set('notifications', { ...data.notifications!, encryptedSecret: sealed })
    }
  })
  // The file itself then holds only the new ciphertexts (not the old ones plus a change log); in
  // the database, the snapshot without the earlier change rows.
  if ('fold' in doc) await doc.fold()
  else await doc.compact()
  return unopened
}

/** A user's sign-in 2FA secret (enabled or pending) moved to the vault's new data key. */
async function rekeyAccountSecret(accounts: StoredDocument<AccountsDocument>, userId: string, rekey: VaultRekey): Promise<number> {
  const user = accounts.data.users.find((u) => u.id === userId)
  if (!user || (!user.twoFactor && !user.twoFactorPending)) return 0
  let unopened = 0
  const move = (sealed: string) => {
    const next = rekey.reseal('account-totp', userId, sealed)
    if (next === null) unopened++
    return next ?? sealed
  }
  await accounts.update((data, write) => {
    const current = data.users.find((u) => u.id === userId)
    if (!current) return
    write.users.replace({
      ...current,
      ...(current.twoFactor ? { twoFactor: { ...current.twoFactor, encryptedSecret: move(current.twoFactor.encryptedSecret) } } : {}),
      ...(current.twoFactorPending
        ? { twoFactorPending: { ...current.twoFactorPending, encryptedSecret: move(current.twoFactorPending.encryptedSecret) } }
        : {}),
    })
  })
  return unopened
}

export interface RotateOptions {
  /** New data keys and every record sealed again (`--rekey`). */
  rekey?: boolean
}

export async function rotateMasterKey(env: Record<string, string | undefined> = process.env, options: RotateOptions = {}): Promise<void> {
  const config = loadConfig(env)
  const keyPath = join(config.dataDir, MASTER_KEY_FILE)
  const stagedPath = join(config.dataDir, STAGED_KEY_FILE)
  const onDatabase = config.databaseUrl !== undefined
  if (!onDatabase && !existsSync(join(config.dataDir, ACCOUNTS_FILE))) {
    throw new RotationError(`no svc-vault data in ${config.dataDir} (set SVC_DATA_DIR): nothing to rotate`)
  }

  const createKeyCheck = () => {
    throw new RotationError(onDatabase ? 'the database holds no svc-vault data (no accounts document): nothing to rotate' : 'accounts document missing')
  }
  // Locks the data folder for the whole run: a running server makes this refuse (DataDirLockedError).
  // A database has no lock: one connection of ours, and no other session (a running instance) allowed.
  const store = onDatabase
    ? await PgStore.open(config.databaseUrl!, { createKeyCheck, readOnly: true, max: 1, timeoutMs: 10 * 60_000, connectTimeoutMs: TOOL_CONNECT_TIMEOUT_MS })
    : await Store.open(config.dataDir, { createKeyCheck })
  const where = onDatabase ? 'the database' : config.dataDir
  try {
    if (store instanceof PgStore) await assertAlone(store.db, 'rotating the master key')
    const keyInFile = config.masterKey === undefined
    // Where the operator keeps the key when it is not <data>/master.key.
    const keyFile = env.SVC_MASTER_KEY_FILE?.trim()
    const keyHome = keyFile ? `the file SVC_MASTER_KEY_FILE names (${keyFile})` : 'SVC_MASTER_KEY'
    const oldKey = config.masterKey ?? readMasterKeyFile(keyPath)
    if (!oldKey) throw new RotationError(`SVC_MASTER_KEY is not set and ${keyPath} does not exist: no current master key`)
    if (!keyInFile && existsSync(stagedPath)) {
      throw new RotationError(
        `${stagedPath} is left from an interrupted rotation of the key in ${MASTER_KEY_FILE}; unset SVC_MASTER_KEY and run again to finish it`,
      )
    }

    const staged = keyInFile ? readMasterKeyFile(stagedPath) : null
    const requested = env.SVC_NEW_MASTER_KEY ? parseMasterKey(env.SVC_NEW_MASTER_KEY, 'SVC_NEW_MASTER_KEY') : null
    if (staged && requested && !Buffer.from(staged).equals(Buffer.from(requested))) {
      throw new RotationError(`SVC_NEW_MASTER_KEY differs from the key staged in ${stagedPath} by an interrupted rotation; unset it to finish that rotation`)
    }
    const generated = !staged && !requested
    const newKey = staged ?? requested ?? parseMasterKey(generateMasterKeyBase64())
    if (Buffer.from(newKey).equals(Buffer.from(oldKey))) throw new RotationError('the new master key is the current one')
    const oldRing = new Keyring(oldKey)
    const newRing = new Keyring(newKey)

    // 0. Verify every wrapped key before writing anything.
    const check = store.accounts.data.keyCheck
    if (check === KEY_CHECK_ROTATING && options.rekey) {
      throw new RotationError('a rotation without --rekey was interrupted: run `bun run rotate-master-key` (without --rekey) to finish it first, then --rekey')
    }
    // An interrupted re-key is finished as one, with or without the flag.
    const rekey = options.rekey === true || check === KEY_CHECK_REKEYING
    if (rekey && !options.rekey) say('svc-vault: an interrupted --rekey is under way; finishing it as a re-key')
    const resuming = check === KEY_CHECK_ROTATING || check === KEY_CHECK_REKEYING || (await keyCheckOpens(newRing, check))
    if (!resuming && !(await keyCheckOpens(oldRing, check))) {
      throw new MasterKeyMismatchError(
        `the current master key does not match the data in ${onDatabase ? 'the database' : 'the data folder'}; nothing was changed`,
      )
    }
    const vaults: { doc: VaultDoc; userId: string; rewrapped: string | null }[] = []
    const unopened: string[] = []
    for (const userId of await store.vaultIds()) {
      const doc = await store.vault(userId, () => {
        throw new RotationError(`vault ${userId} vanished`)
      })
      const wrapped = doc.data.dataKey
      // With --rekey the vault is moved in step 3; `rewrapped` just marks it as still to do.
      if (opensWith(oldRing, userId, wrapped)) vaults.push({ doc, userId, rewrapped: rekey ? wrapped : oldRing.rewrapDataKey(userId, wrapped, newRing) })
      else if (opensWith(newRing, userId, wrapped)) vaults.push({ doc, userId, rewrapped: null })
      else unopened.push(userId)
    }
    if (unopened.length > 0) {
      throw new RotationError(
        `the data key of ${unopened.length} vault(s) (${unopened.join(', ')}) opens with neither the current nor the new master key` +
          (generated ? ' (an interrupted rotation? run again with SVC_NEW_MASTER_KEY set to the key it printed)' : '') +
          '; nothing was changed',
      )
    }
    const todo = vaults.filter((v) => v.rewrapped !== null).length
    say(
      rekey
        ? `svc-vault: rotating the master key of ${where} with new data keys: ${vaults.length} vault(s), ${todo} to re-key`
        : `svc-vault: rotating the master key of ${where}: ${vaults.length} vault(s), ${todo} to re-wrap`,
    )

    // 1. The new key is durable (or in the operator's hands) before any data needs it.
    if (keyInFile) {
      if (!staged) writeMasterKeyFile(stagedPath, newKey)
    } else if (generated) {
      say('New master key (shown this once; store it now):')
      say(Buffer.from(newKey).toString('base64'))
      say('If this run is interrupted, run it again with SVC_MASTER_KEY set to the old key and SVC_NEW_MASTER_KEY to this one.')
    }

    // 2. No server starts on a half-rotated folder.
    await store.accounts.update((data, write) => {
      write.set('keyCheck', rekey ? KEY_CHECK_REKEYING : KEY_CHECK_ROTATING)
      // Lines of the audit logs keyed under the old master key still verify (docs/audit.md).
      write.set('auditKeys', oldRing.rewrapAuditKeys(data.auditKeys ?? [], newRing))
    })

    // 3. One atomic write per vault. The progress counts sealed records (a re-key seals each again).
    let unreadable = 0
    const sealed = (data: VaultDocument) => (rekey ? data.entries.length + data.twoFactor.length + data.envFiles.length : 0) + 1
    const progress = new Progress({
      label: rekey ? 'rekey' : 'rotate',
      total: vaults.reduce((sum, v) => sum + (v.rewrapped === null ? 0 : sealed(v.doc.data)), 0),
      log: say,
    })
    try {
      for (const vault of vaults) {
        if (vault.rewrapped === null) continue
        const count = sealed(vault.doc.data)
        if (rekey) {
          const moved = oldRing.rekeyVault(vault.userId, vault.doc.data.dataKey, newRing)
          unreadable += await rekeyVault(vault.doc, vault.userId, moved)
          // The user's sign-in 2FA secret is sealed by the vault's data key too, and kept in the
          // accounts: sealed again right after (a crash in between leaves it to set up again).
          unreadable += await rekeyAccountSecret(store.accounts, vault.userId, moved)
        } else await vault.doc.update((_, write) => write.set('dataKey', vault.rewrapped!))
        progress.advance(count)
      }
    } catch (error) {
      progress.abandon()
      throw error
    }
    progress.finish(`${todo} vault(s) ${rekey ? 're-keyed' : 're-wrapped'}`)

    // 4. The key file, in one rename.
    if (keyInFile) replaceMasterKeyFile(stagedPath, keyPath)

    // 5. Consistent again, under the new key.
    await store.accounts.update((_, write) => write.set('keyCheck', newRing.createKeyCheck()))

    if (rekey) {
      say('svc-vault: done; every vault has a new data key, wrapped by the new master key, and every record is sealed again under it.')
      say(`The old master key, and copies of ${onDatabase ? 'the database' : 'the data folder'} made before now, open nothing written from now on.`)
      if (unreadable > 0) say(`${unreadable} record(s) that did not open before (their reveal answered 404) were left as they were.`)
    } else say(`svc-vault: done; every data key is now wrapped by the new master key.`)
    if (keyInFile) {
      say(`The new key is in ${keyPath} (mode 0600). Back it up apart from the data: backups made before now need the old key.`)
    } else if (generated) {
      say(`Put the new key printed above in ${keyHome} before starting the server; the old key no longer opens this data.`)
    } else {
      say(`Put the value of SVC_NEW_MASTER_KEY in ${keyHome} before starting the server; the old key no longer opens this data.`)
    }
  } finally {
    await store.close()
  }
}

const EXPECTED = [
  ConfigError,
  RotationError,
  MasterKeyMismatchError,
  DataDirLockedError,
  CorruptDocumentError,
  UnsupportedFormatError,
  StoreUnavailableError,
  SchemaTooNewError,
  BackupError,
]

/** The command line: `--rekey` or nothing. */
export function parseArguments(args: string[]): RotateOptions {
  const unknown = args.filter((arg) => arg !== '--rekey')
  if (unknown.length > 0) throw new RotationError(`unknown argument ${unknown[0]} (usage: bun run rotate-master-key [--rekey])`)
  return { rekey: args.includes('--rekey') }
}

/** Runs the command with its arguments; the exit code. */
export async function main(args: string[]): Promise<number> {
  try {
    await rotateMasterKey(process.env, parseArguments(args))
    return 0
  } catch (error) {
    const known = EXPECTED.some((type) => error instanceof type)
    console.error(`svc-vault rotate-master-key: ${known ? '' : 'failed: '}${(error as Error)?.message ?? error}`)
    return 1
  }
}

if (import.meta.main) process.exit(await main(process.argv.slice(2)))
