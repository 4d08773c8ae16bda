// Schemas of version history, trash and notifications.
import { t } from 'elysia'
import { component, Integer, nullable, strictObject, Timestamp } from '../../http/schemas'
import { EnvironmentSchema } from '../entries/model'

/** Version reveals are never cached. */
export const NO_STORE = 'no-store'
export const VERSION_404 = "VERSION_NOT_FOUND when the version is not kept (any more); the record's own 404 when it is missing, foreign or in the trash."

export const VersionSchema = component(
  'Version',
  t.Object(
    {
      version: Integer({ minimum: 1, description: 'Counts the values of the record from 1; the current value has the next number' }),
      createdAt: { ...Timestamp, description: 'When this value was set' },
      actor: t.String({ description: 'Who set it: "session" (signed in) or "key:<access key name>"; "unknown" for values set before history was kept' }),
    },
    { description: 'A previous value of a record (never the value itself)' },
  ),
)
export const VersionListSchema = t.Array(VersionSchema, { description: 'Previous values, newest first' })
export const EnvFileVersionListAnswer = component('EnvFileVersionListAnswer', t.Object({ data: VersionListSchema }))

export const EntryVersionParams = t.Object({ id: t.String(), version: t.Integer({ minimum: 1, maximum: 2 ** 31 }) })
export const EnvFileVersionParams = t.Object({ id: t.String(), fileId: t.String(), version: t.Integer({ minimum: 1, maximum: 2 ** 31 }) })

export const RevealedEntryVersionSchema = component(
  'RevealedEntryVersion',
  t.Object({
    id: t.String(),
    name: t.String(),
    environment: t.Union([EnvironmentSchema, t.Null()]),
    version: Integer({ minimum: 1 }),
    createdAt: Timestamp,
    actor: t.String(),
    value: t.Union([t.String(), t.Record(t.String(), t.String())], {
      description: 'The value this version held: a string for a simple category; an object of field name to value for a group',
    }),
  }),
)

export const RevealedEnvFileVersionAnswer = component(
  'RevealedEnvFileVersionAnswer',
  t.Object({
    data: t.Object({
      id: t.String(),
      projectId: t.String(),
      fileType: t.String(),
      version: Integer({ minimum: 1 }),
      createdAt: Timestamp,
      actor: t.String(),
      content: t.String({ description: 'The content this version held' }),
    }),
  }),
)

export const RevealedTwoFactorVersionSchema = component(
  'RevealedTwoFactorVersion',
  t.Object({
    id: t.String(),
    service: t.String(),
    accountName: t.String(),
    version: Integer({ minimum: 1 }),
    createdAt: Timestamp,
    actor: t.String(),
    code: t.String({ description: "The current code of this version's secret (the secret itself never leaves the vault)" }),
    remainingSeconds: Integer({ minimum: 1, maximum: 120 }),
    algorithm: t.Union([t.Literal('SHA1'), t.Literal('SHA256'), t.Literal('SHA512')]),
    digits: Integer({ minimum: 5, maximum: 8 }),
    period: Integer({ minimum: 15, maximum: 120 }),
  }),
)

export const TrashKindSchema = component(
  'TrashKind',
  t.Union([t.Literal('entry'), t.Literal('category'), t.Literal('twoFactor'), t.Literal('envProject'), t.Literal('envFile')]),
)

const Counts = t.Object(
  {
    categories: Integer({ minimum: 0 }),
    entries: Integer({ minimum: 0 }),
    twoFactor: Integer({ minimum: 0 }),
    envProjects: Integer({ minimum: 0 }),
    envFiles: Integer({ minimum: 0 }),
  },
  { description: 'How many records of each kind the item holds (a category with its entries, a project with its files)' },
)

export const TrashItemSchema = component(
  'TrashItem',
  t.Object({
    id: t.String({ description: 'The trash item id (for restore and purge), not the id of the deleted record' }),
    kind: TrashKindSchema,
    name: t.String({ description: 'What it was called' }),
    label: t.String({ description: 'How a person tells it apart: an entry as "<variable> of <project> (<environment>)", others as their name' }),
    recordId: t.String({ description: 'The id the deleted record had (and has again once restored)' }),
    deletedAt: Timestamp,
    deletedBy: t.String({ description: '"session" or "key:<access key name>"' }),
    expiresAt: { ...Timestamp, description: 'When it is purged for good (SVC_TRASH_DAYS after deletion)' },
    contains: Counts,
  }),
)

export const RestoredTrashItemSchema = component(
  'RestoredTrashItem',
  t.Object({
    id: t.String(),
    kind: TrashKindSchema,
    name: t.String(),
    recordId: t.String(),
    restored: t.Object(
      {
        categories: t.Array(t.String()),
        entries: t.Array(t.String()),
        twoFactor: t.Array(t.String()),
        envProjects: t.Array(t.String()),
        envFiles: t.Array(t.String()),
      },
      { description: 'Ids of the records back in place' },
    ),
  }),
)

export const NotificationSettingsSchema = component(
  'NotificationSettings',
  t.Object({
    webhookUrl: nullable(t.String({ description: 'Where the daily list of due items is POSTed (null: notifications off)' })),
    hasSecret: t.Boolean({ description: 'Whether deliveries are signed (X-Svc-Signature); the secret itself is never shown' }),
    lastDelivery: nullable(
      t.Object({
        at: Timestamp,
        status: t.Union([t.Literal('delivered'), t.Literal('failed')], {
          description: 'Nothing more: no HTTP status or network error (that would map the network the vault sees)',
        }),
        attempts: Integer({ minimum: 1, description: 'Attempts of that day so far' }),
      }),
    ),
  }),
)

export const UpdateNotificationsBody = component(
  'UpdateNotificationsBody',
  strictObject({
    webhookUrl: nullable(
      t.String({
        maxLength: 2048,
        description:
          'An http(s) URL of a public address (not this vault, not an internal address unless SVC_WEBHOOK_ALLOW names it); null turns notifications off',
      }),
    ),
    secret: t.Optional(
      nullable(
        t.String({
          minLength: 1,
          maxLength: 256,
          description: 'Signs each delivery (HMAC-SHA-256 of the body, hex, in X-Svc-Signature); omitted: kept as it is; null: removed',
        }),
      ),
    ),
  }),
)
