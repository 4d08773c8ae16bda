// The pasted-config parser and the built-in classifier, on real-world files.
import { describe, expect, test } from 'bun:test'
import { parse as dotenvParse } from 'dotenv'
import { classifyKeys, pickEntries, type EntryMetadata } from '../../src/modules/ai/classifier'
import { parseConfig } from '../../src/modules/ai/parse-config'

const asObject = (text: string) => Object.fromEntries(parseConfig(text).keys.map((k) => [k.name, k.value]))

export const NEXT_ENV_LOCAL = `# Created by Vercel CLI
NEXT_PUBLIC_SUPABASE_URL=https://abcd.supabase.co
NEXT_PUBLIC_SUPABASE_ANON_KEY=eyJhbGciOiJIUzI1NiJ9.anon-part
SUPABASE_SERVICE_ROLE_KEY="eyJhbGciOiJIUzI1NiJ9.service-part"
OPENAI_API_KEY=sk-proj-Abc123xyz
RESEND_API_KEY=re_9f8e7d6c
STRIPE_SECRET_KEY=sk_test_51HxYz
STRIPE_WEBHOOK_SECRET=whsec_5up3r
NEXTAUTH_URL=http://localhost:3000
NEXTAUTH_SECRET='s3cr3t with spaces'
DATABASE_URL="postgresql://app:p%40ss@db.example.com:5432/app?schema=public"
`

const COMPOSE_ENV = `# .env for docker compose
COMPOSE_PROJECT_NAME=shop

# database
POSTGRES_USER=shop
POSTGRES_PASSWORD=ch4ng3-me!
POSTGRES_DB=shop
REDIS_URL=redis://redis:6379/0
TZ=Europe/Berlin
EMPTY=
SPACED = around equals
`

const QUOTES_AND_HASHES = `PASSWORD="p#ss'word"
TOKEN='abc#def'
BACKTICK=\`it's "quoted" #1\`
UNQUOTED=value # a comment
URL_WITH_HASH=http://example.com/#anchor
export SHELL_STYLE="exported value"
export   SPACED_EXPORT=yes
`

const PEM = `-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7
VJTUt9Us8cKjMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNb
-----END PRIVATE KEY-----`

describe('parseConfig: .env as dotenv reads it', () => {
  test('a Next.js .env.local', () => {
    const { format, keys } = parseConfig(NEXT_ENV_LOCAL)
    expect(format).toBe('env')
    expect(asObject(NEXT_ENV_LOCAL)).toEqual(dotenvParse(NEXT_ENV_LOCAL))
    expect(keys.map((k) => k.name)).toEqual(Object.keys(dotenvParse(NEXT_ENV_LOCAL)))
    expect(asObject(NEXT_ENV_LOCAL).NEXTAUTH_SECRET).toBe('s3cr3t with spaces')
  })

  test('a Docker Compose style env file', () => {
    expect(asObject(COMPOSE_ENV)).toEqual(dotenvParse(COMPOSE_ENV))
    expect(asObject(COMPOSE_ENV)).toMatchObject({ POSTGRES_PASSWORD: 'ch4ng3-me!', EMPTY: '', SPACED: 'around equals' })
  })

  test('values with quotes and #, shell export lines', () => {
    const parsed = asObject(QUOTES_AND_HASHES)
    expect(parsed).toEqual(dotenvParse(QUOTES_AND_HASHES))
    expect(parsed).toMatchObject({
      PASSWORD: "p#ss'word",
      TOKEN: 'abc#def',
      BACKTICK: `it's "quoted" #1`,
      UNQUOTED: 'value',
      SHELL_STYLE: 'exported value',
      SPACED_EXPORT: 'yes',
    })
  })

  test('multi-line PEM keys: quoted over several lines, or with \\n escapes', () => {
    const multiLine = `PRIVATE_KEY="${PEM}"\nNEXT=1\n`
    const escaped = `PRIVATE_KEY="${PEM.replace(/\n/g, '\\n')}"\r\nNEXT=1\r\n`
    const single = `PRIVATE_KEY='${PEM}'\n`
    for (const text of [multiLine, escaped, single]) {
      expect(asObject(text).PRIVATE_KEY).toBe(PEM)
      expect(asObject(text)).toEqual(dotenvParse(text))
    }
  })

  test('a repeated key keeps its last value; invalid characters in names become _', () => {
    expect(parseConfig('A=1\nB=2\nA=3').keys).toEqual([
      { name: 'A', value: '3' },
      { name: 'B', value: '2' },
    ])
    expect(parseConfig('my.key=1\nsome-key=2').keys.map((k) => k.name)).toEqual(['my_key', 'some_key'])
  })

  test('nothing recognisable gives no keys', () => {
    for (const text of ['', '   \n\n', '# only a comment', 'just some words', '{"not": ', '[1, 2, 3]']) {
      expect(parseConfig(text).keys).toEqual([])
    }
  })
})

