// Aggregate counts over a user's vault. Every key type and environment is always present.
import type { Environment, KeyType } from '../../store/records'
import type { Vaults } from '../vault-access'

export const KEY_TYPES: readonly KeyType[] = ['simple', 'group', 'ssh', 'json']
export const ENVIRONMENTS: readonly Environment[] = ['development', 'staging', 'production']

export interface Stats {
  totalCategories: number
  totalEntries: number
  total2fa: number
  byKeyType: Record<KeyType, number>
  byEnvironment: Record<Environment, number>
}

export class StatsService {
  constructor(private readonly vaults: Vaults) {}

  async get(userId: string): Promise<Stats> {
    const { data } = await this.vaults.open(userId)
    const byKeyType = Object.fromEntries(KEY_TYPES.map((k) => [k, 0])) as Record<KeyType, number>
    const byEnvironment = Object.fromEntries(ENVIRONMENTS.map((e) => [e, 0])) as Record<Environment, number>
    const keyTypeOf = new Map(data.categories.map((c) => [c.id, c.keyType]))
    for (const entry of data.entries) {
      const keyType = keyTypeOf.get(entry.categoryId)
      if (keyType && Object.hasOwn(byKeyType, keyType)) byKeyType[keyType]++
      if (entry.environment && Object.hasOwn(byEnvironment, entry.environment)) byEnvironment[entry.environment]++
    }
    return {
      totalCategories: data.categories.length,
      totalEntries: data.entries.length,
      total2fa: data.twoFactor.length,
      byKeyType,
      byEnvironment,
    }
  }
}
