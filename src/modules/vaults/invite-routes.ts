// Invites: an admin's routes under /api/vaults/{vaultId}/invites, and the invitee's under
// /api/invites. Accepting through sign-up is POST /api/auth/register with `invite` (auth/login.ts).
import { Elysia, t } from 'elysia'
import { authGuard, type AuthContext } from '../../auth/guard'
import type { AppDeps } from '../../deps'
import { errorResponses, NoContent } from '../../http/schemas'
import type { UserRecord } from '../../store/records'
import type { AuditRecordRef, AuditSource } from '../audit/service'
import type { Accepted, VaultInvites } from './invites'
import { sharedMount } from './mount'
import {
  AcceptedInviteSchema,
  AcceptInviteBody,
  CreatedInviteSchema,
  CreateInviteBody,
  InviteParams,
  OwnInviteParams,
  ReceivedInviteSchema,
  VaultInviteSchema,
  VaultParams,
} from './model'

const ADMIN_NOTE =
  'Admin only, with a session: a vault the caller is not a member of, or an unknown one, is 404 NOT_FOUND; a member without the admin role 403 ROLE_REQUIRED.'
const NOT_FOUND_NOTE = '404 INVITE_NOT_FOUND, one answer for an unknown, expired (7 days), used, declined or revoked invite.'

const inviteRef = (invite: { id: string; email: string | null }): AuditRecordRef => ({ kind: 'invite', id: invite.id, name: invite.email })

/** The invite.accept event, in the vault's log, naming the member who joined. */
export function recordAccepted(
  deps: Pick<AppDeps, 'audit'>,
  source: AuditSource,
  caller: { user: UserRecord; sessionTokenHash: string | null },
  accepted: Accepted,
  via: 'email' | 'link' | 'register',
) {
  return deps.audit.recordFor(
    { userId: accepted.vault.id, accessKey: null, sessionTokenHash: caller.sessionTokenHash, member: { userId: caller.user.id, email: caller.user.email } },
    source,
    'invite.accept',
    [inviteRef(accepted.invite)],
    { role: accepted.invite.role, via },
  )
}