describe('parseConfig: JSON and YAML', () => {
  test('a nested JSON config: keys joined with _, upper-cased; scalars as text', () => {
    const text = JSON.stringify({
      database: { url: 'postgres://u:p@localhost/db', pool: { max: 10 } },
      stripe: { secret_key: 'sk_live_x', 'webhook-secret': 'whsec_y' },
      features: { beta: true, regions: ['eu', 'us'] },
      openaiApiKey: 'sk-abc',
      nothing: null,
    })
    const { format, keys } = parseConfig(text)
    expect(format).toBe('json')
    expect(Object.fromEntries(keys.map((k) => [k.name, k.value]))).toEqual({
      DATABASE_URL: 'postgres://u:p@localhost/db',
      DATABASE_POOL_MAX: '10',
      STRIPE_SECRET_KEY: 'sk_live_x',
      STRIPE_WEBHOOK_SECRET: 'whsec_y',
      FEATURES_BETA: 'true',
      FEATURES_REGIONS_0: 'eu',
      FEATURES_REGIONS_1: 'us',
      OPENAIAPIKEY: 'sk-abc',
      NOTHING: '',
    })
  })

  test('YAML key: value lines, nesting, quotes, comments and block scalars', () => {
    const text = `# settings
OPENAI_API_KEY: sk-yaml-1
password: "quoted # not a comment"   # a comment
single: 'it''s'
plain: value # trailing comment
database:
  host: db.internal
  url: "postgres://u:p@db/app"
cert: |
${PEM.split('\n')
  .map((l) => `  ${l}`)
  .join('\n')}
after: done
`
    const { format } = parseConfig(text)
    expect(format).toBe('yaml')
    expect(asObject(text)).toEqual({
      OPENAI_API_KEY: 'sk-yaml-1',
      password: 'quoted # not a comment',
      single: "it's",
      plain: 'value',
      DATABASE_HOST: 'db.internal',
      DATABASE_URL: 'postgres://u:p@db/app',
      cert: `${PEM}\n`,
      after: 'done',
    })
  })
})

