import { t } from 'elysia'
import { EMAIL_PATTERN } from '../../auth/model'
import { component, strictObject, Timestamp, nullable } from '../../http/schemas'

export const VaultRoleSchema = component(
  'VaultRole',
  t.Union([t.Literal('viewer'), t.Literal('editor'), t.Literal('admin')], {
    description:
      'viewer: lists and reads secrets (reveal, export); editor: also creates, changes, deletes, restores; admin: also manages members and the vault',
  }),
)

export const SharedVaultSchema = component(
  'SharedVault',
  t.Object({
    id: t.String({ description: 'The vault id: its resource routes are under /api/vaults/{vaultId}/…' }),
    name: t.String(),
    role: VaultRoleSchema,
    createdAt: Timestamp,
    createdBy: t.String({ description: 'The user id of its creator' }),
    memberCount: t.Integer(),
  }),
)

export const VaultMemberSchema = component(
  'VaultMember',
  t.Object({
    userId: t.String(),
    email: t.String(),
    name: nullable(t.String()),
    role: VaultRoleSchema,
    addedAt: Timestamp,
    addedBy: t.String({ description: 'The user id of who added them' }),
  }),
)

const VaultName = t.String({ minLength: 1, maxLength: 100, pattern: '\\S' })

export const CreateVaultBody = component('CreateVaultBody', strictObject({ name: VaultName }))
export const UpdateVaultBody = component('UpdateVaultBody', strictObject({ name: VaultName }))
export const UpdateMemberBody = component('UpdateVaultMemberBody', strictObject({ role: VaultRoleSchema }))

export const VaultParams = t.Object({ vaultId: t.String() })
export const MemberParams = t.Object({ vaultId: t.String(), userId: t.String() })

// Invites (invites.ts).
export const CreateInviteBody = component(
  'CreateVaultInviteBody',
  strictObject({
    role: VaultRoleSchema,
    email: t.Optional(
      t.String({
        minLength: 3,
        maxLength: 200,
        pattern: EMAIL_PATTERN,
        error: 'must be a valid e-mail address (at most 200 characters)',
        description: 'Invite the account with this e-mail (it lists the invite in GET /api/invites); without it, a link invite',
      }),
    ),
  }),
)

const InviteFields = {
  id: t.String(),
  vaultId: t.String(),
  role: VaultRoleSchema,
  email: nullable(t.String({ description: 'The e-mail it is for; null for a link invite' })),
  kind: t.Union([t.Literal('email'), t.Literal('link')]),
  createdAt: Timestamp,
  createdBy: t.String({ description: 'The user id of the admin who made it' }),
  expiresAt: Timestamp,
}

export const VaultInviteSchema = component('VaultInvite', t.Object(InviteFields, { description: 'A pending invite; its token is never listed' }))

export const CreatedInviteSchema = component(
  'CreatedVaultInvite',
  t.Object({
    ...InviteFields,
    token: t.Optional(
      t.String({
        description: 'Link invite only, answered this once (only its hash is stored): accept with POST /api/invites/accept or POST /api/auth/register',
      }),
    ),
    url: t.Optional(t.String({ description: 'Link invite only: <SVC_BASE_URL>/invite/<token>' })),
  }),
)

export const ReceivedInviteSchema = component(
  'ReceivedVaultInvite',
  t.Object({
    id: t.String(),
    vaultId: t.String(),
    vaultName: t.String(),
    role: VaultRoleSchema,
    invitedBy: nullable(t.String({ description: 'The e-mail of the admin who invited you' })),
    createdAt: Timestamp,
    expiresAt: Timestamp,
  }),
)

export const AcceptInviteBody = component('AcceptVaultInviteBody', strictObject({ token: t.String({ minLength: 1, maxLength: 200 }) }))

export const AcceptedInviteSchema = component(
  'AcceptedVaultInvite',
  t.Object({ vault: SharedVaultSchema, role: VaultRoleSchema }, { description: 'The vault you joined, with your role' }),
)

export const InviteParams = t.Object({ vaultId: t.String(), inviteId: t.String() })
export const OwnInviteParams = t.Object({ inviteId: t.String() })
export const MoveProjectBody = component(
  'MoveProjectBody',
  strictObject({
    direction: t.Union([t.Literal('in'), t.Literal('out')], {
      description: 'in: from your personal vault into this shared vault; out: from this shared vault into your personal vault',
    }),
    project: t.String({ minLength: 1, maxLength: 200, description: "The project: every entry whose name is this (an entry's project)" }),
    envProjectId: t.Optional(
      t.String({ minLength: 1, maxLength: 100, description: 'The env project to take along; default: the env project named as the project, if any' }),
    ),
    twoFactorIds: t.Optional(
      t.Array(t.String({ minLength: 1, maxLength: 100 }), { maxItems: 1000, description: 'The 2FA tokens to take along (default none)' }),
    ),
    copy: t.Optional(t.Boolean({ description: 'true: copy (new ids, the source keeps everything); default false: move' })),
  }),
)

export const MoveProjectResult = component(
  'MoveProjectResult',
  t.Object({
    copy: t.Boolean(),
    direction: t.Union([t.Literal('in'), t.Literal('out')]),
    project: t.String(),
    entryIds: t.Array(t.String(), { description: 'The entries in the target vault' }),
    envProjectId: nullable(t.String()),
    envFileIds: t.Array(t.String()),
    twoFactorIds: t.Array(t.String()),
    versions: t.Integer({ description: 'Previous values taken along' }),
    categoriesCreated: t.Array(t.String(), { description: 'Categories created in the target (others matched by name and key type)' }),
  }),
)
export const RotationKindSchema = t.Union([t.Literal('entry'), t.Literal('envfile'), t.Literal('twofa')], {
  description: 'entry (a key entry), envfile (an env file), twofa (a two-factor token)',
})

export const RotationItemSchema = component(
  'RotationItem',
  t.Object(
    {
      kind: RotationKindSchema,
      id: t.String({ description: "The record's id in this vault" }),
      name: nullable(t.String({ description: "The record's name (never a value)" })),
      revealedBy: t.Array(t.Object({ userId: t.String(), email: t.String() }), {
        description: 'The removed members whose audit events show them reading (revealing or exporting) its current value',
      }),
      since: Timestamp,
      rotatedAt: nullable(Timestamp),
      status: t.Union([t.Literal('rotation_due'), t.Literal('rotated')]),
    },
    { description: 'A secret a removed member could have taken: rotation_due until its value is changed and it is marked rotated' },
  ),
)

export const RotationList = component('RotationList', t.Object({ items: t.Array(RotationItemSchema) }))

export const RotationParams = t.Object({ vaultId: t.String(), kind: RotationKindSchema, id: t.String() })
