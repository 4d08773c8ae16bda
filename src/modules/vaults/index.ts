// /api/vaults: shared vaults and their members. A vault's resources (entries, categories, env
// projects, 2FA tokens, history, trash, stats, export, audit) are the resource routes mounted a
// second time under /api/vaults/{vaultId} (mount.ts); these routes manage the vault itself.
import { Elysia, t } from 'elysia'
import { authGuard, type AuthContext } from '../../auth/guard'
import type { AppDeps } from '../../deps'
import { errorResponses, NoContent } from '../../http/schemas'
import type { AuditAction } from '../../audit/actions'
import type { AuditRecordRef, AuditSource } from '../audit/service'
import { sharedMount } from './mount'
import {
  CreateVaultBody,
  MemberParams,
  MoveProjectBody,
  MoveProjectResult,
  RotationItemSchema,
  RotationList,
  RotationParams,
  SharedVaultSchema,
  UpdateMemberBody,
  UpdateVaultBody,
  VaultMemberSchema,
  VaultParams,
} from './model'
import { VaultRotation } from './rotation'
import type { AuditEvent } from '../../audit/events'

const ROLE_NOTE =
  'A vault the caller is not a member of, or an unknown one, is 404 NOT_FOUND; a member without the role 403 ROLE_REQUIRED. Session, or an access key bound to this vault (any scope).'

