// Shared by the robustness tests: which modules the server has (from its OpenAPI paths, so new
// modules join the workloads by themselves), and "lanes": one record each, written by a sequence
// of requests that wait for each other, while many lanes run at once. A lane remembers which of
// its steps were acknowledged, so after a crash we know exactly which states are allowed.
import { SCOPES } from '../../src/auth/scopes'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { Client } from '../support/client'

export const TOTP_SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP'

export async function apiPaths(url: string): Promise<Set<string>> {
  const doc = (await (await fetch(`${url}/api/openapi`)).json()) as { paths: Record<string, unknown> }
  return new Set(Object.keys(doc.paths))
}

export interface Modules {
  entries: boolean
  twoFactor: boolean
  envs: boolean
  stats: boolean
}

export async function modules(url: string): Promise<Modules> {
  const paths = await apiPaths(url)
  return {
    entries: paths.has('/api/entries/{id}/reveal'),
    twoFactor: paths.has('/api/2fa/{id}/reveal'),
    envs: paths.has('/api/envs/{id}/files/{fileId}/reveal'),
    stats: paths.has('/api/stats'),
  }
}

/** Every scope a full-power key may hold. */
export const ALL_SCOPES = [...SCOPES]

export interface Actor {
  session: Client
  /** Clients that write for the same user: the session and access keys. */
  writers: Client[]
  /** For entries: a category made before the load. */
  simpleCategoryId?: string
}

export async function makeActor(session: Client, mods: Modules, keys = 2): Promise<Actor> {
  const writers: Client[] = [session]
  for (let i = 0; i < keys; i++) writers.push(await session.keyClient(ALL_SCOPES))
  const actor: Actor = { session, writers }
  if (mods.entries) {
    const category = await session.post('/api/categories', { name: 'Load', keyType: 'simple', envVarName: 'LOAD_KEY' })
    if (category.status !== 201) throw new Error(`category: ${category.status} ${category.text}`)
    actor.simpleCategoryId = category.body.id
  }
  return actor
}

/** What a lane's record looks like after a step; "absent" once deleted. */
export type State = string
export const ABSENT = 'absent'

export interface Lane {
  kind: string
  actor: Actor
  id?: string
  /** Expected state after each step that was sent. */
  sent: State[]
  /** How many steps were acknowledged (2xx received), in order. */
  acked: number
  /** Set when the server stopped answering in the middle. */
  broken: boolean
  /** Extra data a kind needs (the env file id, the plaintext key). */
  extra: Record<string, string>
}

type Step = (lane: Lane, client: Client, i: number) => Promise<{ ok: boolean; state: State }>

const pick = <T>(items: T[]) => items[Math.floor(Math.random() * items.length)]

interface Kind {
  name: string
  available: (mods: Modules) => boolean
  steps: (tag: string) => Step[]
  /** The record's current state as the server shows it. */
  observe: (lane: Lane) => Promise<State>
  /** May only the session write (access keys)? */
  sessionOnly?: boolean
}

async function send(lane: Lane, expected: State, run: () => Promise<{ status: number; body: any }>): Promise<{ ok: boolean; state: State }> {
  lane.sent.push(expected)
  const answer = await run()
  if (answer.status >= 200 && answer.status < 300) return { ok: true, state: expected }
  throw new Error(`${lane.kind} step ${lane.sent.length}: unexpected ${answer.status} ${JSON.stringify(answer.body)}`)
}

const category: Kind = {
  name: 'category',
  available: () => true,
  steps: (tag) => [
    (lane, c) =>
      send(lane, `name=${tag}-0`, async () => {
        const a = await c.post('/api/categories', { name: `${tag}-0`, keyType: 'group', description: 'load' })
        if (a.status === 201) lane.id = a.body.id
        return a
      }),
    ...[1, 2, 3].map<Step>((i) => (lane, c) => send(lane, `name=${tag}-${i}`, () => c.put(`/api/categories/${lane.id}`, { name: `${tag}-${i}` }))),
    (lane, c) => send(lane, ABSENT, () => c.delete(`/api/categories/${lane.id}`)),
  ],
  async observe(lane) {
    const a = await lane.actor.session.get(`/api/categories/${lane.id}`)
    if (a.status === 404 && a.body.code === 'CATEGORY_NOT_FOUND') return ABSENT
    if (a.status !== 200) throw new Error(`category ${lane.id}: ${a.status} ${a.text}`)
    return `name=${a.body.name}`
  },
}

