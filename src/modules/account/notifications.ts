// Due-item notifications: a user may set a webhook (GET/PUT /api/account/notifications,
// session only). Once a UTC day, when something of theirs has expired, is due for rotation or will
// be within 14 days, the webhook receives one JSON POST listing those items by name, category and
// date (never a value), signed with X-Svc-Signature (hex HMAC-SHA-256 of the body) when a secret
// is set. A failed delivery is tried again with back-off (1, 5, 25 minutes, 2 hours), then given up
// until the next day. The settings live in the owner's vault document, the secret sealed.
import { Elysia } from 'elysia'
import { isIP } from 'node:net'
import { requireFreshProof } from '../../auth/fresh-proof'
import type { Accounts } from '../../auth/accounts'
import { authGuard, type GuardDeps } from '../../auth/guard'
import type { Config } from '../../config'
import type { Logger } from '../../http/error-handler'
import { AppError } from '../../http/errors'
import { errorResponses } from '../../http/schemas'
import { indexById } from '../../store/by-id'
import type { NotificationSettingsRecord, VaultDocument } from '../../store/records'
import type { DataStore } from '../../store/data-store'
import type { Vaults } from '../../vault-access'
import { dueStatus, nextDue, type DueStatus } from '../lifecycle/due'
import { NotificationSettingsSchema, UpdateNotificationsBody } from '../lifecycle/model'
import { embeddedIPv4, isLocalName, isPermittedAddress, isThisHost, permittedAddresses, portOf, postTo, type TargetCheck } from './webhook-target'

const MINUTE = 60_000
/** Waits after the 1st, 2nd, 3rd and 4th failed attempt of a day; the 5th failure ends the day. */
const BACKOFF_MS = [1, 5, 25, 125].map((m) => m * MINUTE)
const DELIVERY_TIMEOUT_MS = 10_000
const TICK_MS = MINUTE

export interface DueItem {
  kind: 'entry' | 'twoFactor'
  name: string
  category: string | null
  environment: string | null
  dueStatus: Exclude<DueStatus, 'ok'>
  reason: 'expiry' | 'rotation'
  dueAt: string
}

/** Everything of the vault that is not `ok`, soonest first (names and dates only). */
export function dueItems(data: VaultDocument, now: number): DueItem[] {
  const items: (DueItem & { at: number })[] = []
  const categories = indexById(data.categories)
  for (const entry of data.entries) {
    const status = dueStatus(entry, now)
    const next = nextDue(entry)
    if (status === 'ok' || !next) continue
    items.push({
      kind: 'entry',
      name: entry.name,
      category: categories[entry.categoryId]?.name ?? null,
      environment: entry.environment,
      dueStatus: status,
      reason: next.reason,
      dueAt: new Date(next.at).toISOString(),
      at: next.at,
    })
  }
  for (const token of data.twoFactor) {
    const status = dueStatus(token, now)
    const next = nextDue(token)
    if (status === 'ok' || !next) continue
    items.push({
      kind: 'twoFactor',
      name: `${token.service} (${token.accountName})`,
      category: null,
      environment: null,
      dueStatus: status,
      reason: next.reason,
      dueAt: new Date(next.at).toISOString(),
      at: next.at,
    })
  }
  return items.sort((a, b) => a.at - b.at).map(({ at: _at, ...item }) => item)
}

const EMPTY: NotificationSettingsRecord = {
  webhookUrl: null,
  encryptedSecret: null,
  lastDelivery: null,
  day: null,
  attempts: 0,
  done: false,
  nextAttemptAt: null,
}

const invalidUrl = (problem: string) => new AppError(400, 'INVALID_WEBHOOK_URL', `webhookUrl: ${problem}`)

/** This machine's own interface addresses (a vault listening on 0.0.0.0 answers on each). */
function ownAddresses(): Set<string> {
  // Loaded when first needed (a delivery or a PUT), not at start: idle memory.
  const { networkInterfaces } = process.getBuiltinModule('node:os')
  return new Set(Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address.toLowerCase())))
}

/** An address that reaches this machine: loopback in any spelling, or one of its interfaces. */
function isOwnAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').toLowerCase()
  if (isIP(bare) === 0) return false
  return isThisHost(bare) || ownAddresses().has(bare) || ownAddresses().has(embeddedIPv4(bare) ?? '')
}

/** Host names that reach this machine whatever the port. */
function isLocalHost(hostname: string): boolean {
  return isLocalName(hostname.replace(/^\[|\]$/g, '')) || isOwnAddress(hostname)
}