describe('classifyKeys (built-in)', () => {
  const classify = (names: string[]) => classifyKeys(names.map((name) => ({ name })))

  test('a shared service prefix makes a group with fields; known services carry their icon', () => {
    const keys = classify(['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'OPENAI_API_KEY', 'PORT'])
    expect(keys).toEqual([
      { name: 'AWS_ACCESS_KEY_ID', categoryName: 'AWS', keyType: 'group', envVarName: 'AWS_ACCESS_KEY_ID', field: 'AWS_ACCESS_KEY_ID' },
      { name: 'AWS_SECRET_ACCESS_KEY', categoryName: 'AWS', keyType: 'group', envVarName: 'AWS_SECRET_ACCESS_KEY', field: 'AWS_SECRET_ACCESS_KEY' },
      { name: 'OPENAI_API_KEY', categoryName: 'OpenAI', keyType: 'simple', envVarName: 'OPENAI_API_KEY' },
      { name: 'PORT', categoryName: 'Variables', keyType: 'group', envVarName: 'PORT', field: 'PORT' },
    ])
  })

  test('the services of a Next.js app', () => {
    const keys = classify(Object.keys(dotenvParse(NEXT_ENV_LOCAL)))
    const by = Object.fromEntries(keys.map((k) => [k.name, k]))
    expect(by.NEXT_PUBLIC_SUPABASE_URL).toMatchObject({ categoryName: 'Supabase', keyType: 'group', icon: 'supabase' })
    expect(by.SUPABASE_SERVICE_ROLE_KEY).toMatchObject({ categoryName: 'Supabase', keyType: 'group' })
    expect(by.OPENAI_API_KEY).toMatchObject({ categoryName: 'OpenAI', keyType: 'simple' })
    expect(by.RESEND_API_KEY).toMatchObject({ categoryName: 'Resend', keyType: 'simple', icon: 'resend' })
    expect(by.STRIPE_SECRET_KEY).toMatchObject({ categoryName: 'Stripe', keyType: 'group', field: 'STRIPE_SECRET_KEY', icon: 'stripe' })
    expect(by.DATABASE_URL).toMatchObject({ categoryName: 'Postgres', keyType: 'simple', icon: 'postgresql' })
    expect(by.NEXTAUTH_SECRET).toMatchObject({ categoryName: 'NextAuth', keyType: 'group' })
  })

  test('common services by name', () => {
    const cases: [string, string, string | undefined][] = [
      ['ANTHROPIC_API_KEY', 'Anthropic', 'anthropic'],
      ['GITHUB_TOKEN', 'GitHub', 'github'],
      ['REDIS_URL', 'Redis', 'redis'],
      ['TWILIO_AUTH_TOKEN', 'Twilio', undefined],
      ['SENDGRID_API_KEY', 'SendGrid', undefined],
      ['SENTRY_DSN', 'Sentry', 'sentry'],
      ['CLOUDFLARE_API_TOKEN', 'Cloudflare', 'cloudflare'],
      ['VERCEL_TOKEN', 'Vercel', 'vercel'],
      ['GOOGLE_CLIENT_ID', 'Google', 'google'],
      ['SLACK_BOT_TOKEN', 'Slack', undefined],
      ['DISCORD_TOKEN', 'Discord', 'discord'],
      ['MAILGUN_API_KEY', 'Mailgun', 'mailgun'],
      ['ALGOLIA_APP_ID', 'Algolia', 'algolia'],
      ['FIREBASE_API_KEY', 'Firebase', 'firebase'],
      ['VITE_FIREBASE_PROJECT_ID', 'Firebase', 'firebase'],
    ]
    for (const [name, categoryName, icon] of cases) {
      // Brands without an icon in Simple Icons 16 get none.
      expect(classify([name])[0]).toEqual({ name, categoryName, keyType: 'simple', envVarName: name, ...(icon ? { icon } : {}) })
    }
  })

  test('unknown names sharing a first word group together', () => {
    const keys = classifyKeys([{ name: 'JWT_SECRET' }, { name: 'JWT_ISSUER' }, { name: 'CACHE_URL' }, { name: 'NODE_ENV' }, { name: 'NODE_OPTIONS' }])
    expect(keys.map((k) => [k.categoryName, k.keyType])).toEqual([
      ['JWT', 'group'],
      ['JWT', 'group'],
      // The rest are plain variables: one group for all of them (issue 32), not a category each.
      ['Variables', 'group'],
      ['Variables', 'group'],
      ['Variables', 'group'],
    ])
  })
})

describe('pickEntries (built-in extract)', () => {
  const entry = (
    id: string,
    name: string,
    category: string,
    envVarName: string | null,
    environment: EntryMetadata['environment'],
    fields: string[] = [],
  ): EntryMetadata => ({
    id,
    name,
    category,
    keyType: envVarName ? 'simple' : 'group',
    envVarName,
    fields,
    environment,
  })
  const entries = [
    entry('blog-openai-prod', 'blog', 'OpenAI', 'OPENAI_API_KEY', 'production'),
    entry('blog-openai-dev', 'blog', 'OpenAI', 'OPENAI_API_KEY', 'development'),
    entry('shop-openai-prod', 'shop', 'OpenAI', 'OPENAI_API_KEY', 'production'),
    entry('shop-resend', 'shop', 'Resend', 'RESEND_API_KEY', null),
    entry('shop-aws', 'shop', 'Amazon', null, 'production', ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']),
    entry('shop-stripe-staging', 'shop', 'Payments', 'STRIPE_SECRET_KEY', 'staging'),
  ]

  test('services, project names and the environment narrow the choice', () => {
    expect(pickEntries('a Next.js blog using OpenAI and Resend, production', entries)).toEqual(['blog-openai-prod', 'shop-resend'])
    expect(pickEntries('the shop on staging with stripe', entries)).toEqual(['shop-stripe-staging'])
    expect(pickEntries('the shop', entries)).toEqual(['shop-openai-prod', 'shop-resend', 'shop-aws', 'shop-stripe-staging'])
    expect(pickEntries('aws in production', entries)).toEqual(['shop-aws'])
    expect(pickEntries('everything for production', entries)).toEqual(['blog-openai-prod', 'shop-openai-prod', 'shop-resend', 'shop-aws'])
    expect(pickEntries('nothing that matches', entries)).toEqual([])
  })
})