const accessKey: Kind = {
  name: 'access-key',
  available: () => true,
  sessionOnly: true,
  steps: (tag) => [
    (lane, c) =>
      send(lane, 'live', async () => {
        const a = await c.post('/api/access-keys', { name: tag, scopes: ['categories:read'] })
        if (a.status === 201) {
          lane.id = a.body.id
          lane.extra.key = a.body.key
        }
        return a
      }),
    (lane, c) => send(lane, ABSENT, () => c.delete(`/api/access-keys/${lane.id}`)),
  ],
  async observe(lane) {
    const listed = (await lane.actor.session.get('/api/access-keys')).body.some((k: any) => k.id === lane.id)
    const works = (await lane.actor.session.withKey(lane.extra.key).get('/api/categories')).status
    if (listed && works === 200) return 'live'
    if (!listed && works === 401) return ABSENT
    return `inconsistent listed=${listed} status=${works}`
  },
}

const entry: Kind = {
  name: 'entry',
  available: (m) => m.entries,
  steps: (tag) => [
    (lane, c) =>
      send(lane, `value=${tag}-0`, async () => {
        const a = await c.post('/api/entries', { categoryId: lane.actor.simpleCategoryId, name: tag, value: `${tag}-0`, environment: 'production' })
        if (a.status === 201) lane.id = a.body.id
        return a
      }),
    ...[1, 2, 3].map<Step>((i) => (lane, c) => send(lane, `value=${tag}-${i}`, () => c.put(`/api/entries/${lane.id}`, { value: `${tag}-${i}` }))),
    (lane, c) => send(lane, ABSENT, () => c.delete(`/api/entries/${lane.id}`)),
  ],
  async observe(lane) {
    const a = await lane.actor.session.post(`/api/entries/${lane.id}/reveal`)
    if (a.status === 404 && a.body.code === 'ENTRY_NOT_FOUND') return ABSENT
    if (a.status !== 200) throw new Error(`entry ${lane.id}: ${a.status} ${a.text}`)
    return `value=${a.body.value}`
  },
}

const twoFactor: Kind = {
  name: '2fa',
  available: (m) => m.twoFactor,
  steps: (tag) => [
    (lane, c) =>
      send(lane, `service=${tag}-0`, async () => {
        const a = await c.post('/api/2fa', { service: `${tag}-0`, accountName: 'load@example.test', secret: TOTP_SECRET })
        if (a.status === 201) lane.id = a.body.id
        return a
      }),
    ...[1, 2, 3].map<Step>(
      (i) => (lane, c) => send(lane, `service=${tag}-${i}`, () => c.put(`/api/2fa/${lane.id}`, { service: `${tag}-${i}`, secret: TOTP_SECRET })),
    ),
    (lane, c) => send(lane, ABSENT, () => c.delete(`/api/2fa/${lane.id}`)),
  ],
  async observe(lane) {
    const a = await lane.actor.session.post(`/api/2fa/${lane.id}/reveal`)
    if (a.status === 404 && a.body.code === 'TWO_FACTOR_NOT_FOUND') return ABSENT
    if (a.status !== 200 || !/^\d{6}$/.test(a.body.code)) throw new Error(`2fa ${lane.id}: ${a.status} ${a.text}`)
    return `service=${a.body.service}`
  },
}

const envFile: Kind = {
  name: 'env',
  available: (m) => m.envs,
  steps: (tag) => [
    (lane, c) =>
      send(lane, `project=${tag}`, async () => {
        const a = await c.post('/api/envs', { name: tag })
        if (a.status === 201) lane.id = a.body.data.id
        return a
      }),
    ...[1, 2, 3].map<Step>(
      (i) => (lane, c) =>
        send(lane, `content=${tag}-${i}`, async () => {
          const a = await c.post(`/api/envs/${lane.id}/files`, { fileType: 'env', content: `KEY=${tag}-${i}\n` })
          if (a.status < 300) lane.extra.fileId = a.body.data.id
          return a
        }),
    ),
    (lane, c) => send(lane, ABSENT, () => c.delete(`/api/envs/${lane.id}`)),
  ],
  async observe(lane) {
    const a = await lane.actor.session.get(`/api/envs/${lane.id}`)
    if (a.status === 404 && a.body.code === 'ENV_PROJECT_NOT_FOUND') return ABSENT
    if (a.status !== 200) throw new Error(`env ${lane.id}: ${a.status} ${a.text}`)
    const file = a.body.data.files.find((f: any) => f.fileType === 'env')
    if (!file) return `project=${a.body.data.name}`
    const revealed = await lane.actor.session.post(`/api/envs/${lane.id}/files/${file.id}/reveal`)
    if (revealed.status !== 200) throw new Error(`env file ${file.id}: ${revealed.status} ${revealed.text}`)
    return `content=${revealed.body.data.content.replace(/^KEY=|\n$/g, '')}`
  },
}