/** At most this many deliveries at once: one slow receiver holds up one slot, never the round. */
const PARALLEL_DELIVERIES = 8

export interface NotifierDeps {
  vaults: Vaults
  store: DataStore
  config: Config
  now: () => number
  log: Logger
}

export class Notifier {
  /** Users known to have a webhook (filled by the background pass and by PUT). */
  private readonly watched = new Set<string>()
  /** The port this server listens on, once it does. */
  listeningPort: number | null = null
  private readonly running = new Map<string, Promise<void>>()
  /** Deliveries on the network now, and those waiting for a slot (PARALLEL_DELIVERIES in all). */
  private sending = 0
  private readonly waiting: (() => void)[] = []

  constructor(private readonly deps: NotifierDeps) {}

  private get ports(): number[] {
    return [this.listeningPort, this.deps.config.port].filter((p): p is number => typeof p === 'number' && p > 0)
  }

  /** The vault itself, by its public origin, or by a local name and the port it listens on. */
  private isSelf(url: URL, requestHost?: string | null): boolean {
    if (url.origin === this.deps.config.origin) return true
    if (requestHost && url.host.toLowerCase() === requestHost.toLowerCase()) return true
    return isLocalHost(url.hostname) && this.ports.includes(portOf(url))
  }

  /** Where deliveries may go: public addresses, SVC_WEBHOOK_ALLOW's, never the vault itself. */
  private get target(): TargetCheck {
    return { allow: this.deps.config.webhookAllow, isSelf: (address, port) => this.ports.includes(port) && isOwnAddress(address) }
  }

  /** A usable webhook URL, or 400 INVALID_WEBHOOK_URL. */
  checkUrl(raw: string, requestHost?: string | null): string {
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      throw invalidUrl('must be an absolute http:// or https:// URL')
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidUrl('only http:// and https:// URLs are accepted')
    if (url.username || url.password) throw invalidUrl('must not carry a user name or password')
    if (this.isSelf(url, requestHost)) throw invalidUrl("must not be this vault's own address")
    // A literal address or a local name is judged now; any other name at each delivery, once
    // resolved (its answer is not reported back: that would map the server's network).
    const host = url.hostname.replace(/^\[|\]$/g, '')
    const literal = isIP(host) !== 0 ? [host] : isLocalName(host) ? ['127.0.0.1', '::1'] : []
    if (literal.length > 0 && !literal.some((address) => isPermittedAddress(address, this.target.allow))) {
      throw invalidUrl('must not be a loopback, private, link-local or other internal address (the operator can allow a range with SVC_WEBHOOK_ALLOW)')
    }
    return url.href
  }

  async settings(userId: string) {
    const { data } = await this.deps.vaults.open(userId)
    const s = data.notifications ?? EMPTY
    // Delivered or failed, nothing more: an HTTP status or "could not connect" would make the
    // webhook a scanner of the server's network.
    const last = s.lastDelivery
    return {
      webhookUrl: s.webhookUrl,
      hasSecret: s.encryptedSecret !== null,
      lastDelivery: last && { at: last.at, status: last.status, attempts: last.attempts },
    }
  }

  async update(userId: string, input: { webhookUrl: string | null; secret?: string | null }, requestHost: string | null) {
    const webhookUrl = input.webhookUrl === null ? null : this.checkUrl(input.webhookUrl, requestHost)
    const { doc, cipher } = await this.deps.vaults.open(userId)
    const sealed = typeof input.secret === 'string' ? cipher.seal('webhook', userId, input.secret) : input.secret
    await doc.update((data, write) => {
      const current = data.notifications ?? EMPTY
      const urlChanged = current.webhookUrl !== webhookUrl
      write.set('notifications', {
        ...current,
        webhookUrl,
        encryptedSecret: webhookUrl === null ? null : sealed === undefined ? current.encryptedSecret : sealed,
        // A new address starts its day afresh: the first delivery goes at once.
        ...(urlChanged ? { day: null, attempts: 0, done: false, nextAttemptAt: null, lastDelivery: null } : {}),
      })
    })
    if (webhookUrl) {
      this.watched.add(userId)
      // Delivered at once (in the background) when something is due, not only at the next tick.
      setTimeout(() => void this.deliver(userId).catch(() => {}), 0)
    } else this.watched.delete(userId)
    return this.settings(userId)
  }

