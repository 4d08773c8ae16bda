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
