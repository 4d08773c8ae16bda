// What the seeding hands to the benchmark and to the baseline server.

/** Everything the bare baseline server needs to give the same answers as the service. */
export interface BaselineFixture {
  /** The bearer key the load generator sends. */
  token: string
  categories: { id: string; name: string; keyType: string; envVarName: string | null; fieldDefinitions: string[] | null }[]
  /** List items exactly as the service answered GET /api/entries. */
  entries: Record<string, unknown>[]
  /** Entry id -> the plaintext value as sent on create. */
  secrets: Record<string, string>
  twoFactor: { id: string; service: string; accountName: string; secret: string }[]
}

export interface SeedSizes {
  categories: number
  entries: number
  twoFactor: number
  envProjects: number
  filesPerProject: number
  /** The second data set: users, each with one category and this many entries. */
  users: number
  entriesPerUser: number
}

export const FULL_SIZES: SeedSizes = {
  categories: 100,
  entries: 1000,
  twoFactor: 50,
  envProjects: 20,
  filesPerProject: 4,
  users: 1000,
  entriesPerUser: 10,
}

export const SMOKE_SIZES: SeedSizes = {
  categories: 6,
  entries: 30,
  twoFactor: 3,
  envProjects: 2,
  filesPerProject: 4,
  users: 8,
  entriesPerUser: 3,
}

/** Which modules answered while seeding (the others are still being built). */
export interface Availability {
  entries: boolean
  twoFactor: boolean
  envs: boolean
}

export interface SeededVault {
  dataDir: string
  /** Access key with every scope, of the user whose data the load reads and writes. */
  key: string
  userId: string
  entryIds: string[]
  twoFactorIds: string[]
  /** A simple category that writes go to. */
  writeCategoryId: string
  counts: { users: number; categories: number; entries: number; twoFactor: number; envProjects: number; envFiles: number }
  available: Availability
  notes: string[]
  baseline: BaselineFixture
  seedSeconds: number
  /**
   * A shared vault of the same user (issue 33) holding as many entries as the personal vault, made
   * the same way; `key` is bound to it. Absent when shared vaults are not built.
   */
  vault?: { id: string; key: string; entryIds: string[] }
}