  /** Finds every user with a webhook (each vault on disk; the background pass). */
  async scan(): Promise<void> {
    for (const userId of await this.deps.store.vaultIds()) {
      if (this.deps.store.wasDeleted(userId)) continue
      const { data } = await this.deps.vaults.open(userId)
      if (data.notifications?.webhookUrl) this.watched.add(userId)
    }
  }

  /** Stops delivering to a deleted account. */
  forget(userId: string): void {
    this.watched.delete(userId)
  }

  /**
   * One delivery round over the users with a webhook, PARALLEL_DELIVERIES at a time. With several
   * instances on one database, one round at a time over all of them (an advisory lock: a round
   * started meanwhile elsewhere is skipped; the next finds today's delivery done in the vault).
   * Answers false when skipped.
   */
  async tick(): Promise<boolean> {
    const ran = await this.deps.store.state.exclusive('webhook-round', async () => {
      const queue = [...this.watched]
      const worker = async () => {
        for (let userId = queue.shift(); userId !== undefined; userId = queue.shift()) {
          await this.deliver(userId).catch((error) => this.deps.log(`error: webhook delivery failed: ${(error as Error)?.message ?? error}`))
        }
      }
      await Promise.all(Array.from({ length: Math.min(PARALLEL_DELIVERIES, queue.length) }, worker))
      return true
    })
    return ran === true
  }

  /** Runs one delivery's network part when a slot is free: overlapping rounds and PUTs share the cap. */
  private async inSlot<T>(work: () => Promise<T>): Promise<T> {
    while (this.sending >= PARALLEL_DELIVERIES) await new Promise<void>((wake) => this.waiting.push(wake))
    this.sending++
    try {
      return await work()
    } finally {
      this.sending--
      this.waiting.shift()?.()
    }
  }

  /** Today's delivery for this user when it is due (one at a time per user). */
  deliver(userId: string): Promise<void> {
    const running = this.running.get(userId)
    if (running) return running
    const attempt = this.attempt(userId).finally(() => this.running.delete(userId))
    this.running.set(userId, attempt)
    return attempt
  }

  private async attempt(userId: string): Promise<void> {
    const { doc, data, cipher } = await this.deps.vaults.open(userId)
    const settings = data.notifications
    if (!settings?.webhookUrl) return
    const now = this.deps.now()
    const day = new Date(now).toISOString().slice(0, 10)
    const state = settings.day === day ? settings : { ...settings, day, attempts: 0, done: false, nextAttemptAt: null }
    if (state.done || (state.nextAttemptAt && Date.parse(state.nextAttemptAt) > now)) return
    const items = dueItems(data, now)
    if (items.length === 0) {
      // Nothing due today: nothing sent.
      await doc.update((current, write) => write.set('notifications', { ...current.notifications!, day, attempts: 0, done: true, nextAttemptAt: null }))
      return
    }
    const url = settings.webhookUrl
    const body = JSON.stringify({ event: 'due_items', generatedAt: new Date(now).toISOString(), count: items.length, items })
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'svc-vault' }
    const secret = settings.encryptedSecret ? cipher.open('webhook', userId, settings.encryptedSecret) : null
    if (secret !== null) headers['x-svc-signature'] = new Bun.CryptoHasher('sha256', secret).update(body).digest('hex')
    const outcome = await this.post(userId, url, headers, body)
    const attempts = state.attempts + 1
    const delivered = outcome === 'delivered'
    const done = delivered || attempts > BACKOFF_MS.length
    await doc.update((current, write) => {
      // The address may have changed meanwhile: then this attempt is not its history.
      if (current.notifications?.webhookUrl !== url) return
      write.set('notifications', {
        ...current.notifications,
        day,
        attempts,
        done,
        nextAttemptAt: done ? null : new Date(now + BACKOFF_MS[attempts - 1]).toISOString(),
        lastDelivery: { at: new Date(now).toISOString(), status: delivered ? 'delivered' : 'failed', attempts },
      })
    })
  }

  /** One POST to a user's webhook through the address check, when a slot is free. */
  private async post(userId: string, url: string, headers: Record<string, string>, body: string) {
    const target = new URL(url)
    const outcome = await this.inSlot(async () => {
      const started = Date.now()
      const [address] = await permittedAddresses(target, this.target, DELIVERY_TIMEOUT_MS)
      return address === undefined
        ? 'refused'
        : await postTo(target, address, this.target, headers, body, Math.max(1000, DELIVERY_TIMEOUT_MS - (Date.now() - started)))
    })
    // The why is for the operator's log only (never the URL: it may hold a token).
    if (outcome === 'refused')
      this.deps.log(`webhook delivery for user ${userId} refused: ${target.hostname} is not a public address (SVC_WEBHOOK_ALLOW can allow an internal range)`)
    return outcome
  }

  /**
   * A security alert to the user's webhook, when one is set (the second step locked):
   * one signed JSON POST `{ event, generatedAt, ... }`, sent once, apart from the daily due items
   * (their delivery state is not touched). Resolves whether or not it was delivered.
   */
  async alert(userId: string, event: string, fields: Record<string, unknown>): Promise<boolean> {
    const { data, cipher } = await this.deps.vaults.open(userId)
    const settings = data.notifications
    if (!settings?.webhookUrl) return false
    const url = settings.webhookUrl
    const body = JSON.stringify({ event, generatedAt: new Date(this.deps.now()).toISOString(), ...fields })
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'svc-vault' }
    const secret = settings.encryptedSecret ? cipher.open('webhook', userId, settings.encryptedSecret) : null
    if (secret !== null) headers['x-svc-signature'] = new Bun.CryptoHasher('sha256', secret).update(body).digest('hex')
    return (await this.post(userId, url, headers, body)) === 'delivered'
  }
}

