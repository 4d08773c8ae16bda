// The built-in classifier: no network, answers when there is no API key or the model fails.
// Import: known services (with their Simple Icons slugs) and shared name prefixes become groups,
// the rest simple keys. Extract: prompt words matched against entry, category and variable names.
import { nameKey } from '../../domain/rules'
import type { Environment } from '../../store/records'

export type SuggestedKeyType = 'simple' | 'group'

/** One classified key of an import answer. */
export interface ImportKey {
  name: string
  categoryName: string
  keyType: SuggestedKeyType
  envVarName: string
  /** The field of a group category holding this key (the variable name itself, so the export writes it back). */
  field?: string
  icon?: string
}

interface Service {
  name: string
  icon?: string
  /** Name prefixes (after a framework prefix such as NEXT_PUBLIC_ is removed). */
  prefixes: string[]
  /** Whole variable names that belong to the service. */
  names?: string[]
}

// Slugs as Simple Icons 16 spells them (https://simpleicons.org); brands that left the set (OpenAI, AWS, Heroku,
// SendGrid, Slack, Twilio) have no icon. test/modules/icon-slugs.test.ts checks each one exists.
export const SERVICES: Service[] = [
  { name: 'OpenAI', prefixes: ['OPENAI'] },
  { name: 'Anthropic', icon: 'anthropic', prefixes: ['ANTHROPIC', 'CLAUDE'] },
  { name: 'Stripe', icon: 'stripe', prefixes: ['STRIPE'] },
  { name: 'GitHub', icon: 'github', prefixes: ['GITHUB', 'GH'] },
  { name: 'GitLab', icon: 'gitlab', prefixes: ['GITLAB'] },
  { name: 'Supabase', icon: 'supabase', prefixes: ['SUPABASE'] },
  { name: 'Resend', icon: 'resend', prefixes: ['RESEND'] },
  {
    name: 'Postgres',
    icon: 'postgresql',
    prefixes: ['POSTGRES', 'POSTGRESQL', 'PG'],
    names: ['DATABASE_URL', 'PGHOST', 'PGPORT', 'PGUSER', 'PGPASSWORD', 'PGDATABASE'],
  },
  { name: 'MySQL', icon: 'mysql', prefixes: ['MYSQL'] },
  { name: 'MongoDB', icon: 'mongodb', prefixes: ['MONGODB', 'MONGO'] },
  { name: 'Redis', icon: 'redis', prefixes: ['REDIS'] },
  { name: 'Upstash', icon: 'upstash', prefixes: ['UPSTASH'] },
  { name: 'Twilio', prefixes: ['TWILIO'] },
  { name: 'SendGrid', prefixes: ['SENDGRID'] },
  { name: 'Sentry', icon: 'sentry', prefixes: ['SENTRY'] },
  { name: 'Cloudflare', icon: 'cloudflare', prefixes: ['CLOUDFLARE', 'CF'] },
  { name: 'Vercel', icon: 'vercel', prefixes: ['VERCEL'] },
  { name: 'Google', icon: 'google', prefixes: ['GOOGLE', 'GCP', 'GCLOUD', 'GEMINI'] },
  { name: 'Slack', prefixes: ['SLACK'] },
  { name: 'Discord', icon: 'discord', prefixes: ['DISCORD'] },
  { name: 'Mailgun', icon: 'mailgun', prefixes: ['MAILGUN'] },
  { name: 'Algolia', icon: 'algolia', prefixes: ['ALGOLIA'] },
  { name: 'Firebase', icon: 'firebase', prefixes: ['FIREBASE'] },
  { name: 'AWS', prefixes: ['AWS', 'S3'] },
  { name: 'Clerk', icon: 'clerk', prefixes: ['CLERK'] },
  { name: 'Auth0', icon: 'auth0', prefixes: ['AUTH0'] },
  { name: 'PostHog', icon: 'posthog', prefixes: ['POSTHOG'] },
  { name: 'Datadog', icon: 'datadog', prefixes: ['DATADOG', 'DD'] },
  { name: 'Neon', icon: 'neon', prefixes: ['NEON'] },
  { name: 'PlanetScale', icon: 'planetscale', prefixes: ['PLANETSCALE'] },
  { name: 'Hugging Face', icon: 'huggingface', prefixes: ['HUGGINGFACE', 'HF'] },
  { name: 'Replicate', icon: 'replicate', prefixes: ['REPLICATE'] },
  { name: 'Mistral AI', icon: 'mistralai', prefixes: ['MISTRAL'] },
  { name: 'Pusher', icon: 'pusher', prefixes: ['PUSHER'] },
  { name: 'Shopify', icon: 'shopify', prefixes: ['SHOPIFY'] },
  { name: 'PayPal', icon: 'paypal', prefixes: ['PAYPAL'] },
  { name: 'DigitalOcean', icon: 'digitalocean', prefixes: ['DIGITALOCEAN'] },
  { name: 'Netlify', icon: 'netlify', prefixes: ['NETLIFY'] },
  { name: 'Heroku', prefixes: ['HEROKU'] },
  { name: 'Docker', icon: 'docker', prefixes: ['DOCKER', 'DOCKERHUB'] },
  { name: 'Telegram', icon: 'telegram', prefixes: ['TELEGRAM'] },
  { name: 'Notion', icon: 'notion', prefixes: ['NOTION'] },
  { name: 'Airtable', icon: 'airtable', prefixes: ['AIRTABLE'] },
  { name: 'Contentful', icon: 'contentful', prefixes: ['CONTENTFUL'] },
  { name: 'Sanity', icon: 'sanity', prefixes: ['SANITY'] },
  { name: 'Mapbox', icon: 'mapbox', prefixes: ['MAPBOX'] },
  { name: 'Mailchimp', icon: 'mailchimp', prefixes: ['MAILCHIMP'] },
  { name: 'Linear', icon: 'linear', prefixes: ['LINEAR'] },
  { name: 'Okta', icon: 'okta', prefixes: ['OKTA'] },
  { name: 'Cloudinary', icon: 'cloudinary', prefixes: ['CLOUDINARY'] },
  { name: 'Brevo', icon: 'brevo', prefixes: ['BREVO', 'SENDINBLUE'] },
  { name: 'Lemon Squeezy', icon: 'lemonsqueezy', prefixes: ['LEMONSQUEEZY', 'LEMON_SQUEEZY'] },
  { name: 'Paddle', icon: 'paddle', prefixes: ['PADDLE'] },
  { name: 'Convex', icon: 'convex', prefixes: ['CONVEX'] },
  { name: 'Turso', icon: 'turso', prefixes: ['TURSO'] },
  { name: 'Appwrite', icon: 'appwrite', prefixes: ['APPWRITE'] },
  { name: 'New Relic', icon: 'newrelic', prefixes: ['NEW_RELIC', 'NEWRELIC'] },
  { name: 'Grafana', icon: 'grafana', prefixes: ['GRAFANA'] },
  { name: 'Elasticsearch', icon: 'elasticsearch', prefixes: ['ELASTICSEARCH', 'ELASTIC'] },
  { name: 'RabbitMQ', icon: 'rabbitmq', prefixes: ['RABBITMQ', 'AMQP'] },
  { name: 'Kafka', icon: 'apachekafka', prefixes: ['KAFKA'] },
  { name: 'Prisma', icon: 'prisma', prefixes: ['PRISMA'] },
  { name: 'NextAuth', prefixes: ['NEXTAUTH'] },
]

