// Aggregate counts over a user's vault. Every key type and environment is always present.
import { indexById } from '../../store/by-id'
import type { Environment, KeyType } from '../../store/records'
import type { Vaults } from '../vault-access'

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
    const byKeyType: Record<KeyType, number> = { simple: 0, group: 0, ssh: 0, json: 0 }
    const byEnvironment: Record<Environment, number> = { development: 0, staging: 0, production: 0 }
    const categories = indexById(data.categories)
    // A number check rather than Object.hasOwn per entry (this loop is the whole cost of stats);
    // inherited names such as "constructor" are not numbers, so stray values cannot add keys.
    for (const entry of data.entries) {
      const keyType = categories[entry.categoryId]?.keyType
      if (keyType !== undefined && typeof byKeyType[keyType] === 'number') byKeyType[keyType]++
      const environment = entry.environment
      if (environment !== null && typeof byEnvironment[environment] === 'number') byEnvironment[environment]++
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
