// Which vault a route works on. The resource routes are mounted twice: at their own paths for the
// caller's personal vault, and under /api/vaults/{vaultId} for a shared one. The shared copy's
// guard turns (caller, vault id, role needed) into `auth.userId = vaultId` (the owner id the
// services take: a shared vault's documents live under its id), with the member's own id beside it.
import type { AccessKeyRecord, VaultRole } from '../store/records'

export const SHARED_PREFIX = '/api/vaults/:vaultId'

export interface VaultMount {
  kind: 'personal' | 'shared'
  /**
   * Shared: the caller's role in the vault, once it holds `need`; throws 404 NOT_FOUND for a vault
   * the caller is not in (or that their key is not bound to) and 403 ROLE_REQUIRED without the role.
   */
  roleIn?: (caller: { userId: string; accessKey: AccessKeyRecord | null }, vaultId: string, need: VaultRole) => VaultRole
}

/** A resource module's prefix: `/api/entries`, or `/api/vaults/:vaultId/entries` in the shared copy. */
export const routePrefix = (deps: { vaultMount?: VaultMount }, path: string): string =>
  deps.vaultMount?.kind === 'shared' ? SHARED_PREFIX + path.slice('/api'.length) : path

const isWriteScope = (scope: string) => scope.endsWith(':write')

/**
 * The role a shared vault's operation needs: reads (lists, gets, reveals, exports, stats, the
 * member's own audit events) viewer; writes editor; the raw audit log (every member's lines) admin.
 * `need` is the route's AuthNeed (guard.ts): a scope, several, 'session' or 'any'.
 */
export function vaultRoleFor(need: string | readonly string[], method: string, route: string): VaultRole {
  const path = route.length > 1 && route.endsWith('/') ? route.slice(0, -1) : route
  if (path.endsWith('/audit/export')) return 'admin'
  // The vault itself (modules/vaults): read by any member, changed by an admin; a member may
  // always leave (DELETE of their own membership: the handler checks the admin role for others).
  if (path === SHARED_PREFIX) return method === 'GET' ? 'viewer' : 'admin'
  if (path === `${SHARED_PREFIX}/members/:userId`) return method === 'DELETE' ? 'viewer' : 'admin'
  if (path === `${SHARED_PREFIX}/members`) return method === 'GET' ? 'viewer' : 'admin'
  // Invites (listing them too) are an admin's.
  if (path === `${SHARED_PREFIX}/invites` || path.startsWith(`${SHARED_PREFIX}/invites/`)) return 'admin'
  // Moving or copying a project in or out of the vault (modules/vaults/move.ts).
  if (path === `${SHARED_PREFIX}/move`) return 'admin'
  // The rotation list names who read what: the members who change values (editors) see it and mark it.
  if (path === `${SHARED_PREFIX}/rotation` || path === `${SHARED_PREFIX}/rotation/:kind/:id/rotated`) return 'editor'
  if (need !== 'any' && need !== 'session') {
    const scopes: readonly string[] = typeof need === 'string' ? [need] : need
    return scopes.some(isWriteScope) ? 'editor' : 'viewer'
  }
  // Session or any scope: reads and exports are a viewer's, everything else changes the vault.
  if (method === 'GET' || path.endsWith('/export')) return 'viewer'
  return 'editor'
}
