import { t } from 'elysia'
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