export function vaultRoutes(deps: AppDeps) {
  const { sharedVaults } = deps
  // Recorded in the vault's own log, naming the member.
  const recordInVault = (
    auth: AuthContext,
    source: AuditSource,
    vaultId: string,
    action: AuditAction,
    records: AuditRecordRef[],
    details: Record<string, unknown> = {},
  ) =>
    deps.audit.recordFor(
      { ...auth, userId: vaultId, member: { userId: auth.memberId ?? auth.userId, email: auth.user.email } },
      source,
      action,
      records,
      details,
    )
  // Under /api/vaults/:vaultId the guard checked the role (before the body) and set auth.userId to the vault.
  const caller = (auth: AuthContext) => ({ userId: auth.memberId!, accessKey: auth.accessKey })
  const oneVault = { ...deps, vaultMount: sharedMount(sharedVaults) }
  const vaultRef = (vault: { id: string; name: string }): AuditRecordRef => ({ kind: 'vault', id: vault.id, name: vault.name })
  const rotation = new VaultRotation({
    accountsDoc: deps.store.accounts,
    vaults: deps.vaults,
    // The member's events in the vault's log, page by page (newest first).
    events: async function* (vaultId, memberUserId): AsyncGenerator<AuditEvent> {
      let cursor: string | undefined
      do {
        const page = await deps.audit.list(vaultId, { memberUserId, limit: 1000, cursor })
        yield* page.items
        cursor = page.nextCursor ?? undefined
      } while (cursor)
    },
    now: deps.now,
  })
  const memberRef = (userId: string): AuditRecordRef => ({ kind: 'user', id: userId, name: deps.accounts.userById(userId)?.email ?? null })
  return new Elysia({ prefix: '/api/vaults', tags: ['Shared vaults'] })
    .use(authGuard(deps))
    .get(
      '/',
      // A key sees the vault it is bound to; a personal key, none.
      ({ auth }) => (auth.accessKey ? sharedVaults.listFor(auth.userId).filter((v) => v.id === auth.accessKey?.vaultId) : sharedVaults.listFor(auth.userId)),
      {
        auth: 'any',
        response: { 200: t.Array(SharedVaultSchema), ...errorResponses() },
        detail: {
          operationId: 'listVaults',
          summary: 'The shared vaults you are a member of, with your role',
          description:
            'Your personal vault is not listed (its routes are the unprefixed ones). An access key bound to a shared vault sees that vault only; a personal access key sees none.',
        },
      },
    )
    .post(
      '/',
      async ({ auth, body, set, request, server }) => {
        const vault = await sharedVaults.create(auth.userId, body.name)
        await recordInVault(auth, { request, server }, vault.id, 'vault.create', [vaultRef(vault)])
        set.status = 201
        return vault
      },
      {
        auth: 'session',
        body: CreateVaultBody,
        response: { 201: SharedVaultSchema, ...errorResponses(400, 413) },
        detail: {
          operationId: 'createVault',
          summary: 'Create a shared vault; you are its first admin',
          description: 'With its own data key, sealed by the master key like every vault.',
        },
      },
    )
    .use(
      // The routes of one vault, guarded like its resource routes (vault-mount.ts).
      new Elysia({ prefix: '/:vaultId' })
        .use(authGuard(oneVault))
        .get('/', ({ auth, params }) => sharedVaults.get(caller(auth), params.vaultId), {
          auth: 'any',
          params: VaultParams,
          response: { 200: SharedVaultSchema, ...errorResponses(404) },
          detail: { operationId: 'getVault', 'x-required-role': 'viewer', summary: 'A shared vault, with your role (viewer)', description: ROLE_NOTE },
        })
        .patch(
          '/',
          async ({ auth, params, body, request, server }) => {
            const vault = await sharedVaults.rename(caller(auth), params.vaultId, body.name)
            await recordInVault(auth, { request, server }, vault.id, 'vault.rename', [vaultRef(vault)])
            return vault
          },
          {
            auth: 'session',
            params: VaultParams,
            body: UpdateVaultBody,
            response: { 200: SharedVaultSchema, ...errorResponses(400, 403, 404, 413) },
            detail: { operationId: 'updateVault', 'x-required-role': 'admin', summary: 'Rename a shared vault (admin)', description: ROLE_NOTE },
          },
        )
        .delete(
          '/',
          async ({ auth, params, set, request, server }) => {
            const vault = await sharedVaults.delete(caller(auth), params.vaultId)
            // Its own log goes with it: recorded in the deleting admin's log.
            await deps.audit.recordFor({ ...auth, userId: auth.memberId!, member: null }, { request, server }, 'vault.delete', [vaultRef(vault)])
            set.status = 204
          },
          {
            auth: 'session',
            params: VaultParams,
            response: { 204: NoContent, ...errorResponses(403, 404) },
            detail: {
              operationId: 'deleteVault',
              'x-required-role': 'admin',
              summary: 'Delete a shared vault with everything in it, its audit log and the access keys bound to it (admin)',
              description: ROLE_NOTE,
            },
          },
        )
        .post(
          '/move',
          async ({ auth, params, body, request, server }) => {
            const personal = auth.memberId!
            const vaultId = params.vaultId
            const copy = body.copy === true
            const result = await deps.moves.move({
              from: body.direction === 'in' ? personal : vaultId,
              to: body.direction === 'in' ? vaultId : personal,
              project: body.project,
              envProjectId: body.envProjectId,
              twoFactorIds: body.twoFactorIds,
              copy,
            })
            // Audited on both sides: the vault's log (naming the member) and the member's own.
            const vault = sharedVaults.record(vaultId)
            const refs: AuditRecordRef[] = [
              vaultRef({ id: vaultId, name: vault?.name ?? '' }),
              ...result.entryIds.map((id) => ({ kind: 'entry', id, name: result.project })),
              ...(result.envProjectId ? [{ kind: 'envproject', id: result.envProjectId, name: result.project }] : []),
              ...result.twoFactorIds.map((id) => ({ kind: 'twofa', id, name: null })),
            ]
            const details = {
              direction: body.direction,
              project: result.project,
              entries: result.entryIds.length,
              envFiles: result.envFileIds.length,
              twoFactor: result.twoFactorIds.length,
              versions: result.versions,
            }
            const action = copy ? 'project.copy' : 'project.move'
            await recordInVault(auth, { request, server }, vaultId, action, refs, details)
            await deps.audit.recordFor({ ...auth, userId: personal, member: null }, { request, server }, action, refs, details)
            return { ...result, direction: body.direction }
          },
          {
            auth: 'session',
            params: VaultParams,
            body: MoveProjectBody,
            response: { 200: MoveProjectResult, ...errorResponses(400, 403, 404, 409, 413) },
            detail: {
              operationId: 'moveVaultProject',
              'x-required-role': 'admin',
              summary: 'Move or copy a project between your personal vault and this shared vault (admin)',
              description: `The project's entries (those named as the project), its env project with its env files, and the 2FA tokens named, each with its history; the trash stays. Values are sealed again under the target vault's key; categories are matched by name and key type or created. A move is one durable change: never half moved, even across a crash (docs/sharing.md). Audited in both vaults' logs (project.move, project.copy). 404 PROJECT_NOT_FOUND when there is nothing to move; 409 ENTRY_EXISTS / ENV_PROJECT_EXISTS when the target has a twin, 409 MOVE_CONFLICT when the project changed meanwhile (nothing moved). ${ROLE_NOTE}`,
            },
          },
        )
        .get('/members', ({ auth, params }) => sharedVaults.members(caller(auth), params.vaultId), {
          auth: 'any',
          params: VaultParams,
          response: { 200: t.Array(VaultMemberSchema), ...errorResponses(404) },
          detail: {
            operationId: 'listVaultMembers',
            'x-required-role': 'viewer',
            summary: "A shared vault's members and their roles (viewer)",
            description: ROLE_NOTE,
          },
        })
        .patch(
          '/members/:userId',
          async ({ auth, params, body, request, server }) => {
            const before = sharedVaults.roleOf(params.userId, params.vaultId)
            const member = await sharedVaults.setRole(caller(auth), params.vaultId, params.userId, body.role)
            if (before !== member.role)
              await recordInVault(auth, { request, server }, params.vaultId, 'member.role_change', [memberRef(member.userId)], {
                from: before,
                to: member.role,
              })
            return member
          },
          {
            auth: 'session',
            params: MemberParams,
            body: UpdateMemberBody,
            response: { 200: VaultMemberSchema, ...errorResponses(400, 403, 404, 409, 413) },
            detail: {
              operationId: 'updateVaultMember',
              'x-required-role': 'admin',
              summary: "Change a member's role (admin)",
              description: `409 LAST_ADMIN when it would leave the vault without an admin. 404 MEMBER_NOT_FOUND for someone who is not a member. ${ROLE_NOTE}`,
            },
          },
        )
        .delete(
          '/members/:userId',
          async ({ auth, params, set, request, server }) => {
            const leaving = params.userId === auth.memberId
            const removed = await sharedVaults.removeMember(caller(auth), params.vaultId, params.userId)
            await recordInVault(auth, { request, server }, params.vaultId, leaving ? 'member.leave' : 'member.remove', [memberRef(removed.userId)], {
              role: removed.role,
            })
            // Their reads become the rotation list now; if this fails, the next list of it does it (the note is written).
            await rotation
              .scanDepartures(params.vaultId)
              .catch((error) => deps.log(`warn: rotation scan of vault ${params.vaultId}: ${error?.message ?? error}`))
            set.status = 204
          },
          {
            auth: 'session',
            params: MemberParams,
            response: { 204: NoContent, ...errorResponses(403, 404, 409) },
            detail: {
              operationId: 'removeVaultMember',
              'x-required-role': 'admin',
              summary: 'Remove a member (admin), or leave (your own user id, any role)',
              description: `Takes effect at once: their sessions lose the vault on their next request (one in flight that has not answered a secret yet is refused), and their access keys bound to it are revoked in the same write. Every secret their audit events show them revealing or exporting is then on the rotation list (GET /api/vaults/{vaultId}/rotation). 409 LAST_ADMIN for the last admin. ${ROLE_NOTE}`,
            },
          },
        )
        .get('/rotation', async ({ params }) => ({ items: await rotation.list(params.vaultId) }), {
          auth: 'any',
          params: VaultParams,
          response: { 200: RotationList, ...errorResponses(403, 404) },
          detail: {
            operationId: 'listVaultRotation',
            'x-required-role': 'editor',
            summary: 'What removed members could have taken: the secrets to rotate (editor)',
            description: `Every secret (entry, env file, 2FA token) whose current value a removed member revealed or exported, as their audit events in this vault show, with who (revealedBy) and since when (the removal). \`status\` rotation_due until its value is changed and it is marked rotated (POST …/rotation/{kind}/{id}/rotated), then rotated (rotatedAt). Never a value. ${ROLE_NOTE}`,
          },
        })
        .post(
          '/rotation/:kind/:id/rotated',
          async ({ auth, params, request, server }) => {
            const { item, changed } = await rotation.markRotated(params.vaultId, params.kind, params.id, auth.memberId!)
            if (changed)
              await recordInVault(auth, { request, server }, params.vaultId, 'rotation.mark', [{ kind: item.kind, id: item.id, name: item.name }], {
                since: item.since,
              })
            return item
          },
          {
            auth: 'session',
            params: RotationParams,
            response: { 200: RotationItemSchema, ...errorResponses(400, 403, 404, 409) },
            detail: {
              operationId: 'markVaultRotated',
              'x-required-role': 'editor',
              summary: 'Mark a secret of the rotation list rotated, once its value changed (editor)',
              description: `Allowed once the record's value was changed after the item became due (PUT the entry's value, the env file's content or the token's secret); before that 409 NOT_ROTATED. A record deleted since may be marked as it is. Marking an item already rotated answers it unchanged. 404 ROTATION_ITEM_NOT_FOUND for a secret not on the list. Audited as rotation.mark. ${ROLE_NOTE}`,
            },
          },
        ),
    )
}