export function inviteRoutes(deps: AppDeps & { invites: VaultInvites }) {
  const { invites, sharedVaults } = deps
  const caller = (auth: AuthContext) => ({ userId: auth.memberId!, accessKey: auth.accessKey })
  const inVault = (auth: AuthContext) => ({ ...auth, member: { userId: auth.memberId ?? auth.userId, email: auth.user.email } })
  const joined = (accepted: Accepted, userId: string) => ({
    vault: sharedVaults.get({ userId }, accepted.vault.id),
    role: accepted.invite.role,
  })
  const admin = new Elysia({ prefix: '/api/vaults/:vaultId/invites', tags: ['Shared vaults'] })
    .use(authGuard({ ...deps, vaultMount: sharedMount(sharedVaults) }))
    .post(
      '/',
      async ({ auth, params, body, set, request, server }) => {
        const made = await invites.create(caller(auth), params.vaultId, body)
        await deps.audit.recordFor(inVault(auth), { request, server }, 'invite.create', [inviteRef(made.invite)], {
          role: made.invite.role,
          kind: made.invite.kind,
          expiresAt: made.invite.expiresAt,
        })
        set.status = 201
        return { ...made.invite, ...(made.token === undefined ? {} : { token: made.token, url: made.url }) }
      },
      {
        auth: 'session',
        params: VaultParams,
        body: CreateInviteBody,
        response: { 201: CreatedInviteSchema, ...errorResponses(400, 403, 404, 409, 413) },
        detail: {
          operationId: 'createVaultInvite',
          'x-required-role': 'admin',
          summary: 'Invite someone into a shared vault, by e-mail or by link (admin)',
          description: `With \`email\`: a pending invite for the account with that e-mail (listed by its GET /api/invites, accepted or declined there; an account made later with that e-mail sees it too, so the answer never tells whether an account exists); a newer invite for the same e-mail replaces an older one; 409 ALREADY_MEMBER when that account is already a member. Without \`email\`: a link invite, answered with its \`token\` and \`url\` (<SVC_BASE_URL>/invite/<token>) this once: only a hash of the token is stored. Either is single use and expires after 7 days. ${ADMIN_NOTE}`,
        },
      },
    )
    .get('/', ({ auth, params }) => invites.list(caller(auth), params.vaultId), {
      auth: 'session',
      params: VaultParams,
      response: { 200: t.Array(VaultInviteSchema), ...errorResponses(403, 404) },
      detail: {
        operationId: 'listVaultInvites',
        'x-required-role': 'admin',
        summary: "A shared vault's pending invites, without their tokens (admin)",
        description: ADMIN_NOTE,
      },
    })
    .delete(
      '/:inviteId',
      async ({ auth, params, set, request, server }) => {
        const revoked = await invites.revoke(caller(auth), params.vaultId, params.inviteId)
        await deps.audit.recordFor(inVault(auth), { request, server }, 'invite.revoke', [inviteRef(revoked)], { role: revoked.role, kind: revoked.kind })
        set.status = 204
      },
      {
        auth: 'session',
        params: InviteParams,
        response: { 204: NoContent, ...errorResponses(403, 404) },
        detail: {
          operationId: 'revokeVaultInvite',
          'x-required-role': 'admin',
          summary: 'Revoke a pending invite (admin)',
          description: `Its link or e-mail invite can no longer be used. ${NOT_FOUND_NOTE} ${ADMIN_NOTE}`,
        },
      },
    )
  const own = new Elysia({ prefix: '/api/invites', tags: ['Shared vaults'] })
    .use(authGuard(deps))
    .get('/', ({ auth }) => invites.received(auth.user), {
      auth: 'session',
      response: { 200: t.Array(ReceivedInviteSchema), ...errorResponses() },
      detail: {
        operationId: 'listInvites',
        summary: 'The invites into shared vaults pending for your e-mail',
        description: 'E-mail invites only (a link invite is accepted with POST /api/invites/accept). Expired ones and vaults you are already in are left out.',
      },
    })
    .post(
      '/accept',
      async ({ auth, body, request, server }) => {
        const accepted = await invites.acceptByToken(auth.user, body.token)
        await recordAccepted(deps, { request, server }, auth, accepted, 'link')
        return joined(accepted, auth.userId)
      },
      {
        auth: 'session',
        body: AcceptInviteBody,
        response: { 200: AcceptedInviteSchema, ...errorResponses(400, 404, 409, 413) },
        detail: {
          operationId: 'acceptInviteLink',
          summary: 'Join a shared vault with an invite link’s token',
          description: `The token is used up (single use: of two parallel accepts exactly one wins). ${NOT_FOUND_NOTE} 409 ALREADY_MEMBER when you are already a member (the invite stays usable).`,
        },
      },
    )
    .post(
      '/:inviteId/accept',
      async ({ auth, params, request, server }) => {
        const accepted = await invites.acceptById(auth.user, params.inviteId)
        await recordAccepted(deps, { request, server }, auth, accepted, 'email')
        return joined(accepted, auth.userId)
      },
      {
        auth: 'session',
        params: OwnInviteParams,
        response: { 200: AcceptedInviteSchema, ...errorResponses(404, 409) },
        detail: {
          operationId: 'acceptInvite',
          summary: 'Accept an invite made for your e-mail',
          description: `You join the vault with the invite's role. ${NOT_FOUND_NOTE} An invite for another e-mail is 404 too. 409 ALREADY_MEMBER when you are already a member.`,
        },
      },
    )
    .delete(
      '/:inviteId',
      async ({ auth, params, set, request, server }) => {
        const { invite, vault } = await invites.decline(auth.user, params.inviteId)
        await deps.audit.recordFor(
          { userId: vault.id, accessKey: null, sessionTokenHash: auth.sessionTokenHash, member: { userId: auth.userId, email: auth.user.email } },
          { request, server },
          'invite.decline',
          [inviteRef(invite)],
          { role: invite.role },
        )
        set.status = 204
      },
      {
        auth: 'session',
        params: OwnInviteParams,
        response: { 204: NoContent, ...errorResponses(404) },
        detail: {
          operationId: 'declineInvite',
          summary: 'Decline an invite made for your e-mail',
          description: `The invite is removed. ${NOT_FOUND_NOTE} An invite for another e-mail is 404 too.`,
        },
      },
    )
  return new Elysia({ name: 'inviteRoutes' }).use(admin).use(own)
}