/** The one notifier of a vault's services, built by openVault (routes, jobs and alerts share it). */
export function createNotifier(deps: NotifierDeps & { accounts: Accounts }): Notifier {
  const notifier = new Notifier(deps)
  // A deleted account's webhook is not delivered to again (its vault would come back).
  deps.accounts.onUserRemoved((userId) => notifier.forget(userId))
  return notifier
}

export function notificationRoutes(deps: GuardDeps & { notifier: Notifier }) {
  const { notifier } = deps
  let timer: ReturnType<typeof setInterval> | undefined
  return new Elysia({ prefix: '/api/account/notifications', tags: ['Notifications'] })
    .use(authGuard(deps))
    .get('/', ({ auth }) => notifier.settings(auth.userId), {
      auth: 'session',
      response: { 200: NotificationSettingsSchema, ...errorResponses() },
      detail: {
        operationId: 'getNotificationSettings',
        summary: 'Your due-items webhook and its last delivery (session only; never the secret)',
      },
    })
    .put(
      '/',
      async ({ auth, audit, body, request }) => {
        // Where the vault sends its reminders outlives the session.
        requireFreshProof(deps.accounts, auth)
        const settings = await notifier.update(auth.userId, body, request.headers.get('host'))
        // Which fields were sent, and whether a webhook is set: never its URL (it may hold a token) or secret.
        await audit('notifications.update', [{ kind: 'user', id: auth.userId, name: null }], {
          fields: Object.keys(body).sort(),
          webhook: settings.webhookUrl !== null,
        })
        return settings
      },
      {
        auth: 'session',
        body: UpdateNotificationsBody,
        response: { 200: NotificationSettingsSchema, ...errorResponses(400, 413) },
        detail: {
          operationId: 'updateNotificationSettings',
          summary: 'Set or clear the due-items webhook (session only)',
          description:
            "Once a UTC day (and at once after it is set), when entries or 2FA tokens have expired, are due for rotation or will be within 14 days, the URL receives one JSON POST `{ event: 'due_items', generatedAt, count, items: [{ kind, name, category, environment, dueStatus, reason, dueAt }] }`, never a value. With a secret, `X-Svc-Signature` holds the hex HMAC-SHA-256 of the body under it. A failed delivery is retried after 1, 5, 25 and 125 minutes. Only http(s) URLs to public addresses: this vault's own address, and loopback, private, link-local, unique-local, multicast, unspecified and IPv4-mapped addresses in any notation are refused (400 INVALID_WEBHOOK_URL) unless the operator allows a range with SVC_WEBHOOK_ALLOW; a name is resolved at each delivery, the connection made to the address checked, and redirects are not followed. `lastDelivery` says delivered or failed, nothing more. `secret` omitted keeps the current one; null removes it.",
        },
      },
    )
    .onStart(({ server }) => {
      notifier.listeningPort = server?.port ?? null
      // Users with a webhook are found by the background pass (lifecycleJobs) and by PUT.
      // A database away: this round is skipped, the next one tries again.
      timer = setInterval(() => void notifier.tick().catch(() => {}), TICK_MS)
      timer.unref?.()
    })
    .onStop(() => clearInterval(timer))
}