/** Framework prefixes that make a variable public; they say nothing about the service. */
const FRAMEWORK_PREFIXES = ['NEXT_PUBLIC_', 'VITE_', 'REACT_APP_', 'EXPO_PUBLIC_', 'PUBLIC_', 'NUXT_PUBLIC_', 'NUXT_', 'GATSBY_']

/** Prefixes too generic to make a group of their own. */
const GENERIC_PREFIXES = new Set(['APP', 'API', 'SECRET', 'KEY', 'TOKEN', 'DEFAULT', 'MY', 'THE', 'PUBLIC', 'PRIVATE', 'NEXT', 'NODE', 'ENV', 'X'])

const stripFramework = (name: string) => {
  const upper = name.toUpperCase()
  for (const prefix of FRAMEWORK_PREFIXES) if (upper.startsWith(prefix) && upper.length > prefix.length) return upper.slice(prefix.length)
  return upper
}

export function serviceByName(name: string): Service | undefined {
  const key = nameKey(name)
  return SERVICES.find((s) => nameKey(s.name) === key)
}

/**
 * The known service of a variable, from its name alone. Never from its value: the category names
 * this gives are sent to the model later (extract), and a value's scheme (`mongodb+srv://`) is
 * part of the value.
 */
export function serviceOf(name: string): Service | undefined {
  const bare = stripFramework(name)
  const upper = name.toUpperCase()
  for (const service of SERVICES) {
    if (service.names?.includes(upper) || service.names?.includes(bare)) return service
    if (service.prefixes.some((p) => bare === p || bare.startsWith(`${p}_`))) return service
  }
  return undefined
}

/**
 * The group that takes a project's plain variables (PORT, NODE_ENV, DB_PASSWORD, ...),
 * the ones no service or shared prefix claims. Each once had a category of its own: eleven
 * categories for one app. Now one group holds them, one entry per project and environment.
 */
export const PLAIN_VARIABLES = 'Variables'

const firstToken = (name: string) => stripFramework(name).split('_').filter(Boolean)[0] ?? ''

