// The shared copies of the resource routes: built by each resource module with a `vaultMount`
// of kind "shared" (its prefix /api/vaults/:vaultId/…, its guard resolving the member's role),
// then adjusted here for the API document: each operation gets the `vaultId` path parameter, its
// own operationId (listEntries -> listVaultEntries) and `x-required-role`.
import { t, type AnyElysia } from 'elysia'
import { Kind } from '@sinclair/typebox'
import { errorResponses } from '../../http/schemas'
import { needOf } from '../../auth/guard'
import { vaultRoleFor, type VaultMount } from '../../auth/vault-mount'
import type { SharedVaults } from './service'

const VaultIdParam = t.String({ description: 'The shared vault (GET /api/vaults lists yours)' })

export const sharedMount = (sharedVaults: SharedVaults): VaultMount => ({
  kind: 'shared',
  roleIn: (caller, vaultId, need) => sharedVaults.require(caller, vaultId, need).role,
})

/** listEntries -> listVaultEntries: the verb, then "Vault", then the rest. */
export function vaultOperationId(operationId: string): string {
  const at = operationId.search(/[A-Z]/)
  return at < 0 ? `${operationId}Vault` : `${operationId.slice(0, at)}Vault${operationId.slice(at)}`
}

interface MountedRoute {
  method: string
  path: string
  hooks?: { params?: unknown; response?: unknown; detail?: Record<string, unknown> }
}

/** Adjusts the routes of plugins built for the shared mount (before they are used by the app). */
export function documentSharedRoutes<T extends AnyElysia>(plugin: T): T {
  for (const route of plugin.routes as MountedRoute[]) {
    const hooks = (route.hooks ??= {})
    const params = hooks.params as { properties?: Record<string, unknown> } | undefined
    // New objects: the modules' schemas (IdParams) are shared with the personal routes.
    hooks.params = t.Object({ vaultId: VaultIdParam, ...((params?.properties ?? {}) as Record<string, never>) })
    // An unknown vault, or one the caller is not in, is 404 on every operation.
    if (hooks.response && typeof hooks.response === 'object' && !(Kind in hooks.response)) hooks.response = { ...errorResponses(404), ...hooks.response }
    const detail = hooks.detail ?? {}
    const need = needOf(detail.security) ?? 'any'
    const role = vaultRoleFor(need, route.method, route.path)
    hooks.detail = {
      ...detail,
      operationId: typeof detail.operationId === 'string' ? vaultOperationId(detail.operationId) : undefined,
      summary: typeof detail.summary === 'string' ? `${detail.summary} (shared vault)` : detail.summary,
      description: `${typeof detail.description === 'string' ? `${detail.description} ` : ''}In a shared vault: needs the ${role} role there (else 403 ROLE_REQUIRED); a vault the caller is not in, or that an access key is not bound to, is 404 NOT_FOUND.`,
      'x-required-role': role,
    }
  }
  return plugin
}