export const KINDS: Kind[] = [category, accessKey, entry, twoFactor, envFile]

export interface Workload {
  lanes: Lane[]
  /** Resolves when every lane has finished or broken off. */
  done: Promise<void>
  /** Acknowledged steps so far, over all lanes. */
  acked(): number
}

/**
 * Starts `count` lanes spread over the actors and every available kind. Steps of one lane go
 * one after another, each through a randomly chosen client of its user (session or key).
 * `keep`: lanes end at their last update instead of deleting their record.
 */
export function startWorkload(
  actors: Actor[],
  mods: Modules,
  count: number,
  tagPrefix: string,
  stopAt?: () => boolean,
  options: { keep?: boolean } = {},
): Workload {
  const kinds = KINDS.filter((k) => k.available(mods))
  const lanes: Lane[] = []
  const runs: Promise<void>[] = []
  for (let n = 0; n < count; n++) {
    const kind = kinds[n % kinds.length]
    const lane: Lane = { kind: kind.name, actor: actors[n % actors.length], sent: [], acked: 0, broken: false, extra: {} }
    lanes.push(lane)
    const all = kind.steps(`${tagPrefix}-${n}`)
    // The last step of every kind deletes the record.
    const steps = options.keep ? all.slice(0, -1) : all
    runs.push(
      (async () => {
        for (let i = 0; i < steps.length; i++) {
          if (stopAt?.()) return
          const client = kind.sessionOnly ? lane.actor.session : pick(lane.actor.writers)
          try {
            await steps[i](lane, client, i)
            lane.acked++
          } catch (error) {
            lane.broken = true
            if (!isConnectionError(error)) lane.extra.error = String((error as Error)?.message ?? error)
            return
          }
        }
      })(),
    )
  }
  return {
    lanes,
    done: Promise.all(runs).then(() => {}),
    acked: () => lanes.reduce((sum, lane) => sum + lane.acked, 0),
  }
}

function isConnectionError(error: unknown): boolean {
  const text = String((error as Error)?.message ?? error) + String((error as { code?: string })?.code ?? '')
  return /ECONNRESET|ECONNREFUSED|socket|closed|connect|aborted|ConnectionRefused|FailedToOpenSocket/i.test(text)
}

/** Steps of a lane whose resulting state the server may show now: the last acknowledged and any sent after it. */
export function allowedStates(lane: Lane, from = lane.acked - 1, to = lane.sent.length - 1): State[] {
  return lane.sent.slice(Math.max(from, 0), to + 1)
}

/** Checks every lane whose record was acknowledged as created; returns the mismatches. */
export async function verifyLanes(lanes: Lane[], allowed: (lane: Lane) => State[] = (lane) => allowedStates(lane)): Promise<string[]> {
  const problems: string[] = []
  for (const lane of lanes) if (lane.extra.error) problems.push(`${lane.kind}: ${lane.extra.error}`)
  const checked = lanes.filter((lane) => lane.acked > 0 && lane.id)
  for (let i = 0; i < checked.length; i += 25) {
    await Promise.all(
      checked.slice(i, i + 25).map(async (lane) => {
        const kind = KINDS.find((k) => k.name === lane.kind)!
        const seen = await kind.observe(lane)
        const ok = allowed(lane)
        if (!ok.includes(seen))
          problems.push(`${lane.kind} ${lane.id}: shows "${seen}", allowed ${JSON.stringify(ok)} (acked ${lane.acked} of ${lane.sent.length} sent)`)
      }),
    )
  }
  return problems
}

/** Every file under the data folder, relative paths. */
export function listFiles(dir: string, prefix = ''): string[] {
  const out: string[] = []
  for (const name of readdirSync(join(dir, prefix))) {
    const rel = prefix ? `${prefix}/${name}` : name
    if (statSync(join(dir, rel)).isDirectory()) out.push(...listFiles(dir, rel))
    else out.push(rel)
  }
  return out
}

/** Names of .json files under the folder that do not parse. */
export function unparsableJson(dir: string): string[] {
  return listFiles(dir)
    .filter((rel) => rel.endsWith('.json'))
    .filter((rel) => {
      try {
        JSON.parse(readFileSync(join(dir, rel), 'utf8'))
        return false
      } catch {
        return true
      }
    })
}