/** Groups keys the way a person would file them. Every input name appears once, in input order. */
export function classifyKeys(keys: { name: string }[]): ImportKey[] {
  const bucketOf = new Map<string, { categoryName: string; icon?: string }>()
  const members = new Map<string, string[]>()
  const join = (name: string, bucket: string, categoryName: string, icon?: string) => {
    bucketOf.set(name, { categoryName, icon })
    members.set(bucket, [...(members.get(bucket) ?? []), name])
  }
  const unknown: string[] = []
  for (const key of keys) {
    const service = serviceOf(key.name)
    if (service) join(key.name, `service:${service.name}`, service.name, service.icon)
    else unknown.push(key.name)
  }
  // Unknown names sharing a first word (JWT_SECRET + JWT_ISSUER) form a group named by that word.
  const prefixCount = new Map<string, number>()
  for (const name of unknown) {
    const token = firstToken(name)
    if (token.length >= 2 && !GENERIC_PREFIXES.has(token) && token !== stripFramework(name)) {
      prefixCount.set(token, (prefixCount.get(token) ?? 0) + 1)
    }
  }
  for (const name of unknown) {
    const token = firstToken(name)
    if ((prefixCount.get(token) ?? 0) >= 2) join(name, `prefix:${token}`, token)
    else join(name, 'plain', PLAIN_VARIABLES)
  }
  return keys.map(({ name }) => {
    const { categoryName, icon } = bucketOf.get(name)!
    const bucket = [...members.values()].find((list) => list.includes(name))!
    // The plain variables are a group even when there is one: the next import adds to it.
    const isGroup = bucket.length > 1 || categoryName === PLAIN_VARIABLES
    return {
      name,
      categoryName,
      keyType: isGroup ? 'group' : 'simple',
      envVarName: name,
      ...(isGroup ? { field: name } : {}),
      ...(icon ? { icon } : {}),
    } satisfies ImportKey
  })
}

// ---- extract ----

/** What the classifier (and the model) may know of an entry: names only. */
export interface EntryMetadata {
  id: string
  name: string
  category: string
  keyType: string
  envVarName: string | null
  fields: string[]
  environment: Environment | null
}

const ENVIRONMENT_WORDS: Record<string, Environment> = {
  production: 'production',
  prod: 'production',
  live: 'production',
  staging: 'staging',
  stage: 'staging',
  preview: 'staging',
  development: 'development',
  dev: 'development',
  local: 'development',
  localhost: 'development',
}

/** Words that match too much to pick anything by. */
const STOP_WORDS = new Set(
  'a an and the for with using use uses of on in to my our your its it is be that this app apps project service services api key keys secret secrets token tokens url uri id env variable variables config need needs needed all every everything whole full entire complete some get give me please new public private next js ts'.split(
    ' ',
  ),
)

const words = (text: string) =>
  text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean)

const wordsMatch = (a: string, b: string) => a === b || (a.length >= 4 && b.length >= 4 && (a.startsWith(b) || b.startsWith(a)))

/** The environments a prompt names (production, prod, staging, dev, ...). */
export function promptEnvironments(prompt: string): Set<Environment> {
  const found = new Set<Environment>()
  for (const word of words(prompt)) if (ENVIRONMENT_WORDS[word]) found.add(ENVIRONMENT_WORDS[word])
  return found
}

/**
 * The entries a prompt asks for: those whose category, variable or field names or service a prompt
 * word names (or, when none is named, whose project name it names); among several of one category
 * the named project's win, and environment words narrow the choice.
 */
export function pickEntries(prompt: string, entries: EntryMetadata[]): string[] {
  const environments = promptEnvironments(prompt)
  const promptWords = words(prompt).filter((w) => !STOP_WORDS.has(w) && !ENVIRONMENT_WORDS[w] && w.length >= 2)
  const mentioned = (texts: string[]) => {
    const vocabulary = texts.flatMap(words).filter((w) => !STOP_WORDS.has(w))
    return promptWords.some((p) => vocabulary.some((v) => wordsMatch(p, v)))
  }
  const nameMatch = (entry: EntryMetadata) => mentioned([entry.name])
  const serviceMatch = (entry: EntryMetadata) => {
    const service = serviceOf(entry.envVarName ?? entry.fields[0] ?? '') ?? serviceByName(entry.category)
    return mentioned([entry.category, entry.envVarName ?? '', ...entry.fields, service?.name ?? '', service?.icon ?? ''])
  }
  // Services named in the prompt decide; a project name alone ("the blog") takes all its entries.
  let picked = entries.filter(serviceMatch)
  if (picked.length === 0) picked = entries.filter(nameMatch)
  // Only environment words ("everything for production"): every entry of those environments.
  if (picked.length === 0 && promptWords.length === 0 && environments.size > 0) picked = entries
  const byCategory = new Map<string, EntryMetadata[]>()
  for (const entry of picked) byCategory.set(entry.category, [...(byCategory.get(entry.category) ?? []), entry])
  const chosen = new Set<string>()
  for (const list of byCategory.values()) {
    let candidates = list
    // The project the prompt names wins over other projects using the same category.
    if (candidates.some(nameMatch)) candidates = candidates.filter(nameMatch)
    if (environments.size > 0) {
      candidates = candidates.filter((e) => e.environment === null || environments.has(e.environment))
      // An entry for the named environment wins over an environment-less one.
      if (candidates.some((e) => e.environment !== null)) candidates = candidates.filter((e) => e.environment !== null)
    }
    for (const entry of candidates) chosen.add(entry.id)
  }
  return entries.filter((e) => chosen.has(e.id)).map((e) => e.id)
}
