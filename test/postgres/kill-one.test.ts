// kill -9 of one of two instances under load (issue 34): every write either instance acknowledged
// is in the database (read through the other, and through an instance started afterwards), nothing
// else is, and the other instance keeps answering, directly and behind the balancer.
import { afterAll, expect, test } from 'bun:test'
import { startBalancer, type Balancer } from '../support/caddy'
import { signUp, type Client } from '../support/client'
import { freshDatabase } from '../support/postgres'
import { removeDir, spawnServer, startTestServer, type SpawnedServer, type TestServer } from '../support/server'
import { at, describeOnPostgres, upstreamOf } from './support'

const cleanup: (() => Promise<unknown>)[] = []
afterAll(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => {})
})

describeOnPostgres({ caddy: true })('kill -9 of one instance', () => {
  test('under load: every acknowledged write is in the database; the other keeps answering', async () => {
    const url = await freshDatabase()
    const survivor: SpawnedServer = await spawnServer({ env: { SVC_DATABASE_URL: url } })
    cleanup.push(async () => {
      await survivor.stop()
      removeDir(survivor.dataDir)
    })
    const victim: SpawnedServer = await spawnServer({ env: { SVC_DATABASE_URL: url } })
    cleanup.push(async () => {
      await victim.kill()
      removeDir(victim.dataDir)
    })
    const lb: Balancer = await startBalancer([survivor.url, victim.url])
    cleanup.push(() => lb.stop())

    const user = await signUp(survivor.url)
    const category = await user.post('/api/categories', { name: 'Stripe', keyType: 'simple', envVarName: 'STRIPE_KEY' })
    expect(category.status).toBe(201)

    const sent = new Set<string>()
    const acknowledged: { id: string; name: string; value: string }[] = []
    const counts = { victimAcks: 0, survivorAfterKill: 0, survivorFailuresAfterKill: [] as string[], victimRefused: 0 }
    let killed = false
    let n = 0
    // Eight writers, each alternating between the instances (one vault: their commits race too).
    const writer = async (client: (i: number) => { base: string; client: Client }) => {
      while (counts.survivorAfterKill < 24) {
        const i = n++
        const { base, client: c } = client(i)
        const name = `load-${i}`
        const value = `sk_load_${i}_${crypto.randomUUID()}`
        sent.add(name)
        const afterKill = killed
        try {
          const answer = await c.post('/api/entries', { categoryId: category.body.id, name, value })
          if (answer.status === 201) {
            acknowledged.push({ id: answer.body.id, name, value })
            if (base === victim.url) counts.victimAcks++
            else if (afterKill) counts.survivorAfterKill++
          } else if (base === survivor.url && afterKill) counts.survivorFailuresAfterKill.push(`${answer.status} ${answer.text}`)
        } catch (error) {
          // The victim's connection refused or cut: not acknowledged.
          if (base === survivor.url) counts.survivorFailuresAfterKill.push(String(error))
          else counts.victimRefused++
        }
        if (!killed && counts.victimAcks >= 24) {
          killed = true
          await victim.kill()
        }
      }
    }
    const target = (i: number) => {
      const base = i % 2 === 0 ? victim.url : survivor.url
      return { base, client: at(user, base) }
    }
    await Promise.all(Array.from({ length: 8 }, () => writer(target)))
    expect(killed).toBe(true)
    expect(counts.survivorFailuresAfterKill).toEqual([])
    expect(counts.victimRefused).toBeGreaterThan(0)

    // Behind the balancer, every request answers (the dead instance's dial fails over).
    for (let i = 0; i < 6; i++) {
      const answer = await at(user, lb.url).get('/api/entries')
      expect(answer.status).toBe(200)
      expect(upstreamOf(answer)).toBe(new URL(survivor.url).host)
    }

    // Read through the survivor and through an instance started now (nothing but the database).
    const fresh: TestServer = await startTestServer({ env: { SVC_DATABASE_URL: url } })
    cleanup.push(async () => {
      await fresh.stop()
      removeDir(fresh.dataDir)
    })
    for (const base of [survivor.url, fresh.url]) {
      const listed = (await at(user, base).get('/api/entries')).body as { id: string; name: string }[]
      const ids = new Set(listed.map((entry) => entry.id))
      expect({ base, missing: acknowledged.filter((entry) => !ids.has(entry.id)) }).toEqual({ base, missing: [] })
      // Nothing but what was sent (a write cut by the kill is there whole or not at all).
      expect(listed.filter((entry) => !sent.has(entry.name))).toEqual([])
    }
    for (const entry of acknowledged) {
      const revealed = await at(user, fresh.url).post(`/api/entries/${entry.id}/reveal`)
      expect(revealed.body.value).toBe(entry.value)
    }
    console.log(`acknowledged ${acknowledged.length} writes (${counts.victimAcks} by the killed instance), ${counts.victimRefused} refused by it`)
  }, 60_000)
})
