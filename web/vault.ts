// Which vault the page works on: the personal one (null) or a shared one. Chosen in the switcher;
// kept in localStorage per user (a vault id is not a secret), so a reload stays in it. The path
// does not change: switching keeps the page one is on (entries, 2FA, envs, activity…).
import { computed, signal } from '@preact/signals'

export type VaultRole = 'viewer' | 'editor' | 'admin'
export interface SharedVault {
  id: string
  name: string
  role: VaultRole
  createdAt: string
  createdBy: string
  memberCount: number
}

/** The caller's shared vaults (GET /api/vaults); null until loaded. */
export const sharedVaults = signal<SharedVault[] | null>(null)
/** The chosen shared vault's id, or null for the personal vault. */
export const currentVaultId = signal<string | null>(null)
export const currentVault = computed(() => sharedVaults.value?.find((vault) => vault.id === currentVaultId.value) ?? null)
/** A viewer reads only: the pages hide or disable what writes (the API answers 403 ROLE_REQUIRED anyway). */
export const canWrite = computed(() => currentVault.value === null || currentVault.value.role !== 'viewer')

let storageKey: string | null = null

/** Reads the stored choice for this user (before the vault list is known). */
export function restoreVault(userId: string): void {
  storageKey = `svc.vault.${userId}`
  sharedVaults.value = null
  let stored: string | null = null
  try {
    stored = localStorage.getItem(storageKey)
  } catch {
    // storage refused (private mode): the personal vault
  }
  currentVaultId.value = stored && /^[0-9a-f-]{36}$/i.test(stored) ? stored : null
}

export function chooseVault(id: string | null): void {
  currentVaultId.value = id
  if (!storageKey) return
  try {
    if (id) localStorage.setItem(storageKey, id)
    else localStorage.removeItem(storageKey)
  } catch {
    // not kept across a reload; the choice still holds in this page
  }
}

/** Sets the list; a chosen vault the caller is no longer in falls back to the personal vault. */
export function setSharedVaults(list: SharedVault[]): void {
  sharedVaults.value = list
  if (currentVaultId.value && !list.some((vault) => vault.id === currentVaultId.value)) chooseVault(null)
}

// The resource routes a shared vault has under /api/vaults/{vaultId} (the server's resourceRoutes).
const RESOURCE = /^\/api\/(entries|categories|envs|2fa|stats|export|trash|audit)(?=[/?]|$)/

/** The one place a resource path turns into the chosen vault's: `/api/entries` -> `/api/vaults/<id>/entries`. */
export function vaultPath(path: string): string {
  const id = currentVaultId.value
  return id && RESOURCE.test(path) ? `/api/vaults/${encodeURIComponent(id)}${path.slice('/api'.length)}` : path
}

/** Spread on a button that writes: disabled for a viewer, saying why. */
export const writeProps = (): { disabled?: boolean; title?: string } => (canWrite.value ? {} : { disabled: true, title: 'Needs the editor role in this vault' })
